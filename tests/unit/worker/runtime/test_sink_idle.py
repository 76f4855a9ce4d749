"""An idle sink task's loop: Kafka's worker calls put() after each consumer poll, and its
poll waits until the next offset commit when nothing arrives; so an idle sink gets put([])
about once per offset.flush.interval.ms, however often its consumer wakes up."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from tests.support import wait_until
from worker.api import SinkRecord, SinkTask
from worker.builtin.converters.string_bytes import StringConverter
from worker.runtime.chain import TransformationChain
from worker.runtime.sink_task import WorkerSinkTask
from worker.storage.base import State, TargetState, TaskId


class _Status:
    def task(self, _task: TaskId, _state: State, _error: BaseException | None = None) -> None:
        pass


class IdleConsumer:
    """Nothing ever arrives; each consume() returns after a short wait (a 5 ms timeout, or
    at once when the task stops)."""

    def __init__(self, stopping: threading.Event) -> None:
        self.consumes = 0
        self._stopping = stopping

    def consume(self, _num: int, _timeout: float) -> list[Any]:
        self.consumes += 1
        self._stopping.wait(0.005)
        return []

    def commit(self, *args: Any, **kwargs: Any) -> None:
        pass


class CountingSink(SinkTask):
    def __init__(self) -> None:
        self.puts: list[int] = []

    def start(self, props: Mapping[str, str]) -> None:
        pass

    def put(self, records: list[SinkRecord]) -> None:
        self.puts.append(len(records))

    def stop(self) -> None:
        pass


def test_an_idle_sink_gets_put_once_per_commit_interval_not_per_wake() -> None:
    sink = CountingSink()
    task = WorkerSinkTask(
        TaskId("c", 0), sink, {}, TargetState.STARTED, _Status(),  # type: ignore[arg-type]
        consumer_config={}, topics=["t"], topics_regex="", key_converter=StringConverter(),
        value_converter=StringConverter(), chain=TransformationChain([]),
        offset_flush_interval_ms=200)
    consumer = IdleConsumer(task.stopping)
    task._consumer = consumer  # type: ignore[assignment]
    loop = threading.Thread(target=task.execute)
    loop.start()
    try:
        wait_until(lambda: len(sink.puts) >= 3, timeout=10, interval=0.05,
                   message=lambda: f"three put() calls; have {sink.puts}")
    finally:
        task.stopping.set()
        loop.join(5)
    assert not loop.is_alive()
    assert len(sink.puts) >= 3 and set(sink.puts) == {0}
    # Three commit intervals (~0.6 s) of 5 ms wakes: far more wakes than puts.
    assert consumer.consumes >= 10 * len(sink.puts), (consumer.consumes, sink.puts)
