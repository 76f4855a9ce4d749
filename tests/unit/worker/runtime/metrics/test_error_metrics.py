"""task-error-metrics: what the retry/tolerance operator, the LogReporter and the dead
letter queue reporter count (where Kafka's ErrorHandlingMetrics counts it)."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from confluent_kafka import KafkaError

from tests.unit.worker.runtime.errors.test_handling import (
    TASK,
    FakeProducer,
    flaky,
    from_orders,
)
from worker.api.exceptions import ConnectException, DataException
from worker.runtime.errors.dead_letter_queue import DeadLetterQueueReporter
from worker.runtime.errors.handling import (
    ErrorHandlingConfig,
    LogReporter,
    ProcessingContext,
    RetryWithToleranceOperator,
    Stage,
)
from worker.runtime.errors.sink import describe_consumed
from worker.runtime.metrics.tasks import ErrorMetrics


def operator(metrics: ErrorMetrics, **config: Any) -> RetryWithToleranceOperator:
    return RetryWithToleranceOperator(ErrorHandlingConfig(**config), threading.Event(),
                                      metrics=metrics)


def counts(m: ErrorMetrics) -> tuple[int, int, int, int, int]:
    return m.record_failures, m.retries, m.record_errors, m.records_skipped, m.errors_logged


def test_a_retried_success_counts_a_failure_and_a_retry() -> None:
    m = ErrorMetrics()
    op = operator(m, retry_timeout_ms=5000)
    assert op.execute(ProcessingContext("r"), Stage.TRANSFORMATION, str, flaky(1)) == "done"
    assert counts(m) == (1, 1, 0, 0, 0)
    assert m.last_error_timestamp_ms == 0


def test_a_tolerated_failure_is_an_error_a_skip_and_logged() -> None:
    m = ErrorMetrics()
    op = operator(m, tolerate_all=True)
    op.reporters = [LogReporter(TASK, False, describe_consumed)]
    context = ProcessingContext(from_orders(b"x"))
    assert op.execute(context, Stage.VALUE_CONVERTER, str,
                      flaky(1, DataException)) is None
    assert counts(m) == (1, 0, 1, 1, 1)
    assert m.last_error_timestamp_ms > 0


def test_a_failure_beyond_tolerance_is_an_error_and_no_skip() -> None:
    m = ErrorMetrics()
    op = operator(m)
    with pytest.raises(ConnectException):
        op.execute(ProcessingContext("r"), Stage.VALUE_CONVERTER, str, flaky(1, DataException))
    assert counts(m) == (1, 0, 1, 0, 0)


def test_an_errant_record_report_counts_a_failure() -> None:
    m = ErrorMetrics()
    operator(m, tolerate_all=True).execute_failed(ProcessingContext("r"), Stage.TASK_PUT, str,
                                                  ValueError("bad"))
    assert counts(m) == (1, 0, 0, 0, 0)
    assert m.last_error_timestamp_ms > 0


def test_dead_letter_queue_requests_and_failures(monkeypatch: pytest.MonkeyPatch) -> None:
    m = ErrorMetrics()
    reporter = DeadLetterQueueReporter(TASK, "orders-dlq", 1, False, {}, {}, 1.0,
                                       producer_factory=FakeProducer, metrics=m)
    monkeypatch.setattr(reporter, "_ensure_topic", lambda timeout_s: None)
    reporter.start()
    context = ProcessingContext(from_orders(b"x"))
    context.error = ValueError("bad")
    reporter.report(context)
    reporter.report(context)
    reporter._on_delivery(KafkaError(KafkaError._MSG_TIMED_OUT), None)
    assert (m.dlq_produce_requests, m.dlq_produce_failures) == (2, 1)
