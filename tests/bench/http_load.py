"""A small HTTP/1.1 load generator: N keep-alive connections issuing GETs back to back.

Run as its own process so it never shares the server's GIL::

    python tests/bench/http_load.py http://127.0.0.1:8083/connectors/x/status \
        --concurrency 16 --duration 10

Prints one JSON line: requests, errors, seconds, req_per_s, p50_ms, p99_ms, max_ms.
Raw asyncio streams rather than an HTTP client library: the client must cost far less
than the server it measures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from urllib.parse import urlsplit


async def _read_response(reader: asyncio.StreamReader) -> int:
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    status = int(lines[0].split(b" ", 2)[1])
    length = 0
    chunked = False
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        name = name.strip().lower()
        if name == b"content-length":
            length = int(value.strip())
        elif name == b"transfer-encoding" and b"chunked" in value.lower():
            chunked = True
    if chunked:
        while True:
            size = int((await reader.readuntil(b"\r\n")).strip(), 16)
            await reader.readexactly(size + 2)
            if size == 0:
                break
    elif length:
        await reader.readexactly(length)
    return status


async def _client(host: str, port: int, request: bytes, deadline: float,
                  latencies: list[float], errors: list[int]) -> None:
    reader, writer = await asyncio.open_connection(host, port)
    try:
        while time.perf_counter() < deadline:
            started = time.perf_counter()
            writer.write(request)
            status = await _read_response(reader)
            latencies.append(time.perf_counter() - started)
            if status != 200:
                errors.append(status)
    finally:
        writer.close()


async def run(url: str, concurrency: int, duration: float, warmup: float) -> dict[str, float]:
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    path = parts.path + (f"?{parts.query}" if parts.query else "")
    request = (f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\n"
               "Accept: application/json\r\n\r\n").encode()
    if warmup > 0:
        await asyncio.gather(*(_client(host, port, request, time.perf_counter() + warmup,
                                       [], []) for _ in range(concurrency)))
    latencies: list[float] = []
    errors: list[int] = []
    started = time.perf_counter()
    deadline = started + duration
    await asyncio.gather(*(_client(host, port, request, deadline, latencies, errors)
                           for _ in range(concurrency)))
    elapsed = time.perf_counter() - started
    ordered = sorted(latencies)
    return {
        "requests": len(latencies), "errors": len(errors), "seconds": elapsed,
        "req_per_s": len(latencies) / elapsed,
        "p50_ms": statistics.median(ordered) * 1000,
        "p99_ms": ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000,
        "max_ms": ordered[-1] * 1000,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--warmup", type=float, default=1.0)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(run(args.url, args.concurrency, args.duration, args.warmup))))


if __name__ == "__main__":
    main()
