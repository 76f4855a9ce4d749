"""WorkerSourceTask: poll → transforms → converters → produce; offsets after acknowledgement."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import KafkaException, Producer

from worker.api.converter import Converter
from worker.api.exceptions import ConnectException, RetriableException
from worker.api.records import SourceRecord
from worker.api.task import RecordMetadata, SourceTask, SourceTaskContext
from worker.runtime.chain import TransformationChain
from worker.runtime.offsets import StoreOffsetReader, SubmittedOffsets
from worker.runtime.status import StatusReporter
from worker.runtime.worker_task import WorkerTask
from worker.storage.base import OffsetBackingStore, TargetState, TaskId

log = logging.getLogger(__name__)

RETRY_BACKOFF_S = 0.1


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


def encode_headers(headers: list[tuple[str, Any]]) -> list[tuple[str, bytes | None]]:
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
                 offset_flush_timeout_ms: int, tolerate_errors: bool = False,
                 on_topic: Callable[[str], None] | None = None) -> None:
        super().__init__(task_id, task, task_config, target_state, status)
        self.source_task: SourceTask = task
        self._producer_config = producer_config
        self._key_converter = key_converter
        self._value_converter = value_converter
        self._chain = chain
        self._offset_store = offset_store
        self._flush_interval_s = offset_flush_interval_ms / 1000
        self._flush_timeout_s = offset_flush_timeout_ms / 1000
        self._tolerate_errors = tolerate_errors
        self._on_topic = on_topic
        self._seen_topics: set[str] = set()
        self._submitted = SubmittedOffsets()
        self._producer: Producer | None = None
        # Per-record acknowledgement callbacks cost time; only pay for them when the task
        # overrides commit_record.
        self._wants_commit_record = (type(task).commit_record is not SourceTask.commit_record)

    def initialize(self) -> None:
        self._producer = Producer(self._producer_config)
        reader = StoreOffsetReader(self._offset_store, self.id.connector)
        self.source_task.initialize(_Context(self.task_config, reader))
        self.source_task.start(self.task_config)

    def execute(self) -> None:
        next_commit = time.monotonic() + self._flush_interval_s
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
                self._send(records)
            self._producer.poll(0)  # type: ignore[union-attr]
            error = self._submitted.first_error()
            if error is not None:
                raise ConnectException("Unrecoverable exception from producer send callback"
                                       ) from error
            if time.monotonic() >= next_commit:
                self.commit_offsets()
                next_commit = time.monotonic() + self._flush_interval_s

    def _send(self, records: list[SourceRecord]) -> None:
        producer = self._producer
        assert producer is not None
        batch = self._submitted.new_batch()
        track = self._submitted.track
        chain = self._chain
        key_conv = self._key_converter.from_connect_data
        value_conv = self._value_converter.from_connect_data
        produce = producer.produce
        for record in records:
            track(batch, record.source_partition, record.source_offset)
            out = chain.apply(record) if chain else record
            if out is None:
                if self._wants_commit_record:
                    self.source_task.commit_record(record, None)
                continue
            topic = out.topic
            if topic not in self._seen_topics:
                self._first_use(topic)
            try:
                key = key_conv(topic, out.key_schema, out.key)
                value = value_conv(topic, out.value_schema, out.value)
            except Exception:
                if not self._tolerate_errors:
                    raise
                log.warning("Task %s: skipped a record that failed conversion", self.id,
                            exc_info=True)
                continue
            kwargs: dict[str, Any] = {}
            if out.kafka_partition is not None:
                kwargs["partition"] = out.kafka_partition
            if out.timestamp is not None:
                kwargs["timestamp"] = out.timestamp
            if out.headers:
                kwargs["headers"] = encode_headers(out.headers)
            callback = (self._record_callback(batch, record) if self._wants_commit_record
                        else batch.on_delivery)
            batch.pending += 1
            while True:
                try:
                    produce(topic, value, key, on_delivery=callback, **kwargs)
                    break
                except BufferError:
                    # librdkafka's queue is full: serve delivery reports, then retry.
                    producer.poll(0.05)
                    if self.stopping.is_set() and producer.poll(0) == 0:
                        batch.pending -= 1
                        batch.error = ConnectException("Task stopped while the producer "
                                                       "queue was full")
                        return
                except KafkaException as exc:
                    batch.pending -= 1
                    raise ConnectException(f"Failed to send a record to {topic}") from exc

    def _record_callback(self, batch: Any, record: SourceRecord) -> Callable[[Any, Any], None]:
        def on_delivery(err: Any, msg: Any) -> None:
            batch.on_delivery(err, msg)
            if err is None:
                metadata = RecordMetadata(msg.topic(), msg.partition(), msg.offset(),
                                          msg.timestamp()[1])
                try:
                    self.source_task.commit_record(record, metadata)
                except Exception:
                    log.exception("Task %s: commit_record raised", self.id)
        return on_delivery

    def _first_use(self, topic: str) -> None:
        self._seen_topics.add(topic)
        if self._on_topic is not None:
            self._on_topic(topic)

    def commit_offsets(self, flush: bool = False) -> None:
        """Commit offsets of acknowledged records (after flushing the producer if asked)."""
        producer = self._producer
        if producer is None:
            return
        if flush:
            remaining = producer.flush(self._flush_timeout_s)
            if remaining:
                log.warning("Task %s: %d records still unacknowledged after %.1f s; their "
                            "offsets are not committed", self.id, remaining,
                            self._flush_timeout_s)
        else:
            producer.poll(0)
        items = self._submitted.take_committable()
        if not items:
            return
        try:
            self._offset_store.put(self.id.connector, items)
        except Exception:
            self._submitted.restore(items)
            log.exception("Task %s: offset commit failed; will retry", self.id)
            return
        try:
            self.source_task.commit()
        except Exception:
            log.exception("Task %s: commit() raised", self.id)

    def close(self) -> None:
        try:
            # Offsets of acknowledged records are safe to commit even after a failure.
            self.commit_offsets(flush=not self.failed)
            if self.failed and not self.stopping.is_set():
                self.source_task.stop()
        finally:
            self._key_converter.close()
            self._value_converter.close()
            self._chain.close()
            if self._producer is not None:
                self._producer.flush(0)
