"""Process helpers shared by the embedded broker, the worker harness, the demo and the
test suite: a free loopback port, the tail of a log file, and stopping a subprocess for
sure (SIGCONT, SIGTERM, then SIGKILL, each bounded in time)."""

from __future__ import annotations

import logging
import os
import signal
import socket
import subprocess
from collections import deque

__all__ = ["free_port", "log_tail", "terminate_process"]

log = logging.getLogger(__name__)


def free_port(host: str = "127.0.0.1") -> int:
    """Return a TCP port on ``host`` that is free right now.

    The port is released before returning, so another process may take it before the
    caller binds it; callers that spawn a server should retry on "address in use".
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def log_tail(path: str | os.PathLike[str], lines: int = 40, *, start: int = 0) -> str:
    """Return the last ``lines`` lines of the text file at ``path`` (from byte ``start``).

    Missing or unreadable files give an empty string: this is used to build error
    messages and must never raise itself.
    """
    try:
        with open(path, "rb") as fh:
            fh.seek(start)
            tail: deque[bytes] = deque(fh, maxlen=lines)
    except OSError:
        return ""
    return b"".join(tail).decode("utf-8", errors="replace")


def terminate_process(
    proc: subprocess.Popen[bytes], timeout: float = 10.0, kill_timeout: float = 10.0
) -> int | None:
    """Stop ``proc``: SIGCONT (in case it is paused), SIGTERM, wait, then SIGKILL.

    Waits at most ``timeout`` seconds for a graceful exit (``timeout <= 0`` sends SIGKILL
    straight away) and then at most ``kill_timeout`` seconds after SIGKILL. Returns the
    exit code (``None`` only if even SIGKILL did not reap it: the process is stuck in
    the kernel).
    """
    if proc.poll() is not None:
        return proc.returncode
    if timeout > 0:
        try:
            # A SIGSTOPped process does not act on SIGTERM until continued.
            proc.send_signal(signal.SIGCONT)
            proc.terminate()
        except ProcessLookupError:
            pass
        try:
            return proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            log.info("process %s still running %.1fs after SIGTERM; killing it", proc.pid, timeout)
    try:
        proc.kill()
    except ProcessLookupError:
        pass
    try:
        return proc.wait(timeout=kill_timeout)
    except subprocess.TimeoutExpired:
        log.error("process %s survived SIGKILL for %.1fs", proc.pid, kill_timeout)
        return None
