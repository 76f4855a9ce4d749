"""WorkerSourceTask: poll → transforms → converters → produce; offsets after acknowledgement.

Every poll() batch is sent as one ``SubmittedBatch`` (``worker.runtime.source_offsets``): records
without a timestamp or headers go to librdkafka in one ``produce_batch`` call per run of one
topic and partition, the others one ``produce()`` each. Delivery callbacks (the batch's
``acknowledge``) are served by ``producer.poll(0)`` after each batch on this thread:

- records with a key or a partition carry one each;
- keyless records go to one partition per topic and batch (``StickyPartitions``, as Kafka's
  sticky partitioner) and only the last of each run carries one, when the producer
  acknowledges in order without gaps (``kafka_clients.acknowledges_in_order``: the
  worker's default settings). librdkafka's delivery reports cost more task-thread time per
  record than ``produce()`` itself, so this is the larger part of the source throughput;
- tasks that override ``commit_record``, and tasks with ``errors.tolerance=all``, send every
  record with its own callback: under that tolerance a record the producer fails to send
  for good (or refuses: too large, unknown partition) is reported as a ``KAFKA_PRODUCE``
  failure and skipped, and the task goes on (KIP-779).

The periodic offset commit writes what is acknowledged at that moment — no producer flush,
no waiting; only the final commit on stop waits (``offset.flush.timeout.ms``) for what is
still in flight.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Producer

from worker.api.converter import Converter
from worker.api.exceptions import ConnectException, RetriableException
from worker.api.header_converter import encode_headers
from worker.api.records import SourceRecord
from worker.api.task import RecordMetadata, SourceTask, SourceTaskContext
from worker.clients.factories import CLIENT_LOG, acknowledges_in_order
from worker.clients.sticky_partitions import UNASSIGNED, StickyPartitions
from worker.runtime.chain import TransformationChain
from worker.runtime.errors.handling import (
    ErrorHandlingConfig,
    RetryInterrupted,
    RetryWithToleranceOperator,
)
from worker.runtime.errors.source import SourceErrorHandler
from worker.runtime.metrics.clients import StatsListener
from worker.runtime.metrics.tasks import TaskMetrics
from worker.runtime.pending_records import PendingRecords
from worker.runtime.source_offsets import StoreOffsetReader, SubmittedBatch, SubmittedRecords
from worker.runtime.status import StatusReporter
from worker.runtime.topic_creation import TopicCreator
from worker.runtime.worker_task import WorkerTask
from worker.storage.base import OffsetBackingStore, TargetState, TaskId

log = logging.getLogger(__name__)

RETRY_BACKOFF_S = 0.1
QUEUE_FULL_WAIT_S = 0.05
_NOTHING = object()
_QUEUE_FULL = KafkaError._QUEUE_FULL
# produce() refusing the record itself (Java's producer reports these to the callback).
REFUSED = frozenset({KafkaError.MSG_SIZE_TOO_LARGE, KafkaError.INVALID_MSG_SIZE,
                     KafkaError._UNKNOWN_PARTITION, KafkaError._UNKNOWN_TOPIC,
                     KafkaError.UNKNOWN_TOPIC_OR_PART})


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


class WorkerSourceTask(WorkerTask):
    native_kind = "src"

    def __init__(self, task_id: TaskId, task: SourceTask, task_config: dict[str, str],
                 target_state: TargetState, status: StatusReporter, *,
                 producer_config: dict[str, str], key_converter: Converter,
                 value_converter: Converter, chain: TransformationChain,
                 offset_store: OffsetBackingStore, offset_flush_interval_ms: int,
                 offset_flush_timeout_ms: int, error_config: ErrorHandlingConfig | None = None,
                 on_topic: Callable[[str], None] | None = None,
                 metrics: TaskMetrics | None = None,
                 topic_creator: TopicCreator | None = None) -> None:
        super().__init__(task_id, task, task_config, target_state, status, on_topic, metrics)
        self.source_task: SourceTask = task
        self._creator = topic_creator  # KIP-158: creates topics on their first use
        self._producer_config = producer_config
        self._key_converter = key_converter
        self._value_converter = value_converter
        self._chain = chain
        self._offset_store = offset_store
        self._flush_interval_s = offset_flush_interval_ms / 1000
        self._flush_timeout_s = offset_flush_timeout_ms / 1000
        # errors.*: retries, tolerance and the error log, used only once a record has
        # failed (the slow path, worker.runtime.errors.source).
        errors = error_config or ErrorHandlingConfig()
        self._errors = SourceErrorHandler(
            task_id, errors, RetryWithToleranceOperator(errors, self.stopping,
                                                        metrics=self.metrics.errors),
            key_converter, value_converter, chain)
        self._submitted = SubmittedRecords()
        self._producer: Producer | None = None
        # source-record-write-*: records handed to the producer, and how many of them had
        # left its queue (acknowledged) when last counted; counted once per batch.
        self._sent = 0
        self._written = 0
        # Per-record acknowledgement callbacks that call the task cost more; only pay for
        # them when the task overrides commit_record.
        self._wants_commit_record = (type(task).commit_record is not SourceTask.commit_record)
        # KIP-779: with errors.tolerance=all a record the producer fails to send is
        # reported and skipped, so every record carries a callback that knows it.
        self._per_record = self._wants_commit_record or self._errors.tolerates_send_failures
        self._send_failures = 0  # records the producer failed to send, tolerated
        self._failures_counted = 0
        # Set once the producer exists, when one delivery report per partition and batch
        # can stand for the batch's keyless records (kafka_clients.acknowledges_in_order).
        self._sticky: StickyPartitions | None = None
        self._fatal: KafkaError | None = None

    def initialize(self) -> None:
        # Successful deliveries must be reported too: they are what makes offsets
        # committable (so no delivery.report.only.error). stats_cb: librdkafka's statistics
        # → the client metrics of /metrics, served by poll() on this thread.
        self._producer = Producer({**self._producer_config, "error_cb": self._on_client_error,
                                   "logger": CLIENT_LOG,
                                   "stats_cb": StatsListener(self.metrics)})
        if not self._per_record and acknowledges_in_order(self._producer_config):
            self._sticky = StickyPartitions(self._producer)
        reader = StoreOffsetReader(self._offset_store, self.id.connector)
        self.source_task.initialize(_Context(self.task_config, reader))
        self.source_task.start(self.task_config)

    def execute(self) -> None:
        producer = self._producer
        assert producer is not None
        submitted = self._submitted
        metrics = self.metrics
        next_commit = time.monotonic() + self._flush_interval_s
        while not self.stopping.is_set():
            if not self.await_unpaused():
                break
            try:
                started = time.monotonic()
                records = self.source_task.poll()
                if records:
                    metrics.record_poll(len(records), time.monotonic() - started)
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
            producer.poll(0)  # serves delivery reports: the acknowledgements
            self._count_written(producer)
            if submitted.error is not None:
                raise ConnectException("Unrecoverable exception from producer send callback"
                                       ) from KafkaException(submitted.error)
            if self._fatal is not None:
                raise ConnectException("The producer failed for good"
                                       ) from KafkaException(self._fatal)
            if time.monotonic() >= next_commit:
                self.commit_offsets()
                next_commit = time.monotonic() + self._flush_interval_s

    def _on_client_error(self, err: KafkaError) -> None:
        # librdkafka's client-level errors, served by poll() on this thread. A fatal one
        # (e.g. the gapless guarantee broken) ends the producer: the task fails.
        if err.fatal():
            log.error("Task %s: fatal producer error: %s", self.id, err)
            self._fatal = err
        else:
            # Retried by librdkafka, which logs the cause too: with its lines, under the
            # logger whose repeats are summarised (worker/util/logs.py).
            CLIENT_LOG.warning("Task %s: producer error: %s", self.id, err)

    def _count_written(self, producer: Producer) -> None:
        # librdkafka's queue length counts what is neither acknowledged nor failed yet; a
        # failure fails the task unless tolerated (counted), so the rest was written.
        written = self._sent - len(producer) - self._send_failures
        failed = self._send_failures - self._failures_counted
        if written > self._written or failed:
            self.metrics.record_write(max(0, written - self._written), failed)
            self._written = max(written, self._written)
            self._failures_counted = self._send_failures

    def _record_callback(self, record: SourceRecord, batch: SubmittedBatch
                         ) -> Callable[[Any, Any], None]:
        """Per-record delivery callback, for tasks that override commit_record or tolerate
        send failures (KIP-779: the failed record is reported, then counts as acknowledged,
        as Kafka's worker does)."""
        acknowledge = batch.acknowledge
        tolerate = self._errors.tolerates_send_failures
        wants = self._wants_commit_record

        def on_delivery(err: Any, msg: Any) -> None:
            if err is not None and tolerate:
                self._send_failures += 1
                self._send_failed(record, msg.topic(), KafkaException(err))
                acknowledge(None, msg)
                return
            acknowledge(err, msg)
            if err is not None or not wants:
                return
            metadata = RecordMetadata(msg.topic(), msg.partition(), msg.offset(),
                                      msg.timestamp()[1])
            try:
                self.source_task.commit_record(record, metadata)
            except Exception:
                log.exception("Task %s: commit_record raised", self.id)
        return on_delivery

    def _send(self, records: list[SourceRecord]) -> None:
        producer = self._producer
        assert producer is not None
        batch = self._submitted.new_batch()
        acknowledge = batch.acknowledge
        chain = self._chain if self._chain else None
        key_conv = self._key_converter.from_connect_data
        value_conv = self._value_converter.from_connect_data
        produce: Callable[..., None] = producer.produce
        seen = self.seen_topics
        header_converter = self.header_converter
        plain = not self._per_record
        sticky = self._sticky  # set when one report per partition and batch is enough
        sticky_partition: dict[str, int] = {}
        # Sources often give a whole batch one key object (or None): converters are pure,
        # so the previous record's serialized key is reused when the same object repeats.
        last_key: Any = _NOTHING
        last_key_topic = last_key_schema = key_bytes = None
        # Consecutive records for one topic (and partition) without timestamp or headers go
        # to librdkafka in one produce_batch call; the others one produce() each.
        out_run = PendingRecords(batch, produce, self._produce, self._produce_batch)
        skipped = 0
        for record in records:
            try:
                out = chain.apply(record) if chain is not None else record
                if out is None:
                    skipped += 1
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
                # The raw slot: reading .headers would give a headerless record headers.
                headers = encode_headers(out._headers, header_converter, topic) \
                    if out._headers else None
            except Exception:
                # The slow path: run the record again stage by stage, with retries and the
                # error log; errors.tolerance=none raises (the task fails), all skips it.
                last_key = _NOTHING
                recovered = self._errors.recover(record, header_converter)
                if recovered is None:
                    skipped += 1
                    if not plain:
                        self.source_task.commit_record(record, None)
                    continue
                out, key, value, headers = recovered
                topic = out.topic
            if topic not in seen:
                if self._creator is not None:  # before the topic's first record is sent
                    self._creator.ensure(topic)
                self.record_topic(topic)
            partition = out.kafka_partition
            acked = True  # this record carries a delivery callback
            if partition is None:
                partition = UNASSIGNED
                if sticky is not None and key is None:
                    # Keyless: this batch's partition of the topic; only the last such
                    # record per topic needs a delivery report (see PendingRecords).
                    partition = sticky_partition.get(topic, -2)
                    if partition == -2:
                        partition = sticky_partition[topic] = sticky.choose(topic)
                    acked = partition == UNASSIGNED
            if plain and out.timestamp is None and headers is None:
                out_run.add(topic, partition, acked, {"value": value, "key": key})
                continue
            if not acked:
                out_run.hold(topic, partition, value, out.timestamp or 0, headers)
                continue
            out_run.flush()  # keep the records' order
            # Positional (topic, value, key, partition, on_delivery, callback, timestamp,
            # headers): keyword parsing costs as much as the rest of the call. Partition -1
            # lets librdkafka's partitioner choose; timestamp 0 means "now".
            args = (topic, value, key, partition,
                    acknowledge if plain else self._record_callback(record, batch), None,
                    out.timestamp or 0, headers)
            try:
                produce(*args)  # no retry wrapper on the hot path
            except (BufferError, KafkaException):
                if not self._produce(produce, *args, record=record):
                    skipped += 1  # refused by the producer, tolerated (KIP-779)
                    continue
            batch.unacked += 1
        out_run.flush()
        # Only a fully submitted batch counts: if it failed half-way, its offsets are never
        # committed (its later records were never sent).
        self._submitted.submit(batch, records)
        self._sent += len(records) - skipped
        if skipped:
            self.metrics.record_write(0, skipped)

    def _produce_batch(self, topic: str, messages: list[dict[str, Any]], partition: int,
                       on_delivery: Callable[[Any, Any], None] | None) -> int:
        """Queue ``messages`` in order; returns how many were queued (all of them)."""
        producer = self._producer
        assert producer is not None
        total = len(messages)
        while True:
            try:
                queued = producer.produce_batch(topic, messages, partition=partition,
                                                on_delivery=on_delivery)
            except KafkaException as exc:
                raise ConnectException(f"Failed to send records to {topic}") from exc
            if queued == len(messages):
                return total
            # librdkafka takes a prefix and marks the rest with "_error": retry the rest
            # once the queue has room (a failure inside the prefix would reorder: refuse).
            first = next(i for i, m in enumerate(messages) if "_error" in m)
            rest = messages[first:]
            errors = [m.pop("_error", None) for m in rest]
            if len(rest) != len(messages) - queued or any(
                    e is None or e.code() != _QUEUE_FULL for e in errors):
                failure = next((e for e in errors if e is not None), None)
                raise ConnectException(f"Failed to send records to {topic}: {failure}")
            producer.poll(QUEUE_FULL_WAIT_S)
            if self.stopping.is_set():
                raise ConnectException("Task stopped while the producer queue was full")
            messages = rest

    def _produce(self, produce: Callable[..., None], topic: str, *args: Any,
                 record: SourceRecord | None = None) -> bool:
        """Queue one record, waiting while librdkafka's queue is full. False when the
        producer refused ``record`` itself (too large, unknown partition) and
        errors.tolerance=all skips it; otherwise a refusal raises ConnectException."""
        while True:
            try:
                produce(topic, *args)
                return True
            except BufferError:
                # librdkafka's queue is full: serve delivery reports, then retry.
                self._producer.poll(0.05)  # type: ignore[union-attr]
                if self.stopping.is_set():
                    raise ConnectException("Task stopped while the producer queue was full"
                                           ) from None
            except KafkaException as exc:
                # Java's producer reports these through the send callback, where Kafka's
                # worker tolerates them: so does this one.
                error = exc.args[0] if exc.args else None
                if (record is not None and self._errors.tolerates_send_failures
                        and isinstance(error, KafkaError) and error.code() in REFUSED):
                    self._send_failed(record, topic, exc)
                    return False
                raise ConnectException(f"Failed to send a record to {topic}") from exc

    def _send_failed(self, record: SourceRecord, topic: str, error: KafkaException) -> None:
        """KIP-779 under errors.tolerance=all: report the record that could not be sent
        (stage KAFKA_PRODUCE) and skip it; the task goes on."""
        log.error("Task %s: failed to send a record to %s: %s", self.id, topic, error)
        self._errors.send_failed(record, error, WorkerSourceTask)
        if self._wants_commit_record:
            try:
                self.source_task.commit_record(record, None)
            except Exception:
                log.exception("Task %s: commit_record raised", self.id)

    def commit_offsets(self, wait_s: float = 0.0) -> bool:
        """Write the offsets of everything acknowledged so far, then call the task's
        ``commit()``.

        Serves the pending delivery reports first; with ``wait_s`` (the final commit) it
        waits up to that long for the records still in flight. Never commits a record
        before it and every earlier record of its source partition was acknowledged, nor
        anything sent after a failed delivery. Returns False when nothing could be written
        (a store failure keeps the offsets for the next attempt).
        """
        producer = self._producer
        if producer is None or not self._submitted:
            return True
        if self.cancelled:
            # Abandoned after the graceful timeout (Kafka skips this commit too): the
            # offsets may have been reset, or the task started again, since.
            log.info("Task %s: cancelled; its offsets are not committed", self.id)
            return False
        started = time.monotonic()
        if wait_s > 0:
            remaining = producer.flush(wait_s)
            if remaining:
                log.warning("Task %s: %d records still unacknowledged after %.1f s; their "
                            "offsets are not committed", self.id, remaining, wait_s)
        else:
            producer.poll(0)
        self._count_written(producer)
        items = self._submitted.take()
        if not items:
            return True
        try:
            self._offset_store.put(self.id.connector, items)
        except Exception:
            self._submitted.restore(items)
            log.exception("Task %s: offset commit failed; will retry", self.id)
            self.metrics.record_commit(time.monotonic() - started, ok=False)
            return False
        self.metrics.record_commit(time.monotonic() - started, ok=True)
        try:
            self.source_task.commit()
        except Exception:
            log.exception("Task %s: commit() raised", self.id)
        return True

    def close(self) -> None:
        try:
            # After a failure, only what was acknowledged before it is committed.
            self.commit_offsets(self._flush_timeout_s)
            if self.failed and not self.stopping.is_set():
                self.source_task.stop()
        finally:
            self._errors.close()
            self._key_converter.close()
            self._value_converter.close()
            self._chain.close()
            self._close_producer()

    def _close_producer(self) -> None:
        # Closed here, not by the garbage collector: its threads, sockets and buffers go
        # when the task stops. close() waits for every queued record without a bound, so
        # what the final commit gave up on is purged first (never committed: sent again
        # after a restart).
        producer, self._producer = self._producer, None
        if producer is None:
            return
        try:
            producer.purge()
            producer.poll(0)
            producer.close()
        except Exception:
            log.exception("Task %s: closing the producer failed", self.id)
