"""HTTP/1.1 on a raw socket: requests no well-behaved client would send.

httpx refuses to send a 20 MB header, a request line of 20 KB or a body that lies about its
length, and it cannot trickle bytes; an attacker does all of that. :func:`exchange` sends a
request head and body chunks (optionally paced), then reads what the server answered until it
closes the connection, tolerating the server closing first: what matters to the tests is the
answer that arrived and when.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Answer:
    """What came back: the status (None if the connection closed without an answer), the
    headers, the body, and whether sending was cut short by the server."""

    status: int | None
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    send_cut: bool = False
    elapsed_s: float = 0.0

    def json(self) -> Any:
        return json.loads(self.body)


def head(method: str, target: str, headers: Iterable[tuple[str, str]] = (),
         host: str = "127.0.0.1") -> bytes:
    lines = [f"{method} {target} HTTP/1.1", f"Host: {host}",
             *(f"{k}: {v}" for k, v in headers)]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def chunked(data: bytes, size: int = 65536) -> Iterable[bytes]:
    """``data`` in Transfer-Encoding: chunked framing."""
    for start in range(0, len(data), size):
        piece = data[start:start + size]
        yield f"{len(piece):x}\r\n".encode() + piece + b"\r\n"
    yield b"0\r\n\r\n"


def _parse(raw: bytes) -> tuple[int | None, dict[str, str], bytes]:
    header_end = raw.find(b"\r\n\r\n")
    if header_end < 0:
        return None, {}, b""
    lines = raw[:header_end].decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ")[1])
    headers = {k.strip().lower(): v.strip()
               for k, _, v in (line.partition(":") for line in lines[1:])}
    return status, headers, raw[header_end + 4:]


def _read_until_close(sock: socket.socket, received: bytearray, started: float,
                      timeout_s: float) -> None:
    """Append what the server sends to ``received`` until it closes (or the time is up)."""
    sock.settimeout(max(0.1, timeout_s - (time.monotonic() - started)))
    try:
        while time.monotonic() - started < timeout_s:
            data = sock.recv(65536)
            if not data:
                break
            received += data
    except (ConnectionResetError, TimeoutError):
        pass


def exchange(port: int, request_head: bytes, body: Iterable[bytes] = (), *,
             pace_s: float = 0.0, timeout_s: float = 30.0) -> Answer:
    """Send ``request_head`` then each piece of ``body`` (``pace_s`` apart), read the
    answer until the server closes (or ``timeout_s``)."""
    started = time.monotonic()
    cut = False
    with socket.create_connection(("127.0.0.1", port), timeout=timeout_s) as sock:
        try:
            sock.sendall(request_head)
            for piece in body:
                if pace_s:
                    time.sleep(pace_s)
                sock.sendall(piece)
        except (BrokenPipeError, ConnectionResetError):
            cut = True
        received = bytearray()
        _read_until_close(sock, received, started, timeout_s)
    status, headers, content = _parse(bytes(received))
    return Answer(status, headers, content, cut, time.monotonic() - started)


def trickle(port: int, pieces: Iterable[bytes], pace_s: float, *,
            timeout_s: float = 30.0) -> Answer:
    """Send ``pieces`` one by one, ``pace_s`` apart, and stop as soon as the server answers
    or closes (a slow client's view)."""
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=timeout_s) as sock:
        received = bytearray()
        for piece in pieces:
            try:
                sock.sendall(piece)
            except (BrokenPipeError, ConnectionResetError):
                break
            sock.settimeout(pace_s)
            try:
                data = sock.recv(65536)
            except TimeoutError:
                continue
            except ConnectionResetError:
                break
            received += data
            break
        _read_until_close(sock, received, started, timeout_s)
    status, headers, content = _parse(bytes(received))
    return Answer(status, headers, content, False, time.monotonic() - started)
