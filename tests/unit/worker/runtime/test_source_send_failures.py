"""KIP-779 in WorkerSourceTask: with ``errors.tolerance=all`` a record the producer fails to
send for good, or refuses outright, is reported as a ``KAFKA_PRODUCE`` failure and skipped,
and its offset may be committed; with ``none`` the task fails and nothing after it is
committed. A stand-in replaces confluent_kafka.Producer (delivery reports are called by
hand, as librdkafka would from ``poll()``)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, Message

from worker.api import SourceRecord, SourceTask
from worker.api.exceptions import ConnectException
from worker.builtin.converters.string_bytes import StringConverter
from worker.clients import factories as kafka_clients
from worker.config.worker_config import WorkerConfig
from worker.runtime.chain import TransformationChain
from worker.runtime.errors.handling import ErrorHandlingConfig
from worker.runtime.source_task import WorkerSourceTask
from worker.storage.base import State, TargetState, TaskId
from worker.storage.memory import MemoryOffsetBackingStore

TASK = TaskId("c", 0)
PARTITION = {"file": "f"}
TOO_LARGE = "x" * 64


class NoStatus:
    def task(self, _task: TaskId, _state: State, _error: BaseException | None = None) -> None:
        pass


def delivered(topic: str) -> Message:
    """The message a delivery report carries: where the record was written."""
    return Message(topic=topic, partition=0, offset=0, timestamp=(1, 0))


class RefusingProducer:
    """Queues every message with its callback; refuses values of ``TOO_LARGE``'s size the way
    librdkafka's produce() does (a KafkaException with MSG_SIZE_TOO_LARGE)."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, Any, Any]] = []

    def produce(self, topic: str, value: Any = None, key: Any = None, partition: int = -1,
                on_delivery: Any = None, callback: Any = None, timestamp: int = 0,
                headers: Any = None) -> None:
        if value == TOO_LARGE.encode():
            raise KafkaException(KafkaError(KafkaError.MSG_SIZE_TOO_LARGE,
                                            "Message size too large"))
        self.sent.append((topic, value, on_delivery or callback))

    def produce_batch(self, topic: str, messages: list[dict[str, Any]], partition: int = -1,
                      on_delivery: Any = None) -> int:
        for m in messages:
            self.sent.append((topic, m["value"], on_delivery))
        return len(messages)

    def poll(self, _timeout: float = 0) -> int:
        return 0

    def flush(self, _timeout: float = 0) -> int:
        return 0

    def __len__(self) -> int:
        return 0

    def deliver(self, failing: set[bytes]) -> None:
        """Call every callback: the values in ``failing`` fail for good."""
        for topic, value, callback in self.sent:
            err = KafkaError(KafkaError.INVALID_RECORD, "Broker: Invalid record") \
                if value in failing else None
            callback(err, delivered(topic))


class Committing(SourceTask):
    def __init__(self) -> None:
        self.committed: list[tuple[Any, Any]] = []

    def start(self, props: Mapping[str, str]) -> None:
        pass

    def poll(self) -> list[SourceRecord] | None:
        return None

    def stop(self) -> None:
        pass

    def commit_record(self, record: SourceRecord, metadata: Any) -> None:
        self.committed.append(((record.source_offset or {})["position"], metadata))


def make_task(tolerance: str, source: SourceTask | None = None,
              store: MemoryOffsetBackingStore | None = None
              ) -> tuple[WorkerSourceTask, RefusingProducer]:
    errors = ErrorHandlingConfig.from_connector_config(
        {"errors.tolerance": tolerance, "errors.log.enable": "true"}, sink=False)
    task = WorkerSourceTask(
        TASK, source or Committing(), {}, TargetState.STARTED,
        NoStatus(),  # type: ignore[arg-type]
        producer_config={}, key_converter=StringConverter(), value_converter=StringConverter(),
        chain=TransformationChain([]), offset_store=store or MemoryOffsetBackingStore(),
        offset_flush_interval_ms=1000, offset_flush_timeout_ms=1000, error_config=errors)
    producer = RefusingProducer()
    task._producer = producer  # type: ignore[assignment]
    return task, producer


def record(position: int, value: str | None = None) -> SourceRecord:
    return SourceRecord(PARTITION, {"position": position}, "t", None, None, None, None,
                        value if value is not None else f"line-{position}", None)


def test_tolerance_all_turns_off_the_gapless_guarantee_and_one_report_per_batch() -> None:
    worker = WorkerConfig({"bootstrap.servers": "127.0.0.1:9"})
    strict = kafka_clients.producer_config(worker, {}, "p")
    tolerant = kafka_clients.producer_config(worker, {"errors.tolerance": "all"}, "p")
    assert strict["enable.gapless.guarantee"] == "true"
    assert kafka_clients.acknowledges_in_order(strict)
    assert "enable.gapless.guarantee" not in tolerant
    assert not kafka_clients.acknowledges_in_order(tolerant)
    # A user's explicit choice still wins.
    kept = kafka_clients.producer_config(
        worker, {"errors.tolerance": "all",
                 "producer.override.enable.gapless.guarantee": "false"}, "p")
    assert kept["enable.gapless.guarantee"] == "false"


def test_tolerated_delivery_failure_is_reported_skipped_and_committed_past(
        caplog: pytest.LogCaptureFixture) -> None:
    store = MemoryOffsetBackingStore()
    source = Committing()
    task, producer = make_task("all", source, store)
    task._send([record(i) for i in range(1, 5)])
    assert all(callback is not None for _, _, callback in producer.sent)  # one per record
    with caplog.at_level(logging.ERROR):
        producer.deliver({b"line-2"})
    assert task._submitted.error is None  # the task goes on
    assert task.commit_offsets()
    assert store.get("c", [PARTITION]) == {'{"file":"f"}': {"position": 4}}
    # commit_record: the failed record with no metadata, the others with theirs.
    assert [(pos, meta is None) for pos, meta in source.committed] == [
        (1, False), (2, True), (3, False), (4, False)]
    errors = task.metrics.errors
    assert (errors.record_failures, errors.errors_logged) == (1, 1)
    assert errors.last_error_timestamp_ms > 0
    reported = [r.getMessage() for r in caplog.records
                if "Executing stage 'KAFKA_PRODUCE'" in r.getMessage()]
    assert reported == ["Error encountered in task c-0. Executing stage 'KAFKA_PRODUCE' with "
                        "class 'worker.runtime.source_task.WorkerSourceTask'.\nCaused by "
                        "cimpl.KafkaException (message not logged: "
                        "errors.log.include.messages=false)\n"]
    assert task.metrics.write_total == 3  # the failed record is not counted as written


def test_tolerated_refusal_skips_the_record_and_sends_the_rest() -> None:
    store = MemoryOffsetBackingStore()
    task, producer = make_task("all", store=store)
    task._send([record(1), record(2, TOO_LARGE), record(3)])
    assert [value for _, value, _ in producer.sent] == [b"line-1", b"line-3"]
    producer.deliver(set())
    assert task.commit_offsets()
    assert store.get("c", [PARTITION]) == {'{"file":"f"}': {"position": 3}}
    assert task.metrics.errors.record_failures == 1


def test_without_tolerance_a_delivery_failure_fails_the_task_and_blocks_commits() -> None:
    store = MemoryOffsetBackingStore()
    task, producer = make_task("none", store=store)
    task._send([record(1), record(2)])
    task._send([record(3)])
    # Default settings: one report per partition and batch would do, but the stand-in has
    # no sticky partitioner, so each record carries its own; the second batch fails.
    producer.sent[0][2](None, delivered("t"))
    producer.sent[1][2](None, delivered("t"))
    producer.sent[2][2](KafkaError(KafkaError.INVALID_RECORD), delivered("t"))
    assert task._submitted.error is not None  # execute() raises on this
    assert task.commit_offsets()
    assert store.get("c", [PARTITION]) == {'{"file":"f"}': {"position": 2}}


def test_without_tolerance_a_refusal_fails_the_task() -> None:
    task, _ = make_task("none")
    with pytest.raises(ConnectException, match="Failed to send a record to t"):
        task._send([record(1), record(2, TOO_LARGE)])
