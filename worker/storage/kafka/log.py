"""KafkaBasedLog: one topic read from its beginning into memory, and written to.

As in Kafka Connect, each internal-topic store keeps its state in memory, rebuilt from a
compacted topic: a consumer ``assign()``s every partition from the beginning (no consumer
group) and a background thread hands every record, in log order per partition, to the
store's ``on_record``. ``read_to_end`` waits until every record up to the end offsets as
of the call has been handed over, which is how a store makes its own writes (and those of
other workers) visible before answering.

Tansu's high watermark counts *batches*, not records (``docs/architecture.md`` §6), so the producer
puts exactly one record in each batch (``batch.num.messages=1``, harmless on Apache
Kafka); end offsets then stay exact for everything this log writes.

An optional ``stats_cb`` (a plain callable taking librdkafka's statistics JSON) is handed
to the producer and the consumer, an optional ``admin_stats_cb`` to the admin client that
reads the end offsets: librdkafka calls each every ``statistics.interval.ms`` of the
client's config, from the calls that serve the client, i.e. on the log's two threads (the
consumer's ``poll()``/``consume()``; the producer's ``poll()`` and, with
``admin_stats_cb``, the admin client's ``poll(0)`` after it, which also hands over its
log lines; without one, the log pump of worker/util/logs.py polls the admin client for
them). They must not raise.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import Any, cast

from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    IsolationLevel,
    KafkaError,
    KafkaException,
    Message,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, OffsetSpec

from worker.clients.consumer_defaults import CONSUMER_DEFAULTS
from worker.clients.kafka_types import ConsumedMessage
from worker.errors import StorageError
from worker.util.logs import INTERNAL_TOPIC_CLIENTS, watch_logs

log = logging.getLogger(__name__)

_POLL_S = 0.1
_BATCH = 500
_QUEUE_FULL_WAIT_S = 10.0


@dataclass(frozen=True)
class LogRecord:
    """One record of the log (a tombstone has ``value`` None)."""

    partition: int
    offset: int
    key: bytes | None
    value: bytes | None


class KafkaBasedLog:
    """A topic read from the beginning into ``on_record`` and written through one producer.

    ``on_record`` runs on the log's thread; an exception in it is logged and the record
    skipped. ``send``/``read_to_end`` may be called from any other thread.
    """

    def __init__(self, topic: str, *, producer_config: Mapping[str, Any],
                 consumer_config: Mapping[str, Any], admin_config: Mapping[str, Any],
                 on_record: Callable[[LogRecord], None],
                 stats_cb: Callable[[str], None] | None = None,
                 admin_stats_cb: Callable[[str], None] | None = None) -> None:
        self.topic = topic
        self._on_record = on_record
        # librdkafka's lines of all three clients (worker/util/logs.py) come with their
        # polls; the admin client is polled by the deliveries thread when it has a
        # statistics callback, else by the log pump.
        lib_log = logging.getLogger(INTERNAL_TOPIC_CLIENTS)
        stats: dict[str, Any] = {} if stats_cb is None else {"stats_cb": stats_cb}
        self._producer_config = {**producer_config, **stats, "logger": lib_log,
                                 # Exactness and ordering of the log, not tunables:
                                 "batch.num.messages": 1, "linger.ms": 0, "acks": "all",
                                 "enable.idempotence": True, "partitioner": "murmur2_random"}
        # A short fetch wait bounds how long a write takes to be read back on brokers
        # that answer a fetch only when the wait ends (Tansu); it never joins the group
        # (assign() only), but librdkafka insists on a group.id.
        self._consumer_config = {"fetch.wait.max.ms": 50, **CONSUMER_DEFAULTS,
                                 **consumer_config, **stats,
                                 "logger": lib_log,
                                 "group.id": f"{consumer_config.get('client.id')}-{topic}",
                                 "enable.auto.commit": False, "enable.auto.offset.store": False,
                                 "auto.offset.reset": "earliest", "enable.partition.eof": True}
        self._admin_config = {**admin_config, "logger": lib_log} if admin_stats_cb is None \
            else {**admin_config, "logger": lib_log, "stats_cb": admin_stats_cb}
        self._serve_admin = admin_stats_cb is not None
        self._producer: Producer | None = None
        self._admin: AdminClient | None = None
        self._partitions: list[int] = []
        self._positions: dict[int, int] = {}  # next offset to hand over, per partition
        self._cond = threading.Condition()
        self._closed = False
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []

    @property
    def partition_count(self) -> int:
        return len(self._partitions)

    def start(self, timeout_s: float = 30.0) -> None:
        """Connect, assign every partition from the beginning and read to the end."""
        if self._threads or self._stopping.is_set():
            raise StorageError(f"The log of topic '{self.topic}' cannot be started twice")
        consumer: Consumer | None = None
        try:
            self._admin = AdminClient(self._admin_config)
            if not self._serve_admin:  # else the deliveries thread polls it (its stats)
                watch_logs(self._admin)
            metadata = self._admin.list_topics(topic=self.topic, timeout=timeout_s)
            topic = metadata.topics.get(self.topic)
            if topic is None or topic.error is not None or not topic.partitions:
                raise StorageError(f"Topic '{self.topic}' is not available: "
                                   f"{getattr(topic, 'error', None)}")
            self._partitions = sorted(topic.partitions)
            self._producer = Producer(self._producer_config)
            consumer = Consumer(self._consumer_config)
            consumer.assign([TopicPartition(self.topic, p, OFFSET_BEGINNING)
                             for p in self._partitions])
        except (KafkaException, ValueError, TypeError) as exc:
            if consumer is not None:
                consumer.close()
            self._producer = self._admin = None
            raise StorageError(f"Could not open topic '{self.topic}': {exc}") from exc
        self._positions = dict.fromkeys(self._partitions, 0)
        self._threads = [
            threading.Thread(target=self._consume, args=(consumer,), daemon=True,
                             name=f"kafka-log-{self.topic}"),
            threading.Thread(target=self._serve_deliveries, daemon=True,
                             name=f"kafka-log-{self.topic}-deliveries")]
        for thread in self._threads:
            thread.start()
        try:
            self.read_to_end(timeout_s)
        except BaseException:
            self.stop()
            raise

    def stop(self, timeout_s: float = 10.0) -> None:
        """Deliver what was sent (bounded), then stop reading and close the clients."""
        producer = self._producer
        if producer is not None:
            left = producer.flush(timeout_s)
            if left:
                log.warning("%d record(s) for topic '%s' were not delivered before stop",
                            left, self.topic)
                producer.purge()
                producer.poll(0)  # fails their futures
        self._stopping.set()
        for thread in self._threads:
            thread.join(timeout_s)
        self._threads, self._producer, self._admin = [], None, None

    def send(self, key: bytes, value: bytes | None) -> Future[LogRecord]:
        """Write one record; the future resolves on delivery (StorageError on failure)."""
        future: Future[LogRecord] = Future()
        future.set_running_or_notify_cancel()  # a caller's cancel() must not break delivery

        def delivered(err: KafkaError | None, msg: Message) -> None:
            if err is not None:
                future.set_exception(StorageError(
                    f"Failed to write to topic '{self.topic}': {err.str()}"))
            else:
                partition, offset = msg.partition(), msg.offset()
                # Optional in confluent-kafka's types; always set once delivered.
                assert partition is not None and offset is not None
                future.set_result(LogRecord(partition, offset, key, value))

        deadline = time.monotonic() + _QUEUE_FULL_WAIT_S
        while True:
            producer = self._producer
            if producer is None or self._stopping.is_set():
                raise StorageError(f"The log of topic '{self.topic}' is not running")
            try:
                producer.produce(self.topic, value=value, key=key, on_delivery=delivered)
                return future
            except BufferError as exc:
                # The delivery thread drains the queue; callbacks never run on this thread.
                if time.monotonic() > deadline:
                    raise StorageError(f"The producer queue of topic '{self.topic}' "
                                       "stayed full") from exc
                time.sleep(0.01)
            except KafkaException as exc:
                raise StorageError(f"Failed to write to topic '{self.topic}': {exc}") from exc

    def send_all(self, records: Iterable[tuple[bytes, bytes | None]],
                 timeout_s: float = 30.0) -> list[LogRecord]:
        """Write records in order and wait (bounded) until every one is delivered."""
        deadline = time.monotonic() + timeout_s
        futures = [self.send(key, value) for key, value in records]
        try:
            return [f.result(max(0.0, deadline - time.monotonic())) for f in futures]
        except FutureTimeout as exc:
            raise StorageError(f"Timed out after {timeout_s:g} s writing to topic "
                               f"'{self.topic}'") from exc

    def send_sync(self, key: bytes, value: bytes | None, timeout_s: float = 30.0) -> LogRecord:
        """Write one record and wait (bounded) for its delivery."""
        return self.send_all([(key, value)], timeout_s)[0]

    def read_to_end(self, timeout_s: float = 30.0) -> None:
        """Block until every record up to the current end offsets was passed to on_record."""
        if threading.current_thread() in self._threads:
            raise StorageError(f"read_to_end of topic '{self.topic}' called from its own thread")
        deadline = time.monotonic() + timeout_s
        targets = self._end_offsets(timeout_s)
        with self._cond:
            reached = self._cond.wait_for(
                lambda: self._closed or self._reached(targets),
                max(0.0, deadline - time.monotonic()))
            if self._reached(targets):
                return
            if reached:  # woken by the reader thread ending
                raise StorageError(f"The log of topic '{self.topic}' stopped while reading it")
        raise StorageError(f"Timed out after {timeout_s:g} s reading topic '{self.topic}' "
                           "to its end")

    def _reached(self, targets: Mapping[int, int]) -> bool:
        return all(self._positions.get(p, 0) >= end for p, end in targets.items())

    def _end_offsets(self, timeout_s: float) -> dict[int, int]:
        admin = self._admin
        if admin is None or self._stopping.is_set():
            raise StorageError(f"The log of topic '{self.topic}' is not running")
        request = {TopicPartition(self.topic, p): OffsetSpec.latest() for p in self._partitions}
        try:
            futures = admin.list_offsets(request, isolation_level=IsolationLevel.READ_COMMITTED,
                                         request_timeout=timeout_s)
            return {tp.partition: f.result(timeout_s).offset for tp, f in futures.items()}
        except (KafkaException, FutureTimeout) as exc:
            raise StorageError(f"Could not read the end offsets of topic '{self.topic}': "
                               f"{exc}") from exc

    def _consume(self, consumer: Consumer) -> None:
        try:
            while not self._stopping.is_set():
                try:
                    first = consumer.poll(_POLL_S)
                    batch = [] if first is None else [first, *consumer.consume(_BATCH, 0)]
                except (KafkaException, RuntimeError) as exc:
                    log.warning("Error reading topic '%s': %s", self.topic, exc)
                    self._stopping.wait(_POLL_S)
                    continue
                if batch:
                    self._apply(cast("list[ConsumedMessage]", batch))
        finally:
            with self._cond:
                self._closed = True
                self._cond.notify_all()
            consumer.close()

    def _apply(self, batch: list[ConsumedMessage]) -> None:
        advanced: dict[int, int] = {}
        for msg in batch:
            partition, offset, err = msg.partition(), msg.offset(), msg.error()
            if err is not None:
                # EOF carries the end offset: it moves past transaction markers and
                # compaction gaps, which hand over no record.
                if err.code() == KafkaError._PARTITION_EOF:
                    advanced[partition] = max(advanced.get(partition, 0), offset)
                else:
                    log.warning("Error reading topic '%s': %s", self.topic, err.str())
                continue
            try:
                self._on_record(LogRecord(partition, offset, msg.key(), msg.value()))
            except Exception:
                log.exception("Failed to apply the record at offset %d of %s-%d", offset,
                              self.topic, partition)
            advanced[partition] = offset + 1
        with self._cond:
            for partition, position in advanced.items():
                if position > self._positions.get(partition, 0):
                    self._positions[partition] = position
            self._cond.notify_all()

    def _serve_deliveries(self) -> None:
        while not self._stopping.is_set():
            producer = self._producer
            if producer is None:
                return
            admin = self._admin if self._serve_admin else None
            try:
                producer.poll(_POLL_S)
                if admin is not None:
                    admin.poll(0)  # its statistics callback; results come on their own
            except Exception:  # only a callback can raise here; keep serving the others
                log.exception("Error serving the clients of topic '%s'", self.topic)
