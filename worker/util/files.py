"""Reading a file named by configuration without waiting on it or reading it unbounded.

A path in a config (a ``${file:...}`` placeholder, a keystore location) may name a FIFO, a
device or ``/dev/zero``: an ordinary ``open`` of a FIFO waits for a writer forever, and a
read of ``/dev/zero`` never ends. :func:`open_regular` opens without waiting and checks the
open descriptor (no gap between the check and the read); :func:`read_at_most` reads a
bounded amount; :func:`read_regular_file` does both.
"""

from __future__ import annotations

import os
import stat

# Never wait for a writer (FIFO), a carrier (serial line) or become a controlling terminal.
_OPEN_FLAGS = (os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
               | getattr(os, "O_CLOEXEC", 0))
_NO_FOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CHUNK = 64 * 1024


class NotRegularFileError(OSError):
    """The path names something other than a regular file (a FIFO, a device, ...)."""


class FileTooLargeError(OSError):
    """The file is larger than the limit it was read with."""


def open_regular(target: str, no_follow: bool) -> int | None:
    """A descriptor on ``target`` if it is a regular file (blocking again), else None;
    never waits for a FIFO's writer or a device. Raises OSError as ``os.open``."""
    fd = os.open(target, _OPEN_FLAGS | (_NO_FOLLOW if no_follow else 0))
    try:
        regular = stat.S_ISREG(os.fstat(fd).st_mode)
        if regular:
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    if not regular:
        os.close(fd)
        return None
    return fd


def read_at_most(fd: int, limit: int) -> bytes | None:
    """The whole content of ``fd``, or None when it is over ``limit`` bytes (no more than
    ``limit`` + 1 are read: a file growing, or a size its stat does not show)."""
    if os.fstat(fd).st_size > limit:
        return None
    chunks: list[bytes] = []
    total = 0
    while total <= limit:
        chunk = os.read(fd, min(_CHUNK, limit + 1 - total))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        total += len(chunk)
    return None


def read_regular_file(path: str, limit: int) -> bytes:
    """The content of the regular file ``path``, at most ``limit`` bytes. Raises
    NotRegularFileError, FileTooLargeError, or OSError as ``os.open`` does."""
    fd = open_regular(path, no_follow=False)
    if fd is None:
        raise NotRegularFileError(path)
    try:
        data = read_at_most(fd, limit)
    finally:
        os.close(fd)
    if data is None:
        raise FileTooLargeError(path)
    return data
