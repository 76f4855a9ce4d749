"""The slow path of a source task's record processing: what happens to a polled record once
transforming or converting it raised.

``WorkerSourceTask._send`` runs the transformation chain and the converters directly. When
a record raises there, ``SourceErrorHandler.recover`` runs it again one stage at a time
through the ``RetryWithToleranceOperator`` — each transformation, then the key, value
and header converters, Kafka's order for sources — so retriable errors are retried and the
failure is logged (``errors.log.enable``) and tolerated or not. Sources have no dead letter queue.

``send_failed`` is KIP-779: a record the producer refused or could not deliver for good is,
with ``errors.tolerance=all``, reported as a failure of stage ``KAFKA_PRODUCE`` and skipped
(its offset may then be committed), instead of failing the task.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from worker.api.converter import Converter
from worker.api.header_converter import SimpleHeaderConverter, encode_headers
from worker.api.headers import HeaderConverter
from worker.api.records import SourceRecord
from worker.runtime.chain import TransformationChain
from worker.runtime.errors.handling import (
    ErrorHandlingConfig,
    LogReporter,
    ProcessingContext,
    RetryWithToleranceOperator,
    Stage,
)
from worker.storage.base import TaskId


def describe_source(record: SourceRecord, include_messages: bool) -> str:
    """Kafka logs a source record only with ``errors.log.include.messages`` (its key,
    value and headers are the record's contents)."""
    if not include_messages:
        return ""
    return (f", where source record is = SourceRecord{{topic={record.topic}, "
            f"kafkaPartition={record.kafka_partition}, "
            f"sourcePartition={record.source_partition}, "
            f"sourceOffset={record.source_offset}, key={record.key!r}, "
            f"value={record.value!r}, timestamp={record.timestamp}, "
            f"headers={list(record.headers or [])!r}}}")


class Recovered(NamedTuple):
    record: Any  # the transformed SourceRecord
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]] | None


class SourceErrorHandler:
    """One per source task: the operator and its log reporter."""

    def __init__(self, task_id: TaskId, config: ErrorHandlingConfig,
                 operator: RetryWithToleranceOperator, key_converter: Converter,
                 value_converter: Converter, chain: TransformationChain) -> None:
        self.operator = operator
        if config.log_enable:
            operator.reporters = [LogReporter(task_id, config.log_include_messages,
                                              describe_source)]
        self._key_converter = key_converter
        self._value_converter = value_converter
        self._chain = chain

    def recover(self, original: SourceRecord, header_converter: HeaderConverter | None = None
                ) -> Recovered | None:
        """Run a record that failed once again, stage by stage, with retries
        (``header_converter``: the task's; None is SimpleHeaderConverter, the default).

        Returns the transformed record and its serialized key, value and headers when it
        now succeeds; None when it failed for good and that is tolerated, or a transformation
        dropped it. Raises ConnectException when the failure is not tolerated.
        """
        operator = self.operator
        context = ProcessingContext(original)
        record: Any = original
        chain = self._chain
        for index in range(len(chain)):
            current = record
            record = operator.execute(
                context, Stage.TRANSFORMATION, chain.transform_class(index),
                lambda i=index, r=current: chain.apply_stage(i, r))  # type: ignore[misc]
            if context.failed or record is None:
                return None
        out: SourceRecord = record
        key_converter, value_converter = self._key_converter, self._value_converter
        key = operator.execute(
            context, Stage.KEY_CONVERTER, type(key_converter),
            lambda: key_converter.from_connect_data(out.topic, out.key_schema, out.key))
        value = operator.execute(
            context, Stage.VALUE_CONVERTER, type(value_converter),
            lambda: value_converter.from_connect_data(out.topic, out.value_schema,
                                                      out.value))
        headers = None
        raw = out._headers  # the raw slot: reading .headers would create empty headers
        if raw:
            headers = operator.execute(
                context, Stage.HEADER_CONVERTER,
                type(header_converter or SimpleHeaderConverter()),
                lambda: encode_headers(raw, header_converter, out.topic))
        if context.failed:
            return None
        return Recovered(out, key, value, headers)

    @property
    def tolerates_send_failures(self) -> bool:
        """KIP-779: ``errors.tolerance=all`` skips records the producer failed to send."""
        return self.operator.tolerate_all

    def send_failed(self, original: SourceRecord, error: BaseException,
                    executing_class: type) -> None:
        """Report a record the producer failed to send for good (stage ``KAFKA_PRODUCE``,
        logged when ``errors.log.enable``, counted in task-error-metrics). Raises
        ConnectException unless ``errors.tolerance=all``."""
        self.operator.execute_failed(ProcessingContext(original), Stage.KAFKA_PRODUCE,
                                     executing_class, error)

    def close(self) -> None:
        self.operator.close()
