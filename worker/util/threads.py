"""Calling code that may hang (connector code) without letting it hang the caller."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import TypeVar

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
