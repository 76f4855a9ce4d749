"""Offsets a sink task asks for in open() (``SinkTaskContext.offset``) apply before anything
is read, as in Kafka: the rebalance callback assigns the partitions at those offsets
(librdkafka cannot seek a partition before its assignment is applied), incrementally under
an incremental rebalance protocol."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from confluent_kafka import TopicPartition as KafkaTopicPartition

from worker.api import SinkRecord, SinkTask, TopicPartition
from worker.builtin.converters.string_bytes import StringConverter
from worker.runtime.chain import TransformationChain
from worker.runtime.sink_task import WorkerSinkTask
from worker.storage.base import State, TargetState, TaskId


class _Status:
    def task(self, _task: TaskId, _state: State, _error: BaseException | None = None) -> None:
        pass


class RewindingSink(SinkTask):
    """Keeps its own offsets: resumes partition 0 at 42 and leaves the others alone."""

    def start(self, props: Mapping[str, str]) -> None:
        pass

    def open(self, partitions: list[TopicPartition]) -> None:
        self.context.offset({tp: 42 for tp in partitions if tp.partition == 0})

    def put(self, records: list[SinkRecord]) -> None:
        pass

    def stop(self) -> None:
        pass


class AssigningConsumer:
    def __init__(self) -> None:
        self.calls: list[tuple[str, list[tuple[str, int, int]]]] = []

    def _record(self, name: str, partitions: list[KafkaTopicPartition]) -> None:
        self.calls.append((name, [(p.topic, p.partition, p.offset) for p in partitions]))

    def assign(self, partitions: list[KafkaTopicPartition]) -> None:
        self._record("assign", partitions)

    def incremental_assign(self, partitions: list[KafkaTopicPartition]) -> None:
        self._record("incremental_assign", partitions)

    def pause(self, partitions: list[KafkaTopicPartition]) -> None:
        self._record("pause", partitions)

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"unexpected consumer call {name}")


def _task(consumer_config: dict[str, str]) -> WorkerSinkTask:
    task = WorkerSinkTask(
        TaskId("c", 0), RewindingSink(), {}, TargetState.STARTED,
        _Status(),  # type: ignore[arg-type]
        consumer_config=consumer_config, topics=["t"], topics_regex="",
        key_converter=StringConverter(), value_converter=StringConverter(),
        chain=TransformationChain([]), offset_flush_interval_ms=60_000)
    task.sink_task.initialize(task._context)
    return task


@pytest.mark.parametrize(("config", "call"), [
    ({}, "assign"),
    ({"partition.assignment.strategy": "range,roundrobin"}, "assign"),
    ({"partition.assignment.strategy": "cooperative-sticky"}, "incremental_assign"),
    ({"group.protocol": "consumer"}, "incremental_assign"),
])
def test_offsets_asked_for_in_open_are_the_assigned_positions(config: dict[str, str],
                                                             call: str) -> None:
    task, consumer = _task(config), AssigningConsumer()
    task._on_assign(consumer,  # type: ignore[arg-type]
                    [KafkaTopicPartition("t", 0), KafkaTopicPartition("t", 1)])
    assert consumer.calls == [(call, [("t", 0, 42), ("t", 1, -1001)])]  # -1001: committed
    assert task._context.rewinds == {}  # applied, not sought again after the first read
    assert task._current == {TopicPartition("t", 0): 42}


def test_without_offsets_from_open_librdkafka_assigns_as_usual() -> None:
    task, consumer = _task({}), AssigningConsumer()
    task._on_assign(consumer, [KafkaTopicPartition("t", 1)])  # type: ignore[arg-type]
    assert consumer.calls == []  # confluent-kafka assigns after the callback
    assert task.assignment == {TopicPartition("t", 1)}
