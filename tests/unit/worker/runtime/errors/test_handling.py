"""worker.runtime.errors.handling, dead_letter_queue, sink_errors: the retry/tolerance operator,
the LogReporter, the DLQ's ``__connect.errors.*`` headers and the sink's slow path."""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Mapping
from typing import Any, cast

import pytest
from confluent_kafka import KafkaError, KafkaException

from tests.support.messages import consumed
from worker.api.converter import Converter
from worker.api.data import SchemaAndValue
from worker.api.exceptions import ConnectException, DataException, RetriableException
from worker.api.headers import ConnectHeaders
from worker.api.records import SinkRecord
from worker.api.task import SinkTask
from worker.api.transforms import Transformation
from worker.builtin.converters.json_converter import JsonConverter
from worker.clients.kafka_types import ConsumedMessage
from worker.runtime.chain import TransformationChain
from worker.runtime.connector_config import extra_errors
from worker.runtime.errors import dead_letter_queue
from worker.runtime.errors.dead_letter_queue import DeadLetterQueueReporter, context_headers
from worker.runtime.errors.handling import (
    ErrorHandlingConfig,
    LogReporter,
    ProcessingContext,
    RetryInterrupted,
    RetryWithToleranceOperator,
    Stage,
)
from worker.runtime.errors.sink import SinkErrorHandler, describe_consumed
from worker.storage.base import TaskId

TASK = TaskId("orders-sink", 2)


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def from_orders(value: bytes | None, key: bytes | None = b"k", *,
                headers: list[tuple[str, bytes | None]] | None = None,
                timestamp: tuple[int, int] = (1, 1_700_000_000_000)) -> ConsumedMessage:
    """A record consumed from orders-3 at offset 41, for the error path to report (cast as
    the worker casts what ``consume()`` returns: its coordinates are never None)."""
    return cast(ConsumedMessage, consumed(value, key, topic="orders", partition=3,
                                          offset=41, headers=headers, timestamp=timestamp))


def flaky(failures: int, error: type[Exception] = RetriableException) -> Any:
    calls = {"n": 0}

    def operation() -> str:
        calls["n"] += 1
        if calls["n"] <= failures:
            raise error(f"failure {calls['n']}")
        return "done"

    operation.calls = calls  # type: ignore[attr-defined]
    return operation


def operator(stop: threading.Event | None = None, **config: Any) -> RetryWithToleranceOperator:
    return RetryWithToleranceOperator(ErrorHandlingConfig(**config), stop or threading.Event())


# --- the operator ------------------------------------------------------------------------


class TestBackoff:
    def test_doubles_from_300_ms_and_jitters_below_the_maximum_once_past_it(self) -> None:
        clock = FakeClock()
        op = RetryWithToleranceOperator(
            ErrorHandlingConfig(retry_delay_max_ms=1000), threading.Event(), clock=clock,
            rng=random.Random(7))
        far = clock.now + 3600
        assert [op.backoff_delay_s(a, far) for a in (1, 2)] == [0.3, 0.6]
        jittered = [op.backoff_delay_s(a, far) for a in (3, 4, 10)]  # 1.2 s, ... > 1 s
        assert all(0 <= d < 1.0 for d in jittered)
        assert len(set(jittered)) == 3

    def test_never_waits_past_the_deadline(self) -> None:
        clock = FakeClock()
        op = RetryWithToleranceOperator(ErrorHandlingConfig(), threading.Event(), clock=clock)
        assert op.backoff_delay_s(1, clock.now + 0.1) == pytest.approx(0.1)
        assert op.backoff_delay_s(1, clock.now - 1) == 0.0


class TestRetries:
    def test_retriable_errors_are_retried_until_the_operation_succeeds(self) -> None:
        op = operator(retry_timeout_ms=5000, retry_delay_max_ms=1000)
        operation = flaky(2)
        context = ProcessingContext("record")
        started = time.monotonic()
        assert op.execute(context, Stage.TRANSFORMATION, str, operation) == "done"
        assert operation.calls["n"] == 3 and context.attempt == 3
        assert not context.failed
        assert 0.9 <= time.monotonic() - started < 2.5  # 0.3 s, then 0.6 s

    def test_no_retries_by_default(self) -> None:
        op = operator(tolerate_all=True)
        operation = flaky(1)
        context = ProcessingContext("record")
        assert op.execute(context, Stage.VALUE_CONVERTER, str, operation) is None
        assert operation.calls["n"] == 1
        assert isinstance(context.error, RetriableException)

    def test_non_retriable_errors_are_not_retried(self) -> None:
        op = operator(retry_timeout_ms=-1, tolerate_all=True)
        operation = flaky(1, DataException)
        context = ProcessingContext("record")
        assert op.execute(context, Stage.KEY_CONVERTER, str, operation) is None
        assert operation.calls["n"] == 1
        assert isinstance(context.error, DataException)

    def test_retries_stop_at_the_timeout(self) -> None:
        op = operator(retry_timeout_ms=400, tolerate_all=True)
        operation = flaky(1000)
        context = ProcessingContext("record")
        started = time.monotonic()
        assert op.execute(context, Stage.TRANSFORMATION, str, operation) is None
        assert 0.35 <= time.monotonic() - started < 2.0
        assert context.failed and operation.calls["n"] >= 2

    def test_a_stop_interrupts_the_backoff_at_once(self) -> None:
        stop = threading.Event()
        op = operator(stop, retry_timeout_ms=-1, retry_delay_max_ms=60000, tolerate_all=True)
        operation = flaky(10**9)
        reported: list[ProcessingContext] = []

        class Recorder(LogReporter):
            def report(self, context: ProcessingContext) -> None:
                reported.append(context)

        op.reporters = [Recorder(TASK, False, lambda o, i: "")]
        threading.Timer(0.4, stop.set).start()
        context = ProcessingContext("record")
        started = time.monotonic()
        with pytest.raises(RetryInterrupted):
            op.execute(context, Stage.TRANSFORMATION, str, operation)
        assert time.monotonic() - started < 1.5  # not the 1.2 s + 2.4 s + ... of the backoff
        # Not a failure: nothing reported, nothing counted, the record is not skipped.
        assert not context.failed and reported == [] and op.total_failures == 0


class TestTolerance:
    def test_none_raises_tolerance_exceeded_after_reporting(self) -> None:
        reported: list[Stage | None] = []
        op = operator()

        class Recorder(LogReporter):
            def report(self, context: ProcessingContext) -> None:
                reported.append(context.stage)

        op.reporters = [Recorder(TASK, False, lambda o, i: "")]
        with pytest.raises(ConnectException, match="^Tolerance exceeded in error handler$"
                           ) as info:
            op.execute(ProcessingContext("r"), Stage.VALUE_CONVERTER, str, flaky(1, ValueError))
        assert isinstance(info.value.__cause__, ValueError)
        assert reported == [Stage.VALUE_CONVERTER]

    def test_none_fails_when_retries_run_out(self) -> None:
        with pytest.raises(ConnectException, match="Tolerance exceeded") as info:
            operator().execute(ProcessingContext("r"), Stage.TRANSFORMATION, str, flaky(5))
        assert isinstance(info.value.__cause__, RetriableException)

    def test_all_skips_every_failure(self) -> None:
        op = operator(tolerate_all=True)
        for _ in range(3):
            context = ProcessingContext("r")
            assert op.execute(context, Stage.TRANSFORMATION, str, flaky(1, KeyError)) is None
            assert context.failed
        assert op.total_failures == 3 and op.within_tolerance_limits()

    def test_other_stages_tolerate_only_retriable_errors(self) -> None:
        with pytest.raises(ConnectException, match="Unhandled exception in error handler"):
            operator(tolerate_all=True).execute(ProcessingContext("r"), Stage.TASK_PUT, str,
                                                flaky(1, ValueError))

    def test_a_failed_context_runs_nothing_more(self) -> None:
        op = operator(tolerate_all=True)
        context = ProcessingContext("r")
        op.execute(context, Stage.KEY_CONVERTER, str, flaky(1, ValueError))
        second = flaky(0)
        assert op.execute(context, Stage.VALUE_CONVERTER, str, second) is None
        assert second.calls["n"] == 0 and context.stage is Stage.KEY_CONVERTER


# --- reporting ---------------------------------------------------------------------------


def failed_context(message: ConsumedMessage, stage: Stage = Stage.VALUE_CONVERTER,
                   detail: str = "Converting byte[] to Kafka Connect data failed"
                   ) -> ProcessingContext:
    context = ProcessingContext(message)
    context.stage, context.executing_class = stage, Converter
    try:
        try:
            raise ValueError("bad byte")
        except ValueError as inner:
            raise DataException(detail) from inner
    except DataException as exc:
        context.error = exc
    return context


class TestContextHeaders:
    def test_kafka_names_order_and_utf8_values(self) -> None:
        context = failed_context(from_orders(b"x"))
        headers = context_headers(context, TASK)
        assert [k for k, _ in headers] == [
            "__connect.errors.topic", "__connect.errors.partition", "__connect.errors.offset",
            "__connect.errors.connector.name", "__connect.errors.task.id",
            "__connect.errors.stage", "__connect.errors.class.name",
            "__connect.errors.exception.class.name", "__connect.errors.exception.message",
            "__connect.errors.exception.stacktrace"]
        values = dict(headers)
        assert values["__connect.errors.topic"] == b"orders"
        assert values["__connect.errors.partition"] == b"3"
        assert values["__connect.errors.offset"] == b"41"
        assert values["__connect.errors.connector.name"] == b"orders-sink"
        assert values["__connect.errors.task.id"] == b"2"
        assert values["__connect.errors.stage"] == b"VALUE_CONVERTER"
        assert values["__connect.errors.class.name"] == b"worker.api.converter.Converter"
        assert values["__connect.errors.exception.class.name"] == \
            b"worker.api.exceptions.DataException"
        assert values["__connect.errors.exception.message"] == \
            b"Converting byte[] to Kafka Connect data failed"
        trace = values["__connect.errors.exception.stacktrace"] or b""
        assert b"ValueError: bad byte" in trace and b"DataException" in trace

    def test_an_exception_without_message_has_a_null_message_header(self) -> None:
        context = ProcessingContext(from_orders(b"x"))
        context.stage, context.executing_class, context.error = Stage.TRANSFORMATION, str, \
            KeyError()
        assert dict(context_headers(context, TASK))["__connect.errors.exception.message"] is None


class FakeProducer:
    def __init__(self, config: Mapping[str, Any]) -> None:
        self.config = dict(config)
        self.produced: list[tuple[str, Any, Any, dict[str, Any]]] = []
        self.unacknowledged = 0

    def produce(self, topic: str, value: Any, key: Any, **kwargs: Any) -> None:
        self.produced.append((topic, value, key, kwargs))

    def poll(self, timeout: float) -> int:
        return 0

    def flush(self, timeout: float) -> int:
        return self.unacknowledged


def dlq(monkeypatch: pytest.MonkeyPatch, headers: bool) -> tuple[DeadLetterQueueReporter,
                                                                 FakeProducer]:
    reporter = DeadLetterQueueReporter(TASK, "orders-dlq", 1, headers,
                                       {"bootstrap.servers": "x"}, {}, 1.0,
                                       producer_factory=FakeProducer)
    monkeypatch.setattr(reporter, "_ensure_topic", lambda timeout_s: None)
    reporter.start()
    producer = reporter._producer
    assert isinstance(producer, FakeProducer)
    return reporter, producer


class TestDeadLetterQueue:
    def test_the_original_record_is_written_with_its_headers_and_timestamp(
            self, monkeypatch: pytest.MonkeyPatch) -> None:
        reporter, producer = dlq(monkeypatch, headers=False)
        reporter.report(failed_context(from_orders(b"raw", b"key", headers=[("h", b"1")])))
        assert producer.produced == [("orders-dlq", b"raw", b"key",
                                      {"headers": [("h", b"1")],
                                       "timestamp": 1_700_000_000_000})]
        assert reporter.pending

    def test_context_headers_follow_the_original_ones(self, monkeypatch: pytest.MonkeyPatch
                                                      ) -> None:
        reporter, producer = dlq(monkeypatch, headers=True)
        reporter.report(failed_context(from_orders(None, None, headers=[("h", b"1")],
                                                   timestamp=(0, -1))))
        _, value, key, kwargs = producer.produced[0]
        assert (value, key) == (None, None) and "timestamp" not in kwargs
        names = [k for k, _ in kwargs["headers"]]
        assert names[0] == "h" and names[1] == "__connect.errors.topic" and len(names) == 11

    def test_flush_gates_commits_until_everything_is_acknowledged(
            self, monkeypatch: pytest.MonkeyPatch) -> None:
        reporter, producer = dlq(monkeypatch, headers=False)
        assert reporter.flush()  # nothing reported: nothing to wait for
        reporter.report(failed_context(from_orders(b"x")))
        producer.unacknowledged = 1
        assert not reporter.flush() and reporter.pending
        producer.unacknowledged = 0
        assert reporter.flush() and not reporter.pending

    def test_a_failed_delivery_blocks_commits_and_fails_the_task(
            self, monkeypatch: pytest.MonkeyPatch) -> None:
        reporter, producer = dlq(monkeypatch, headers=False)
        reporter.report(failed_context(from_orders(b"x")))
        reporter._on_delivery("Broker: Topic authorization failed", None)  # type: ignore[arg-type]
        assert not reporter.flush()
        with pytest.raises(ConnectException, match="dead letter queue. topic=orders-dlq"):
            reporter.raise_if_failed()


class TestLogReporter:
    def test_kafka_wording_with_coordinates_and_no_contents_by_default(
            self, caplog: pytest.LogCaptureFixture) -> None:
        reporter = LogReporter(TASK, False, describe_consumed)
        with caplog.at_level(logging.ERROR):
            # A converter's message may quote what it could not read.
            reporter.report(failed_context(from_orders(b"SECRET-VALUE", b"SECRET-KEY"),
                                           detail="cannot read SECRET-VALUE"))
        text = caplog.text
        assert ("Error encountered in task orders-sink-2. Executing stage 'VALUE_CONVERTER' "
                "with class 'worker.api.converter.Converter', where consumed record is "
                "{topic='orders', partition=3, offset=41, timestamp=1700000000000, "
                "timestampType=CreateTime}.") in text
        assert "worker.api.exceptions.DataException" in text
        assert "SECRET" not in text

    def test_include_messages_adds_key_value_and_the_error(
            self, caplog: pytest.LogCaptureFixture) -> None:
        reporter = LogReporter(TASK, True, describe_consumed)
        with caplog.at_level(logging.ERROR):
            reporter.report(failed_context(from_orders(b"the-value", b"the-key")))
        assert "key=b'the-key', value=b'the-value'" in caplog.text
        assert "Converting byte[] to Kafka Connect data failed" in caplog.text


# --- the sink's slow path ----------------------------------------------------------------


class Utf8(Converter):
    def configure(self, configs: Mapping[str, Any], is_key: bool) -> None:
        pass

    def from_connect_data(self, topic: str, schema: Any, value: Any) -> bytes | None:
        return None if value is None else str(value).encode()

    def to_connect_data(self, topic: str, value: bytes | None) -> SchemaAndValue:
        if value is not None and value.startswith(b"!"):
            raise DataException("not accepted")
        return SchemaAndValue(None, None if value is None else value.decode())


class FailsOnce(Transformation):
    def __init__(self) -> None:
        self.calls = 0

    def configure(self, configs: Mapping[str, Any]) -> None:
        pass

    def apply(self, record: Any) -> Any:
        self.calls += 1
        if self.calls == 1:
            raise RetriableException("try again")
        return record



def handler(monkeypatch: pytest.MonkeyPatch, chain: TransformationChain, **config: Any
            ) -> tuple[SinkErrorHandler, FakeProducer]:
    reporter, producer = dlq(monkeypatch, headers=True)
    settings = ErrorHandlingConfig(**config)
    return SinkErrorHandler(TASK, settings, RetryWithToleranceOperator(settings,
                                                                       threading.Event()),
                            Utf8(), Utf8(), chain, reporter), producer


class TestSinkRecovery:
    def test_a_tolerated_failure_goes_to_the_dlq_with_the_failing_stage(
            self, monkeypatch: pytest.MonkeyPatch) -> None:
        recovery, producer = handler(monkeypatch, TransformationChain([]), tolerate_all=True)
        assert recovery.recover(from_orders(b"!bad")) is None
        headers = dict(producer.produced[0][3]["headers"])
        assert headers["__connect.errors.stage"] == b"VALUE_CONVERTER"
        assert headers["__connect.errors.class.name"].endswith(b"runtime.errors.test_handling.Utf8")

    def test_a_key_failure_is_reported_as_the_key_converters(
            self, monkeypatch: pytest.MonkeyPatch) -> None:
        recovery, producer = handler(monkeypatch, TransformationChain([]), tolerate_all=True)
        assert recovery.recover(from_orders(b"fine", b"!key")) is None
        assert dict(producer.produced[0][3]["headers"])["__connect.errors.stage"] == \
            b"KEY_CONVERTER"

    def test_a_retried_transformation_delivers_the_record(
            self, monkeypatch: pytest.MonkeyPatch) -> None:
        transform = FailsOnce()
        recovery, producer = handler(monkeypatch, TransformationChain([(transform, None,
                                                                        False)]),
                                     retry_timeout_ms=5000)
        record = recovery.recover(from_orders(b"good"))
        assert record is not None and record.value == "good"
        assert transform.calls == 2 and producer.produced == []

    def test_not_tolerated_raises_after_the_dlq_write(self, monkeypatch: pytest.MonkeyPatch
                                                      ) -> None:
        recovery, producer = handler(monkeypatch, TransformationChain([]))
        with pytest.raises(ConnectException, match="Tolerance exceeded"):
            recovery.recover(from_orders(b"!bad"))
        assert len(producer.produced) == 1


# --- validation --------------------------------------------------------------------------


class TestDlqValidation:
    def sink(self, **config: str) -> dict[str, str]:
        return extra_errors({"connector.class": "FileStreamSink", **config}, "sink", "All")

    def test_a_dlq_topic_in_topics_is_an_error_on_topics(self) -> None:
        errors = self.sink(topics="a, orders-dlq", **{
            "errors.deadletterqueue.topic.name": "orders-dlq"})
        assert errors == {"topics": "The DLQ topic 'orders-dlq' may not be included in the "
                                    "list of topics ('topics=[a, orders-dlq]') consumed by "
                                    "the connector"}

    def test_a_dlq_topic_matched_by_topics_regex_is_an_error_on_topics_regex(self) -> None:
        errors = self.sink(**{"topics.regex": "orders.*",
                              "errors.deadletterqueue.topic.name": "orders-dlq"})
        assert errors == {"topics.regex": "The DLQ topic 'orders-dlq' may not be matched by "
                                          "the regex for the topics ('topics.regex=orders.*') "
                                          "consumed by the connector"}

    def test_other_dlq_topics_and_sources_are_fine(self) -> None:
        assert self.sink(topics="a", **{"errors.deadletterqueue.topic.name": "dlq"}) == {}
        assert self.sink(**{"topics.regex": "orders.*",
                            "errors.deadletterqueue.topic.name": "dlq"}) == {}
        assert extra_errors({"errors.deadletterqueue.topic.name": "x"}, "source", "All") == {}


class FakeAdmin:
    """An AdminClient whose topic creation fails with ``error``."""

    def __init__(self, error: KafkaError | None) -> None:
        self.error = error
        self.created: list[Any] = []

    def list_topics(self, timeout: float) -> Any:
        return type("Metadata", (), {"topics": {}})()

    def create_topics(self, topics: list[Any], **_: Any) -> dict[str, Any]:
        self.created += topics
        error = self.error

        class Result:
            def result(self, timeout: float) -> None:
                if error is not None:
                    raise KafkaException(error)

        return {t.topic: Result() for t in topics}


class TestDlqTopicCreation:
    def reporter(self, monkeypatch: pytest.MonkeyPatch, admin: FakeAdmin
                 ) -> DeadLetterQueueReporter:
        monkeypatch.setattr(dead_letter_queue, "AdminClient", lambda config: admin)
        return DeadLetterQueueReporter(TASK, "orders-dlq", 3, False, {}, {}, 1.0,
                                       producer_factory=FakeProducer)

    def test_a_missing_topic_is_created_with_one_partition_and_the_replication_factor(
            self, monkeypatch: pytest.MonkeyPatch) -> None:
        admin = FakeAdmin(None)
        self.reporter(monkeypatch, admin).start()
        assert [(t.topic, t.num_partitions, t.replication_factor) for t in admin.created] \
            == [("orders-dlq", 1, 3)]

    def test_a_replication_factor_the_broker_cannot_honour_names_the_key(
            self, monkeypatch: pytest.MonkeyPatch) -> None:
        admin = FakeAdmin(KafkaError(KafkaError.INVALID_REPLICATION_FACTOR))
        with pytest.raises(ConnectException) as info:
            self.reporter(monkeypatch, admin).start()
        assert str(info.value).startswith(
            "Could not initialize dead letter queue with topic=orders-dlq: the broker cannot "
            "create it with errors.deadletterqueue.topic.replication.factor=3")

    def test_an_existing_topic_is_fine(self, monkeypatch: pytest.MonkeyPatch) -> None:
        reporter = self.reporter(monkeypatch, FakeAdmin(KafkaError(
            KafkaError.TOPIC_ALREADY_EXISTS)))
        reporter.start()
        assert isinstance(reporter._producer, FakeProducer)


class TestErrantRecordReporter:
    def test_a_reported_record_goes_to_the_dlq_at_its_original_coordinates(
            self, monkeypatch: pytest.MonkeyPatch) -> None:
        recovery, producer = handler(monkeypatch, TransformationChain([]), tolerate_all=True)
        reporter = recovery.errant_record_reporter(SinkTask)
        assert reporter is not None
        record = SinkRecord("renamed", 0, None, "key", None, "value", 99, timestamp=5,
                            headers=[("h", "v")], original_topic="orders",
                            original_kafka_partition=3, original_kafka_offset=41)
        assert reporter.report(record, ValueError("cannot write")).result(0) is None
        topic, value, key, kwargs = producer.produced[0]
        assert (topic, value, key, kwargs["timestamp"]) == ("orders-dlq", b"value", b"key", 5)
        headers = dict(kwargs["headers"])
        assert headers["h"] == b"v"
        assert (headers["__connect.errors.topic"], headers["__connect.errors.partition"],
                headers["__connect.errors.offset"]) == (b"orders", b"3", b"41")
        assert headers["__connect.errors.stage"] == b"TASK_PUT"
        assert headers["__connect.errors.class.name"] == b"worker.api.task.SinkTask"
        assert headers["__connect.errors.exception.class.name"] == b"builtins.ValueError"

    def test_reported_headers_are_written_by_the_tasks_header_converter(
            self, monkeypatch: pytest.MonkeyPatch) -> None:
        recovery, producer = handler(monkeypatch, TransformationChain([]), tolerate_all=True)
        json = JsonConverter()
        json.configure({"schemas.enable": "false"}, False)
        converters: list[Any] = [None]
        reporter = recovery.errant_record_reporter(SinkTask, lambda: converters[0])
        assert reporter is not None
        record = SinkRecord("orders", 0, None, None, None, "v", 1,
                            headers=ConnectHeaders().add_string("h", "v"))
        reporter.report(record, ValueError("x"))
        converters[0] = json  # the worker sets the task's converter after it is built
        reporter.report(record, ValueError("x"))
        assert [dict(p[3]["headers"])["h"] for p in producer.produced] == [b"v", b'"v"']

    def test_tolerance_none_raises_from_report(self, monkeypatch: pytest.MonkeyPatch) -> None:
        recovery, _ = handler(monkeypatch, TransformationChain([]))
        reporter = recovery.errant_record_reporter(SinkTask)
        assert reporter is not None
        with pytest.raises(ConnectException, match="Tolerance exceeded in error handler"):
            reporter.report(SinkRecord("t", 0, None, None, None, "v", 1), ValueError("x"))

    def test_none_without_a_dlq_or_the_error_log(self) -> None:
        settings = ErrorHandlingConfig(tolerate_all=True)
        recovery = SinkErrorHandler(TASK, settings, RetryWithToleranceOperator(
            settings, threading.Event()), Utf8(), Utf8(), TransformationChain([]))
        assert recovery.errant_record_reporter(SinkTask) is None
