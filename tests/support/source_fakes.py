"""Fakes for driving source tasks directly in unit tests: committed offsets, a task
context, and an Event that tells when a task starts waiting on it."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Mapping
from typing import Any

from worker.api import OffsetStorageReader, SourceTaskContext, partition_key


class FakeOffsetReader(OffsetStorageReader):
    def __init__(self, committed: Mapping[str, dict[str, Any]] | None = None) -> None:
        self.committed = dict(committed or {})

    def offsets(self, partitions: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
        keys = [partition_key(p) for p in partitions]
        return {k: self.committed[k] for k in keys if k in self.committed}


class FakeContext(SourceTaskContext):
    def __init__(self, reader: OffsetStorageReader) -> None:
        self._reader = reader

    @property
    def configs(self) -> dict[str, str]:
        return {}

    @property
    def offset_storage_reader(self) -> OffsetStorageReader:
        return self._reader


class WaitSpyEvent(threading.Event):
    """An Event that reports when someone starts waiting on it."""

    def __init__(self) -> None:
        super().__init__()
        self.waiting = threading.Event()

    def wait(self, timeout: float | None = None) -> bool:
        self.waiting.set()
        return super().wait(timeout)


def assert_stop_ends_waiting_poll(task: Any, deadline_s: float) -> None:
    """``task.poll()`` blocks on the task's ``_stopping`` Event; ``stop()`` from another
    thread must end it within ``deadline_s``, returning None."""
    spy = WaitSpyEvent()
    task._stopping = spy
    result: list[Any] = []
    poller = threading.Thread(target=lambda: result.append(task.poll()))
    started = time.monotonic()
    poller.start()
    assert spy.waiting.wait(deadline_s), "poll() never started waiting"
    task.stop()
    poller.join(deadline_s)
    assert not poller.is_alive()
    assert time.monotonic() - started < deadline_s
    assert result == [None]
