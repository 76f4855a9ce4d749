"""WorkerSourceTask: poll → transforms → converters → produce; offsets after acknowledgement."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from typing import Any

from confluent_kafka import KafkaException, Producer

from worker.api.converter import Converter
from worker.api.exceptions import ConnectException, RetriableException
from worker.api.records import SourceRecord
from worker.api.task import RecordMetadata, SourceTask, SourceTaskContext
from worker.runtime.chain import TransformationChain
from worker.runtime.error_handling import (
    ErrorHandlingConfig,
    RetryInterrupted,
    RetryWithToleranceOperator,
)
from worker.runtime.offsets import OffsetTracker, StoreOffsetReader
from worker.runtime.source_errors import SourceErrorHandler
from worker.runtime.status import StatusReporter
from worker.runtime.worker_task import WorkerTask
from worker.storage.base import OffsetBackingStore, TargetState, TaskId

log = logging.getLogger(__name__)

RETRY_BACKOFF_S = 0.1
DELIVERY_POLL_INTERVAL_S = 0.05
_NOTHING = object()


class _Context(SourceTaskContext):
    def __init__(self, configs: dict[str, str], reader: StoreOffsetReader) -> None:
        self._configs = configs
        self._reader = reader

    @property
    def configs(self) -> dict[str, str]:
        return self._configs

    @property
    def offset_storage_reader(self) -> StoreOffsetReader:
        return self._reader


def encode_headers(headers: Iterable[tuple[str, Any]]) -> list[tuple[str, bytes | None]]:
    out: list[tuple[str, bytes | None]] = []
    for key, value in headers:
        if value is None or isinstance(value, bytes):
            out.append((key, value))
        else:
            out.append((key, str(value).encode("utf-8")))
    return out


class WorkerSourceTask(WorkerTask):
    def __init__(self, task_id: TaskId, task: SourceTask, task_config: dict[str, str],
                 target_state: TargetState, status: StatusReporter, *,
                 producer_config: dict[str, str], key_converter: Converter,
                 value_converter: Converter, chain: TransformationChain,
                 offset_store: OffsetBackingStore, offset_flush_interval_ms: int,
                 offset_flush_timeout_ms: int, error_config: ErrorHandlingConfig | None = None,
                 on_topic: Callable[[str], None] | None = None) -> None:
        super().__init__(task_id, task, task_config, target_state, status, on_topic)
        self.source_task: SourceTask = task
        self._producer_config = producer_config
        self._key_converter = key_converter
        self._value_converter = value_converter
        self._chain = chain
        self._offset_store = offset_store
        self._flush_interval_s = offset_flush_interval_ms / 1000
        self._flush_timeout_s = offset_flush_timeout_ms / 1000
        # errors.*: retries, tolerance and the error log, used only once a record has
        # failed (the slow path, worker.runtime.source_errors).
        errors = error_config or ErrorHandlingConfig()
        self._errors = SourceErrorHandler(
            task_id, errors, RetryWithToleranceOperator(errors, self.stopping),
            key_converter, value_converter, chain)
        self._tracker = OffsetTracker()
        self._delivery_error: KafkaException | None = None
        self._producer: Producer | None = None
        # Per-record acknowledgement callbacks cost time; only pay for them when the task
        # overrides commit_record.
        self._wants_commit_record = (type(task).commit_record is not SourceTask.commit_record)

    def initialize(self) -> None:
        config: dict[str, Any] = dict(self._producer_config)
        # Successful deliveries are confirmed in bulk by flush() at commit time; only
        # failures call back (per-record callbacks cost more than the rest of the path),
        # unless the task wants commit_record for each record.
        config["on_delivery"] = self._on_delivery
        if not self._wants_commit_record:
            config["delivery.report.only.error"] = True
        self._producer = Producer(config)
        reader = StoreOffsetReader(self._offset_store, self.id.connector)
        self.source_task.initialize(_Context(self.task_config, reader))
        self.source_task.start(self.task_config)

    def execute(self) -> None:
        producer = self._producer
        assert producer is not None
        next_commit = time.monotonic() + self._flush_interval_s
        next_poll = 0.0
        while not self.stopping.is_set():
            if not self.await_unpaused():
                break
            try:
                records = self.source_task.poll()
            except RetriableException:
                log.warning("Task %s: retriable error from poll(); retrying", self.id)
                self.stopping.wait(RETRY_BACKOFF_S)
                records = None
            if records:
                try:
                    self._send(records)
                except RetryInterrupted:
                    # Stopping during a retry: the batch's offsets are not committed, so
                    # it is polled again after a restart.
                    break
            now = time.monotonic()
            if now >= next_poll:
                # Serves delivery-failure reports; costs ~0.3 ms, so not after every batch.
                producer.poll(0)
                next_poll = now + DELIVERY_POLL_INTERVAL_S
            self._raise_delivery_error()
            if time.monotonic() >= next_commit:
                self.commit_offsets()
                next_commit = time.monotonic() + self._flush_interval_s

    def _on_delivery(self, err: Any, _msg: Any) -> None:
        # librdkafka calls this from producer.poll()/flush(), i.e. on this task's thread.
        if err is not None and self._delivery_error is None:
            self._delivery_error = KafkaException(err)

    def _record_callback(self, record: SourceRecord) -> Callable[[Any, Any], None]:
        """Per-record delivery callback, only for tasks that override commit_record."""
        def on_delivery(err: Any, msg: Any) -> None:
            if err is not None:
                self._on_delivery(err, msg)
                return
            metadata = RecordMetadata(msg.topic(), msg.partition(), msg.offset(),
                                      msg.timestamp()[1])
            try:
                self.source_task.commit_record(record, metadata)
            except Exception:
                log.exception("Task %s: commit_record raised", self.id)
        return on_delivery

    def _raise_delivery_error(self) -> None:
        if self._delivery_error is not None:
            raise ConnectException("Unrecoverable exception from producer send callback"
                                   ) from self._delivery_error

    def _send(self, records: list[SourceRecord]) -> None:
        producer = self._producer
        assert producer is not None
        chain = self._chain if self._chain else None
        key_conv = self._key_converter.from_connect_data
        value_conv = self._value_converter.from_connect_data
        produce = producer.produce
        seen = self.seen_topics
        plain = not self._wants_commit_record
        # Sources often give a whole batch one key object (or None): converters are pure,
        # so the previous record's serialized key is reused when the same object repeats.
        last_key: Any = _NOTHING
        last_key_topic = last_key_schema = key_bytes = None
        for record in records:
            try:
                out = chain.apply(record) if chain is not None else record
                if out is None:
                    if not plain:
                        self.source_task.commit_record(record, None)
                    continue
                topic = out.topic
                if (out.key is not last_key or topic is not last_key_topic
                        or out.key_schema is not last_key_schema):
                    last_key, last_key_topic, last_key_schema = out.key, topic, out.key_schema
                    key_bytes = key_conv(topic, last_key_schema, last_key)
                key = key_bytes
                value = value_conv(topic, out.value_schema, out.value)
            except Exception:
                # The slow path: run the record again stage by stage, with retries and the
                # error log; errors.tolerance=none raises (the task fails), all skips it.
                last_key = _NOTHING
                recovered = self._errors.recover(record)
                if recovered is None:
                    if not plain:
                        self.source_task.commit_record(record, None)
                    continue
                out, key, value = recovered
                topic = out.topic
            if topic not in seen:
                self.record_topic(topic)
            if plain and out.kafka_partition is None and out.timestamp is None \
                    and not out.headers:
                try:
                    produce(topic, value, key)  # the hot path: no per-record extras
                except (BufferError, KafkaException):
                    self._produce(produce, topic, value, key)
            else:
                kwargs: dict[str, Any] = {}
                if not plain:
                    kwargs["on_delivery"] = self._record_callback(record)
                if out.kafka_partition is not None:
                    kwargs["partition"] = out.kafka_partition
                if out.timestamp is not None:
                    kwargs["timestamp"] = out.timestamp
                if out.headers:
                    kwargs["headers"] = encode_headers(out.headers)
                self._produce(produce, topic, value, key, **kwargs)
        # Only a fully submitted batch counts: if it failed half-way, its offsets must not
        # be committed by close() (its later records were never sent).
        self._tracker.track(records)

    def _produce(self, produce: Callable[..., None], topic: str, value: bytes | None,
                 key: bytes | None, **kwargs: Any) -> None:
        while True:
            try:
                produce(topic, value, key, **kwargs)
                return
            except BufferError:
                # librdkafka's queue is full: serve delivery reports, then retry.
                self._producer.poll(0.05)  # type: ignore[union-attr]
                if self.stopping.is_set():
                    raise ConnectException("Task stopped while the producer queue was full"
                                           ) from None
            except KafkaException as exc:
                raise ConnectException(f"Failed to send a record to {topic}") from exc

    def commit_offsets(self) -> bool:
        """Flush the producer, then commit the offsets of everything it acknowledged.

        Returns False (and commits nothing) if records are still unacknowledged after
        ``offset.flush.timeout.ms`` or a delivery failed; the offsets are kept for the
        next attempt.
        """
        producer = self._producer
        if producer is None or not self._tracker:
            return True
        remaining = producer.flush(self._flush_timeout_s)
        if remaining:
            log.warning("Task %s: %d records still unacknowledged after %.1f s; offsets "
                        "not committed this time", self.id, remaining, self._flush_timeout_s)
            return False
        if self._delivery_error is not None:
            return False
        items = self._tracker.take()
        try:
            self._offset_store.put(self.id.connector, items)
        except Exception:
            self._tracker.restore(items)
            log.exception("Task %s: offset commit failed; will retry", self.id)
            return False
        try:
            self.source_task.commit()
        except Exception:
            log.exception("Task %s: commit() raised", self.id)
        return True

    def close(self) -> None:
        try:
            # After a failure, commit only if every record sent was still acknowledged.
            self.commit_offsets()
            if self.failed and not self.stopping.is_set():
                self.source_task.stop()
        finally:
            self._errors.close()
            self._key_converter.close()
            self._value_converter.close()
            self._chain.close()
            if self._producer is not None:
                self._producer.flush(0)
