"""Calling code that may hang (connector code) without letting it hang the caller; naming
threads for the operating system."""

from __future__ import annotations

import ctypes
import functools
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import TypeVar, cast

T = TypeVar("T")


def call_with_timeout(fn: Callable[[], T], timeout_s: float, name: str) -> T:
    """Run ``fn`` on a daemon thread and wait at most ``timeout_s``.

    Raises TimeoutError if it does not finish; the thread is then abandoned. A daemon thread
    (not a ThreadPoolExecutor, whose threads are joined at exit) so that hung plugin code
    can never block interpreter shutdown.
    """
    future: Future[T] = Future()

    def run() -> None:
        try:
            future.set_result(fn())
        except BaseException as exc:  # handed to the caller through the future
            future.set_exception(exc)

    threading.Thread(target=run, name=name, daemon=True).start()
    return future.result(timeout_s)


_PR_SET_NAME = 15  # prctl(2)
_NATIVE_NAME_BYTES = 15  # the kernel keeps 16 bytes, the last one NUL


def name_native_thread(name: str) -> None:
    """Give the calling thread ``name`` (its first 15 bytes) as its operating-system name,
    which ``top -H``, ``ps -L`` and ``/proc/<pid>/task/<tid>/comm`` show (Python's thread
    names stay inside Python before 3.14). Linux only (``prctl(PR_SET_NAME)``); elsewhere,
    or if the call fails, nothing happens."""
    prctl = _prctl()
    if prctl is not None:
        prctl(_PR_SET_NAME, name.encode("utf-8", "replace")[:_NATIVE_NAME_BYTES], 0, 0, 0)


@functools.cache
def _prctl() -> Callable[..., int] | None:
    """libc's ``prctl``, looked up once (None off Linux or without it)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return cast("Callable[..., int]", ctypes.CDLL(None, use_errno=True).prctl)
    except (OSError, AttributeError):
        return None
