"""The thread pool REST handlers run their blocking herder calls on.

A minimal ``concurrent.futures.Executor`` of daemon threads. Two reasons not to use what
the frameworks offer: FastAPI's per-request hop through anyio's ``to_thread`` costs more
than the status handler itself (it halved ``GET /connectors/{c}/status`` throughput), and
``ThreadPoolExecutor``'s threads are joined at interpreter exit, so a request stuck waiting
on the herder would hold up shutdown. Here a stuck thread is simply abandoned.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import Any

_STOP = object()


class DaemonThreadPool(Executor):
    def __init__(self, max_workers: int, name: str = "rest") -> None:
        self._tasks: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._threads = [threading.Thread(target=self._work, name=f"{name}-{n}", daemon=True)
                         for n in range(max_workers)]
        self._shutdown = False
        for thread in self._threads:
            thread.start()

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        if self._shutdown:
            raise RuntimeError("cannot schedule new work after shutdown")
        future: Future[Any] = Future()
        self._tasks.put((future, fn, args, kwargs))
        return future

    def _work(self) -> None:
        while True:
            item = self._tasks.get()
            if item is _STOP:
                return
            future, fn, args, kwargs = item
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(fn(*args, **kwargs))
            except BaseException as exc:  # handed to the awaiting request
                future.set_exception(exc)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self._shutdown = True
        if cancel_futures:
            while True:
                try:
                    item = self._tasks.get_nowait()
                except queue.Empty:
                    break
                if item is not _STOP:
                    item[0].cancel()
        for _ in self._threads:
            self._tasks.put(_STOP)
        if wait:
            for thread in self._threads:
                thread.join()
