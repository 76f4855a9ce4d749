"""Idle sink tasks park their real consumers with one shared poller (issue #19): their own
threads sleep, yet a record produced later reaches put() on the task's thread, a partition
assignment made while parked opens the partition, and pause, resume and stop take effect at
once, whatever the commit interval."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.support import wait_until
from worker.api import SinkRecord, SinkTask, TopicPartition
from worker.builtin.converters.string_bytes import StringConverter
from worker.runtime import sink_task as sink_task_module
from worker.runtime.chain import TransformationChain
from worker.runtime.idle_poller import IdlePoller
from worker.runtime.sink_task import WorkerSinkTask
from worker.storage.base import State, TargetState, TaskId

pytestmark = pytest.mark.integration


class _Status:
    def __init__(self) -> None:
        self.states: list[State] = []

    def task(self, _task: TaskId, state: State, _error: BaseException | None = None) -> None:
        self.states.append(state)


class RecordingSink(SinkTask):
    def __init__(self) -> None:
        self.values: list[str] = []
        self.threads: dict[str, set[str]] = {"put": set(), "open": set()}
        self.opened: list[TopicPartition] = []

    def start(self, props: Mapping[str, str]) -> None:
        pass

    def open(self, partitions: list[TopicPartition]) -> None:
        self.opened.extend(partitions)
        self.threads["open"].add(threading.current_thread().name)
        self.context.offset({tp: 1 for tp in partitions})  # skip the first record

    def put(self, records: list[SinkRecord]) -> None:
        self.values.extend(str(r.value) for r in records)
        self.threads["put"].add(threading.current_thread().name)

    def stop(self) -> None:
        pass


def _sink(bootstrap: str, topic: str, poller: IdlePoller, name: str
          ) -> tuple[WorkerSinkTask, RecordingSink, _Status]:
    sink, status = RecordingSink(), _Status()
    task = WorkerSinkTask(
        TaskId(name, 0), sink, {}, TargetState.STARTED, status,  # type: ignore[arg-type]
        # A first group join on the test broker waits half the session timeout.
        consumer_config={"bootstrap.servers": bootstrap, "group.id": f"connect-{name}",
                         "enable.auto.commit": "false", "auto.offset.reset": "earliest",
                         "session.timeout.ms": "6000"},
        topics=[topic], topics_regex="", key_converter=StringConverter(),
        value_converter=StringConverter(), chain=TransformationChain([]),
        offset_flush_interval_ms=60_000, idle_poller=poller)
    return task, sink, status


def _reads(sink: RecordingSink, count: int) -> Callable[[], bool]:
    return lambda: len(sink.values) >= count


def test_parked_sinks_read_late_records_and_obey_controls_at_once(
        kafka_bootstrap: str, kafka_admin: AdminClient, unique_topic: Callable[..., str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Park after 1 s without an assignment too (10 s by default), so that the group join
    # (about 3 s) completes while parked: open() then runs inside the poller's consume().
    monkeypatch.setattr(sink_task_module, "PARK_UNASSIGNED_AFTER_EMPTY_POLLS",
                        sink_task_module.PARK_AFTER_EMPTY_POLLS)
    poller = IdlePoller()
    topics = [unique_topic("idle-sink") for _ in range(3)]
    for future in kafka_admin.create_topics([NewTopic(t, 1, 1) for t in topics]).values():
        future.result(30)
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    for topic in topics:
        for value in (b"early-0", b"early-1"):
            producer.produce(topic, value)
    assert producer.flush(30) == 0
    sinks = [_sink(kafka_bootstrap, topic, poller, f"{topic}-sink") for topic in topics]
    for task, _, _ in sinks:
        task.start()
    try:
        # The rewind open() asked for applies before anything is read, as unparked.
        for i, (_, sink, _) in enumerate(sinks):
            wait_until(_reads(sink, 1), timeout=60, interval=0.05,
                       message=f"sink {i} reads from the offset its open() chose")
            assert sink.values == ["early-1"]
        wait_until(lambda: poller.parked == 3, timeout=60, interval=0.05,
                   message=lambda: f"3 idle sinks parked; {poller.parked} are")
        for i, topic in enumerate(topics):
            producer.produce(topic, f"late-{i}".encode())
        assert producer.flush(30) == 0
        for i, (task, sink, _) in enumerate(sinks):
            wait_until(_reads(sink, 2), timeout=60, interval=0.05,
                       message=f"sink {i} reads the record produced while it was parked")
            assert sink.values == ["early-1", f"late-{i}"]
            assert sink.threads["put"] == {task._thread.name}  # put() on the task's thread
            assert sink.opened == [TopicPartition(topics[i], 0)]
            # Parked after 1 s, assigned after about 3 s: open() ran inside the poller's
            # consume(), while the task's thread waited.
            assert sink.threads["open"] == {"sink-idle-poller"}
        wait_until(lambda: poller.parked == 3, timeout=30, interval=0.05,
                   message="idle again, the sinks park again")

        task, _, status = sinks[0]
        started = time.monotonic()
        task.transition_to(TargetState.PAUSED)
        wait_until(lambda: status.states[-1] is State.PAUSED, timeout=5, interval=0.01,
                   message="a pause reaches a parked sink")
        task.transition_to(TargetState.STARTED)
        wait_until(lambda: status.states[-1] is State.RUNNING, timeout=5, interval=0.01,
                   message="a resume reaches a parked sink")
        # The commit interval is a minute: the controls did not wait for it.
        assert time.monotonic() - started < 10
    finally:
        started = time.monotonic()
        for task, _, _ in sinks:
            task.stop()
        stopped = [task.await_stop(30) for task, _, _ in sinks]
    assert all(stopped)
    assert time.monotonic() - started < 30
    wait_until(lambda: not poller.running, timeout=10, interval=0.05,
               message="the poller's thread ends with the last parked sink")
