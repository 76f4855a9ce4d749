"""The slow path of a sink task's record conversion: what happens to a consumed record once
converting or transforming it raised.

``WorkerSinkTask._convert`` runs the converters and the transformation chain directly, with
no per-record bookkeeping. When a record raises there, ``SinkErrorHandler.recover`` runs
it again one stage at a time through the ``RetryWithToleranceOperator`` — key converter,
value converter, header converter, then each transformation (Kafka's order) — so the
failing stage is known, retriable errors are retried, and the failure is reported (log,
dead letter queue) and tolerated or not. A record that succeeds on this second run is
delivered as usual.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from worker.api.converter import Converter
from worker.api.data import SchemaAndValue
from worker.api.exceptions import ConnectException
from worker.api.header_converter import (
    SimpleHeaderConverter,
    decode_headers,
    encode_headers,
)
from worker.api.headers import HeaderConverter
from worker.api.records import SinkRecord
from worker.api.task import ErrantRecordReporter
from worker.clients.kafka_types import ConsumedMessage
from worker.runtime.chain import TransformationChain
from worker.runtime.errors.dead_letter_queue import DeadLetterQueueReporter
from worker.runtime.errors.handling import (
    ErrorHandlingConfig,
    ErrorReporter,
    LogReporter,
    ProcessingContext,
    RetryWithToleranceOperator,
    Stage,
)
from worker.storage.base import TaskId

log = logging.getLogger(__name__)

TIMESTAMP_TYPES = {1: "CreateTime", 2: "LogAppendTime"}
#: Kafka's timestamp type names by confluent-kafka's codes (0: none), indexed on the hot path.
TIMESTAMP_NAMES = ("NoTimestampType", TIMESTAMP_TYPES[1], TIMESTAMP_TYPES[2])


def build_record(message: ConsumedMessage, key: SchemaAndValue, value: SchemaAndValue,
                 header_converter: HeaderConverter | None) -> SinkRecord:
    """The SinkRecord of a consumed message, as the task's fast path builds it, with its
    headers decoded by ``header_converter`` (None: SimpleHeaderConverter)."""
    ts_type, ts = message.timestamp()
    raw_headers = message.headers()
    headers = decode_headers(raw_headers, header_converter, message.topic()) \
        if raw_headers else None
    return SinkRecord(message.topic(), message.partition(), key[0], key[1], value[0],
                      value[1], message.offset(), ts if ts_type else None,
                      TIMESTAMP_TYPES.get(ts_type, "NoTimestampType"), headers)


def describe_consumed(message: ConsumedMessage, include_messages: bool) -> str:
    """Where the record is (always) and, only with ``errors.log.include.messages``, its
    key, value and headers, for the LogReporter."""
    text = (f", where consumed record is {{topic='{message.topic()}', "
            f"partition={message.partition()}, offset={message.offset()}")
    ts_type, ts = message.timestamp()
    if ts_type in TIMESTAMP_TYPES:
        text += f", timestamp={ts}, timestampType={TIMESTAMP_TYPES[ts_type]}"
    if include_messages:
        text += (f", key={message.key()!r}, value={message.value()!r}, "
                 f"headers={message.headers() or []!r}")
    return text + "}"


_TIMESTAMP_CODES = {name: code for code, name in TIMESTAMP_TYPES.items()}


class ReportedRecord:
    """A SinkRecord a task reported (KIP-610) in the shape of a consumed message: at its
    original coordinates, key, value and headers serialized again with the connector's
    converters (the bytes consumed are not kept per record)."""

    def __init__(self, record: SinkRecord, key: bytes | None, value: bytes | None,
                 header_converter: HeaderConverter | None = None) -> None:
        self._record, self._key, self._value = record, key, value
        self._headers = encode_headers(record.headers, header_converter, record.topic) \
            if record.headers else None

    def error(self) -> None:
        return None

    def topic(self) -> str:
        return self._record.original_topic

    def partition(self) -> int:
        return self._record.original_kafka_partition or 0

    def offset(self) -> int:
        return self._record.original_kafka_offset

    def key(self) -> bytes | None:
        return self._key

    def value(self) -> bytes | None:
        return self._value

    def headers(self) -> list[tuple[str, bytes | None]] | None:
        return self._headers

    def timestamp(self) -> tuple[int, int]:
        record = self._record
        if record.timestamp is None:
            return 0, -1
        return _TIMESTAMP_CODES.get(record.timestamp_type, 1), record.timestamp


class SinkErrorHandler:
    """One per sink task: the operator, its reporters and the DLQ (if configured)."""

    def __init__(self, task_id: TaskId, config: ErrorHandlingConfig,
                 operator: RetryWithToleranceOperator, key_converter: Converter,
                 value_converter: Converter, chain: TransformationChain,
                 dlq: DeadLetterQueueReporter | None = None) -> None:
        self.task_id = task_id
        self.operator = operator
        self.dlq = dlq
        reporters: list[ErrorReporter] = []
        if config.log_enable:
            reporters.append(LogReporter(task_id, config.log_include_messages,
                                         describe_consumed))
        if dlq is not None:
            reporters.append(dlq)
        operator.reporters = reporters
        self._key_converter = key_converter
        self._value_converter = value_converter
        self._chain = chain

    def start(self) -> None:
        """Set up the DLQ (topic, producer); on the task's thread before the first poll."""
        if self.dlq is not None:
            self.dlq.start()

    def recover(self, message: ConsumedMessage, header_converter: HeaderConverter | None = None
                ) -> SinkRecord | None:
        """Run a record that failed once again, stage by stage, with retries
        (``header_converter``: the task's, which building the record runs; None is
        SimpleHeaderConverter, the default).

        Returns the record when it now succeeds; None when it failed for good and the
        failure is tolerated (it was reported; the caller skips it) or a transformation
        dropped it. Raises ConnectException when the failure is not tolerated.
        """
        operator = self.operator
        context = ProcessingContext(message)
        topic = message.topic()
        key_converter, value_converter = self._key_converter, self._value_converter
        key = operator.execute(context, Stage.KEY_CONVERTER, type(key_converter),
                               lambda: key_converter.to_connect_data(topic, message.key()))
        value = operator.execute(context, Stage.VALUE_CONVERTER, type(value_converter),
                                 lambda: value_converter.to_connect_data(topic,
                                                                         message.value()))
        if context.failed or key is None or value is None:
            self._skipped(message, context)
            return None
        record: Any = operator.execute(
            context, Stage.HEADER_CONVERTER, type(header_converter or SimpleHeaderConverter()),
            lambda: build_record(message, key, value, header_converter))
        if context.failed:
            self._skipped(message, context)
            return None
        chain = self._chain
        for index in range(len(chain)):
            current = record
            record = operator.execute(
                context, Stage.TRANSFORMATION, chain.transform_class(index),
                lambda i=index, r=current: chain.apply_stage(i, r))  # type: ignore[misc]
            if context.failed:
                self._skipped(message, context)
                return None
            if record is None:
                return None
        return record

    def _skipped(self, message: ConsumedMessage, context: ProcessingContext) -> None:
        # Coordinates only: record contents are logged by the LogReporter, when asked.
        log.debug("Task %s-%d: skipped %s-%d@%d after an error in stage %s",
                  self.task_id.connector, self.task_id.task, message.topic(),
                  message.partition(), message.offset(), context.stage)

    def errant_record_reporter(
            self, task_class: type,
            header_converter: Callable[[], HeaderConverter | None] = lambda: None
    ) -> ErrantRecordReporter | None:
        """KIP-610's reporter for ``SinkTaskContext``: only with a dead letter queue or
        ``errors.log.enable``, as in Kafka. ``header_converter`` gives the task's (which
        the worker sets after the task is built)."""
        if self.dlq is None and not self.operator.reporters:
            return None
        return _ErrantRecordReporter(self, task_class, header_converter)

    def report_errant(self, record: SinkRecord, error: BaseException, task_class: type,
                      header_converter: HeaderConverter | None = None) -> None:
        key_converter, value_converter = self._key_converter, self._value_converter
        message = ReportedRecord(
            record, key_converter.from_connect_data(record.topic, record.key_schema, record.key),
            value_converter.from_connect_data(record.topic, record.value_schema, record.value),
            header_converter)
        self.operator.execute_failed(ProcessingContext(message), Stage.TASK_PUT, task_class,
                                     error)
        # Acknowledged before report() returns: a task may wait on the future inside put(),
        # where nothing else would serve the producer's delivery reports.
        if self.dlq is not None and not self.dlq.flush():
            self.dlq.raise_if_failed()
            raise ConnectException("The dead letter queue did not acknowledge a reported "
                                   f"record within the flush timeout (topic={self.dlq.topic})")

    def before_commit(self) -> bool:
        """Every DLQ record is acknowledged (so offsets past it may be committed)."""
        return self.dlq is None or self.dlq.flush()

    def raise_if_failed(self) -> None:
        if self.dlq is not None:
            self.dlq.raise_if_failed()

    def close(self) -> None:
        try:
            self.operator.close()
        except ConnectException:
            log.exception("Task %s-%d: closing the error reporters failed",
                          self.task_id.connector, self.task_id.task)


class _ErrantRecordReporter(ErrantRecordReporter):
    def __init__(self, handler: SinkErrorHandler, task_class: type,
                 header_converter: Callable[[], HeaderConverter | None]) -> None:
        self._handler = handler
        self._task_class = task_class
        self._header_converter = header_converter

    def report(self, record: SinkRecord, error: BaseException) -> Future[None]:
        self._handler.report_errant(record, error, self._task_class, self._header_converter())
        done: Future[None] = Future()
        done.set_result(None)
        return done
