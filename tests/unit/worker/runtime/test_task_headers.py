"""Header conversion in the task loops: a source task writes each record's headers with its
header converter (SimpleHeaderConverter's format when none was set) and batches the records
without headers as before; a sink task reads consumed headers into typed ConnectHeaders,
touching nothing for messages without any."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from confluent_kafka import Message

from tests.support.messages import consumed
from worker.api import (
    ConnectHeaders,
    Header,
    Schema,
    SchemaAndValue,
    SchemaType,
    SinkRecord,
    SinkTask,
    SourceRecord,
    SourceTask,
)
from worker.api.connector import TopicPartition
from worker.api.data import STRING_SCHEMA
from worker.api.exceptions import ConnectException
from worker.api.header_converter import SimpleHeaderConverter
from worker.builtin.converters.json_converter import JsonConverter
from worker.builtin.converters.string_bytes import ByteArrayConverter, StringConverter
from worker.runtime.chain import TransformationChain
from worker.runtime.errors.handling import ErrorHandlingConfig
from worker.runtime.errors.sink import build_record
from worker.runtime.sink_task import WorkerSinkTask
from worker.runtime.source_task import WorkerSourceTask
from worker.storage.base import State, TargetState, TaskId
from worker.storage.memory import MemoryOffsetBackingStore

TOPIC = "orders"
INT8 = Schema(SchemaType.INT8)


class _Status:
    def task(self, _task: TaskId, _state: State, _error: BaseException | None = None) -> None:
        pass


class _Source(SourceTask):
    def start(self, props: Mapping[str, str]) -> None:
        pass

    def poll(self) -> list[SourceRecord] | None:
        return None

    def stop(self) -> None:
        pass


class _Sink(SinkTask):
    def start(self, props: Mapping[str, str]) -> None:
        pass

    def put(self, records: list[SinkRecord]) -> None:
        pass

    def stop(self) -> None:
        pass


class _Producer:
    """Stands in for confluent_kafka.Producer: what each call handed over."""

    def __init__(self) -> None:
        self.produced: list[tuple[Any, Any]] = []  # (value, headers) per produce()
        self.batched: list[Any] = []  # values per produce_batch()

    def produce(self, topic: str, value: Any = None, key: Any = None, partition: int = -1,
                on_delivery: Any = None, callback: Any = None, timestamp: int = 0,
                headers: Any = None) -> None:
        self.produced.append((value, headers))

    def produce_batch(self, topic: str, messages: list[dict[str, Any]], partition: int = -1,
                      on_delivery: Any = None) -> int:
        self.batched += [m["value"] for m in messages]
        return len(messages)

    def poll(self, _timeout: float = 0) -> int:
        return 0


def _message(offset: int, headers: list[tuple[str, bytes | None]] | None) -> Message:
    """A record consumed from orders-0 whose value is ``v<offset>``."""
    return consumed(b"v%d" % offset, topic=TOPIC, offset=offset, headers=headers,
                    timestamp=(1, 1000))


def source_task(errors: ErrorHandlingConfig | None = None
                ) -> tuple[WorkerSourceTask, _Producer]:
    task = WorkerSourceTask(
        TaskId("c", 0), _Source(), {}, TargetState.STARTED, _Status(),  # type: ignore[arg-type]
        producer_config={}, key_converter=StringConverter(),
        value_converter=StringConverter(), chain=TransformationChain([]),
        offset_store=MemoryOffsetBackingStore(), offset_flush_interval_ms=1000,
        offset_flush_timeout_ms=1000, error_config=errors)
    producer = _Producer()
    task._producer = producer  # type: ignore[assignment]
    return task, producer


def sink_task(errors: ErrorHandlingConfig | None = None) -> WorkerSinkTask:
    return WorkerSinkTask(
        TaskId("c", 0), _Sink(), {}, TargetState.STARTED, _Status(),  # type: ignore[arg-type]
        consumer_config={}, topics=[TOPIC], topics_regex="", key_converter=StringConverter(),
        value_converter=StringConverter(), chain=TransformationChain([]),
        offset_flush_interval_ms=1000, error_config=errors)


def test_a_source_task_writes_headers_with_its_header_converter() -> None:
    task, producer = source_task()
    headers = ConnectHeaders().add_int("n", 42).add_boolean("ok", True)
    records = [SourceRecord({"p": 1}, {"o": i}, TOPIC, value=f"r{i}",
                            headers=headers if i == 1 else None) for i in range(3)]
    task._send(records)
    # The headerless records are batched as before; the one with headers goes alone, its
    # headers written as SimpleHeaderConverter writes them (no converter set) ...
    assert producer.batched == [b"r0", b"r2"]
    assert producer.produced == [(b"r1", [("n", b"42"), ("ok", b"true")])]
    assert not records[0].has_headers()  # nothing was created for the headerless ones
    # ... and by the header converter the worker set.
    json = JsonConverter()
    json.configure({"schemas.enable": "true"}, False)
    task.header_converter = json
    task._send(records[1:2])
    assert producer.produced[-1][1][1] == (
        "ok", b'{"schema":{"type":"boolean","optional":false},"payload":true}')


def test_a_sink_task_reads_headers_with_its_header_converter() -> None:
    task = sink_task()
    task.header_converter = SimpleHeaderConverter()
    messages = [_message(0, None), _message(1, [("n", b"42"), ("m", b'{"a":1}'), ("z", None)])]
    records, _, error = task._convert(messages)  # type: ignore[arg-type]
    assert error is None and [r.value for r in records] == ["v0", "v1"]
    assert not records[0].has_headers()
    expected = [Header("n", INT8, 42),
                Header("m", Schema(SchemaType.MAP, key_schema=STRING_SCHEMA, value_schema=INT8),
                       {"a": 1}),
                Header("z", None, None)]
    assert list(records[1].headers) == expected
    # The slow path (a record that failed once) builds the same headers.
    null = SchemaAndValue(None, None)
    assert list(build_record(messages[1], null, null,  # type: ignore[arg-type]
                             task.header_converter).headers) == expected
    # Another header converter: ByteArrayConverter reads the raw bytes.
    task.header_converter = ByteArrayConverter()
    records, _, _ = task._convert(messages[1:])  # type: ignore[arg-type]
    assert [(h.key, h.value) for h in records[0].headers] == [
        ("n", b"42"), ("m", b'{"a":1}'), ("z", None)]
    task.header_converter = None  # none set (a task built outside the Worker): Simple's
    records, _, _ = task._convert(messages[1:])  # type: ignore[arg-type]
    assert list(records[0].headers) == expected


class _RefusingHeaders(SimpleHeaderConverter):
    """Fails on every header named ``bad``, in both directions."""

    def from_connect_header(self, topic: str, key: str, schema: Any, value: Any
                            ) -> bytes | None:
        if key == "bad":
            raise ValueError("cannot write this header")
        return super().from_connect_header(topic, key, schema, value)

    def to_connect_header(self, topic: str, key: str, value: bytes | None) -> SchemaAndValue:
        if key == "bad":
            raise ValueError("cannot read this header")
        return super().to_connect_header(topic, key, value)


def tolerating(tolerance: str) -> ErrorHandlingConfig:
    return ErrorHandlingConfig.from_connector_config({"errors.tolerance": tolerance},
                                                     sink=False)


def test_a_header_converter_failure_is_a_tolerance_stage_for_sources() -> None:
    records = [SourceRecord({"p": 1}, {"o": i}, TOPIC, value=f"r{i}",
                            headers=ConnectHeaders().add_string("bad" if i == 1 else "ok", "x"))
               for i in range(3)]
    task, producer = source_task(tolerating("all"))
    task.header_converter = _RefusingHeaders()
    task._send(records)
    assert [value for value, _ in producer.produced] == [b"r0", b"r2"]  # r1 skipped
    errors = task.metrics.errors
    assert (errors.record_failures, errors.records_skipped) == (1, 1)

    task, producer = source_task(tolerating("none"))
    task.header_converter = _RefusingHeaders()
    with pytest.raises(ConnectException, match="Tolerance exceeded") as failure:
        task._send(records)
    assert "Failed to convert header 'bad'" in str(failure.value.__cause__)


def test_a_header_converter_failure_is_a_tolerance_stage_for_sinks() -> None:
    messages = [_message(0, [("ok", b"1")]), _message(1, [("bad", b"1")]), _message(2, None)]
    task = sink_task(ErrorHandlingConfig.from_connector_config(
        {"errors.tolerance": "all", "errors.log.enable": "true"}, sink=True))
    task.header_converter = _RefusingHeaders()
    records, positions, error = task._convert(messages)  # type: ignore[arg-type]
    assert error is None and [r.value for r in records] == ["v0", "v2"]
    assert positions == {TopicPartition(TOPIC, 0): 3}  # the bad one is skipped, not re-read
    assert task._errors.operator.metrics.records_skipped == 1

    task = sink_task()
    task.header_converter = _RefusingHeaders()
    records, positions, error = task._convert(messages)  # type: ignore[arg-type]
    assert [r.value for r in records] == ["v0"] and positions == {TopicPartition(TOPIC, 0): 1}
    assert isinstance(error, ConnectException)
    assert "offset 1 of orders-0" in str(error) and "cannot read this header" in str(error)
