"""Retries and error tolerance for the stages a record goes through, as Kafka Connect's
``RetryWithToleranceOperator`` does them (``errors.*`` connector keys).

A stage (a converter, a transformation, ...) runs through ``RetryWithToleranceOperator.
execute``: a ``RetriableException`` is retried with exponential backoff — 300 ms, doubled
each attempt, a random delay below ``errors.retry.delay.max.ms`` once the doubling passes
it — for at most ``errors.retry.timeout`` ms (0: no retries, -1: forever); the wait is on
the task's stop event, so a stop ends it at once. Once a stage has failed for good,
``errors.tolerance`` decides: ``none`` raises "Tolerance exceeded in error handler" (the
task fails), ``all`` marks the record's ``ProcessingContext`` failed and the caller skips
the record. Either way every failure is handed to the reporters first (the log, and for
sinks the dead letter queue: ``worker.runtime.errors.dead_letter_queue``).

The operator is only used on the slow path: the task loops run stages directly and call
into this module when a record has already failed once (docs/error-handling.md).
"""

from __future__ import annotations

import logging
import random
import threading
import time
import traceback
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, TypeVar

from worker.api.exceptions import ConnectException, RetriableException
from worker.runtime.connector_config import error_handling_values
from worker.runtime.metrics.tasks import ErrorMetrics
from worker.storage.base import TaskId

log = logging.getLogger(__name__)

V = TypeVar("V")

RETRIES_DELAY_MIN_MS = 300
TOLERANCE_EXCEEDED = "Tolerance exceeded in error handler"
UNHANDLED = "Unhandled exception in error handler"


class RetryInterrupted(Exception):  # noqa: N818 - Kafka-style name of a control signal
    """A retry's backoff was interrupted (the task is stopping or pausing): the record has
    not failed; the caller leaves it, and what follows it, to be processed again later."""

    def __init__(self) -> None:
        super().__init__("retry interrupted")
        self.rest: list[Any] = []  # set by the sink task: the messages not processed


class Stage(StrEnum):
    """A logical stage of a Connect pipeline (Kafka's ``Stage``; the names are what the
    ``__connect.errors.stage`` header carries)."""

    TASK_POLL = "TASK_POLL"
    TASK_PUT = "TASK_PUT"
    TRANSFORMATION = "TRANSFORMATION"
    KEY_CONVERTER = "KEY_CONVERTER"
    VALUE_CONVERTER = "VALUE_CONVERTER"
    HEADER_CONVERTER = "HEADER_CONVERTER"
    KAFKA_PRODUCE = "KAFKA_PRODUCE"
    KAFKA_CONSUME = "KAFKA_CONSUME"


# Stages where any exception may be tolerated; elsewhere only retriable ones are.
TOLERABLE_STAGES = frozenset({Stage.TRANSFORMATION, Stage.HEADER_CONVERTER,
                              Stage.KEY_CONVERTER, Stage.VALUE_CONVERTER})


@dataclass(frozen=True)
class ErrorHandlingConfig:
    """The connector's ``errors.*`` keys, parsed (validated earlier by the ConfigDef)."""

    retry_timeout_ms: int = 0
    retry_delay_max_ms: int = 60000
    tolerate_all: bool = False
    log_enable: bool = False
    log_include_messages: bool = False
    dlq_topic: str = ""
    dlq_replication_factor: int = 3
    dlq_context_headers: bool = False

    @classmethod
    def from_connector_config(cls, config: Mapping[str, str], sink: bool
                              ) -> ErrorHandlingConfig:
        values = error_handling_values(config, "sink" if sink else "source")
        return cls(
            retry_timeout_ms=values["errors.retry.timeout"],
            retry_delay_max_ms=values["errors.retry.delay.max.ms"],
            tolerate_all=values["errors.tolerance"].lower() == "all",
            log_enable=values["errors.log.enable"],
            log_include_messages=values["errors.log.include.messages"],
            dlq_topic=values.get("errors.deadletterqueue.topic.name", "").strip(),
            dlq_replication_factor=values.get(
                "errors.deadletterqueue.topic.replication.factor", 3),
            dlq_context_headers=values.get("errors.deadletterqueue.context.headers.enable",
                                           False),
        )


class ProcessingContext:
    """What is known about one record's failure: the original record (the consumed message
    for sinks, the polled SourceRecord for sources), the stage and class that ran last, the
    attempts made and the error, if any."""

    __slots__ = ("original", "stage", "executing_class", "attempt", "error")

    def __init__(self, original: Any) -> None:
        self.original = original
        self.stage: Stage | None = None
        self.executing_class: type | None = None
        self.attempt = 0
        self.error: BaseException | None = None

    @property
    def failed(self) -> bool:
        return self.error is not None


def class_name(cls: type | None) -> str:
    """A class's import path, what Kafka's ``Class.getName()`` is to a Java class."""
    if cls is None:
        return "null"
    return f"{cls.__module__}.{cls.__qualname__}"


class ErrorReporter(ABC):
    """Told of every record that failed a stage for good (Kafka's ``ErrorReporter``)."""

    @abstractmethod
    def report(self, context: ProcessingContext) -> None: ...

    def close(self) -> None:
        """Release clients (called when the task stops)."""


class LogReporter(ErrorReporter):
    """Logs each failure as Kafka's ``LogReporter`` does (when ``errors.log.enable``):
    ``Error encountered in task c-0. Executing stage 'VALUE_CONVERTER' with class '...',
    where consumed record is {topic='t', partition=0, offset=7, ...}.`` and the error.

    ``describe`` renders the original record; it is given ``include_messages`` and must
    show keys, values and headers only when that is true.
    """

    def __init__(self, task_id: TaskId, include_messages: bool,
                 describe: Callable[[Any, bool], str]) -> None:
        self._task = f"{task_id.connector}-{task_id.task}"
        self._include = include_messages
        self._describe = describe

    def report(self, context: ProcessingContext) -> None:
        error = context.error
        if error is None:
            return
        if self._include:
            log.error("%s", self.message(context), exc_info=error)
            return
        # An exception's message may quote the record (a converter echoing what it could
        # not parse): without include.messages its type and frames are logged, not its text.
        frames = "".join(traceback.format_tb(error.__traceback__)).rstrip()
        log.error("%s\nCaused by %s (message not logged: errors.log.include.messages=false)"
                  "\n%s", self.message(context), class_name(type(error)), frames)

    def message(self, context: ProcessingContext) -> str:
        stage = context.stage.value if context.stage is not None else "null"
        text = (f"Error encountered in task {self._task}. Executing stage '{stage}' with "
                f"class '{class_name(context.executing_class)}'")
        if context.original is not None:
            text += self._describe(context.original, self._include)
        return text + "."


class RetryWithToleranceOperator:
    """Runs stages with retries and tolerance; one per task, used from the task's thread.

    ``interrupt`` is set when the task stops (sinks: or pauses): a backoff waits on it,
    so the retry ends at once with ``RetryInterrupted`` — not a failure: nothing is
    reported and the record is not skipped (Kafka marks it failed instead).

    ``metrics`` gets Kafka's ``task-error-metrics`` counts, where Kafka's operator counts
    them: a failure per failed attempt, a retry per backoff, an error per record that
    failed for good, a skip per record tolerated, an error logged per LogReporter report.
    """

    def __init__(self, config: ErrorHandlingConfig, interrupt: threading.Event,
                 reporters: list[ErrorReporter] | None = None, *,
                 clock: Callable[[], float] = time.monotonic,
                 rng: random.Random | None = None,
                 metrics: ErrorMetrics | None = None) -> None:
        self._retry_timeout_ms = config.retry_timeout_ms
        self._max_delay_ms = config.retry_delay_max_ms
        self._tolerate_all = config.tolerate_all
        self._interrupt = interrupt
        self.reporters: list[ErrorReporter] = list(reporters or [])
        self._clock = clock
        self._rng = rng or random.Random()
        self.total_failures = 0
        self.metrics = metrics or ErrorMetrics()

    # --- running stages --------------------------------------------------------------

    def execute(self, context: ProcessingContext, stage: Stage, executing_class: type | None,
                operation: Callable[[], V]) -> V | None:
        """Run ``operation`` as ``stage``; its result, or None with ``context.failed`` set
        when it failed and the failure is tolerated. Raises ConnectException when it is
        not, RetryInterrupted when a retry was interrupted. A context that already failed
        runs nothing."""
        if context.failed:
            return None
        context.stage, context.executing_class = stage, executing_class
        try:
            return self._execute_and_handle(context, stage, operation)
        finally:
            if context.failed:
                self.metrics.record_errors += 1
                self.report(context)

    def execute_failed(self, context: ProcessingContext, stage: Stage,
                       executing_class: type | None, error: BaseException) -> None:
        """Record a failure that happened outside ``execute`` (KIP-610's errant records):
        report it, then raise if it is not tolerated."""
        self.total_failures += 1
        self.metrics.mark_failed()
        self.metrics.record_failures += 1
        context.stage, context.executing_class, context.error = stage, executing_class, error
        self.report(context)
        if not self.within_tolerance_limits():
            self.metrics.record_errors += 1
            raise ConnectException(TOLERANCE_EXCEEDED) from error

    def report(self, context: ProcessingContext) -> None:
        for reporter in self.reporters:
            reporter.report(context)
            if isinstance(reporter, LogReporter):
                self.metrics.errors_logged += 1

    @property
    def tolerate_all(self) -> bool:
        return self._tolerate_all

    def within_tolerance_limits(self) -> bool:
        return self._tolerate_all or self.total_failures == 0

    def _execute_and_handle(self, context: ProcessingContext, stage: Stage,
                            operation: Callable[[], V]) -> V | None:
        try:
            result = self._execute_and_retry(context, operation)
        except RetryInterrupted:
            raise
        except Exception as exc:
            self.total_failures += 1
            self.metrics.record_failures += 1
            self.metrics.mark_failed()
            context.error = exc
            if stage not in TOLERABLE_STAGES:
                raise ConnectException(UNHANDLED) from exc
            if not self.within_tolerance_limits():
                raise ConnectException(TOLERANCE_EXCEEDED) from exc
            self.metrics.records_skipped += 1
            return None
        if context.failed:
            # Retries ran out. Kafka then drops the record even with errors.tolerance=none;
            # here "none" fails the task, as the setting says (docs/limitations.md).
            self.total_failures += 1
            self.metrics.mark_failed()
            if not self.within_tolerance_limits():
                raise ConnectException(TOLERANCE_EXCEEDED) from context.error
            self.metrics.records_skipped += 1
        return result

    def _execute_and_retry(self, context: ProcessingContext, operation: Callable[[], V]
                           ) -> V | None:
        attempt = 0
        start = self._clock()
        deadline = (start + self._retry_timeout_ms / 1000 if self._retry_timeout_ms >= 0
                    else float("inf"))
        while True:
            attempt += 1
            context.attempt = attempt
            try:
                return operation()
            except RetriableException as exc:
                self.metrics.record_failures += 1
                if self._clock() >= deadline:
                    context.error = exc
                    return None
                log.debug("Retriable error in stage %s (attempt %d); backing off",
                          context.stage, attempt)
                if self._interrupt.wait(self.backoff_delay_s(attempt, deadline)):
                    raise RetryInterrupted() from exc
                self.metrics.retries += 1

    def backoff_delay_s(self, attempt: int, deadline: float) -> float:
        """The wait after the ``attempt``-th failure: 300 ms doubled per retry; once that
        passes ``errors.retry.delay.max.ms``, a random delay below it (jitter); never past
        the deadline."""
        delay_ms: float = RETRIES_DELAY_MIN_MS * (2 ** (attempt - 1))
        if delay_ms > self._max_delay_ms:
            delay_ms = self._rng.random() * self._max_delay_ms
        return max(0.0, min(delay_ms / 1000, deadline - self._clock()))

    def close(self) -> None:
        """Close every reporter (all are tried; the first error is raised)."""
        first: BaseException | None = None
        for reporter in self.reporters:
            try:
                reporter.close()
            except Exception as exc:
                log.exception("Could not close error reporter %s", type(reporter).__name__)
                first = first or exc
        self.reporters = []
        if first is not None:
            raise ConnectException("Failed to close all reporters") from first
