"""The dead letter queue of a sink connector (``errors.deadletterqueue.*``), as Kafka
Connect's ``DeadLetterQueueReporter`` writes it.

Each record that failed a stage for good is produced to the DLQ topic as it was consumed:
its raw key, value, headers and timestamp. With ``errors.deadletterqueue.context.headers.
enable`` the ``__connect.errors.*`` headers say where it came from and what failed, with
Kafka's names and value formats (UTF-8 strings; exception class names and traces are
Python's). The topic is created (one partition, the configured replication factor) when
missing. The producer is built like the worker's source producers; ``flush`` is called
before consumer offsets covering reported records are committed, so a record is never
skipped before its DLQ copy is acknowledged.

The producer's librdkafka statistics (when its ``statistics.interval.ms`` is set) feed its
client metrics on ``/metrics`` (``worker.runtime.metrics.clients``). librdkafka hands them
over only inside ``poll()``/``flush()``, and queues them until then: besides ``report`` and
``flush``, ``raise_if_failed`` (called after every offset commit attempt, at least once per
``offset.flush.interval.ms``) serves the producer, so the queue stays short while nothing
goes to the dead letter queue.
"""

from __future__ import annotations

import logging
import time
import traceback
from collections.abc import Callable, Mapping
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from worker.api.exceptions import ConnectException
from worker.clients.factories import CLIENT_LOG
from worker.clients.kafka_types import ConsumedMessage
from worker.runtime.errors.handling import ErrorReporter, ProcessingContext, class_name
from worker.runtime.metrics.clients import DeadLetterQueueStatsListener
from worker.runtime.metrics.tasks import ErrorMetrics
from worker.storage.base import TaskId
from worker.util.logs import watch_logs
from worker.util.secrets import KNOWN_SECRETS

log = logging.getLogger(__name__)

DLQ_NUM_PARTITIONS = 1
TOPIC_NAME_KEY = "errors.deadletterqueue.topic.name"
REPLICATION_FACTOR_KEY = "errors.deadletterqueue.topic.replication.factor"

HEADER_PREFIX = "__connect.errors."
ERROR_HEADER_ORIG_TOPIC = HEADER_PREFIX + "topic"
ERROR_HEADER_ORIG_PARTITION = HEADER_PREFIX + "partition"
ERROR_HEADER_ORIG_OFFSET = HEADER_PREFIX + "offset"
ERROR_HEADER_CONNECTOR_NAME = HEADER_PREFIX + "connector.name"
ERROR_HEADER_TASK_ID = HEADER_PREFIX + "task.id"
ERROR_HEADER_STAGE = HEADER_PREFIX + "stage"
ERROR_HEADER_EXECUTING_CLASS = HEADER_PREFIX + "class.name"
ERROR_HEADER_EXCEPTION = HEADER_PREFIX + "exception.class.name"
ERROR_HEADER_EXCEPTION_MESSAGE = HEADER_PREFIX + "exception.message"
ERROR_HEADER_EXCEPTION_STACK_TRACE = HEADER_PREFIX + "exception.stacktrace"

Header = tuple[str, bytes | None]


def _utf8(value: object) -> bytes | None:
    return None if value is None else str(value).encode("utf-8")


def exception_message(error: BaseException) -> str | None:
    """``Throwable.getMessage()``: None for an exception raised without a message."""
    return str(error) if error.args else None


def context_headers(context: ProcessingContext, task_id: TaskId) -> list[Header]:
    """The ``__connect.errors.*`` headers of one reported record, in Kafka's order."""
    headers: list[Header] = []
    original = context.original
    if original is not None:
        headers += [(ERROR_HEADER_ORIG_TOPIC, _utf8(original.topic())),
                    (ERROR_HEADER_ORIG_PARTITION, _utf8(original.partition())),
                    (ERROR_HEADER_ORIG_OFFSET, _utf8(original.offset()))]
    headers += [(ERROR_HEADER_CONNECTOR_NAME, _utf8(task_id.connector)),
                (ERROR_HEADER_TASK_ID, _utf8(task_id.task)),
                (ERROR_HEADER_STAGE, _utf8(context.stage.value if context.stage else None)),
                (ERROR_HEADER_EXECUTING_CLASS, _utf8(class_name(context.executing_class)))]
    error = context.error
    if error is not None:
        # The message and trace are scrubbed of the secrets the worker knows, as its logs
        # are: a converter's or transformation's error may quote its config.
        message = exception_message(error)
        headers += [(ERROR_HEADER_EXCEPTION, _utf8(class_name(type(error)))),
                    (ERROR_HEADER_EXCEPTION_MESSAGE,
                     _utf8(None if message is None else KNOWN_SECRETS.redact(message))),
                    (ERROR_HEADER_EXCEPTION_STACK_TRACE,
                     _utf8(KNOWN_SECRETS.redact("".join(traceback.format_exception(error)))))]
    return headers


class DeadLetterQueueReporter(ErrorReporter):
    """Writes failed records to the DLQ topic; one per sink task, on the task's thread."""

    def __init__(self, task_id: TaskId, topic: str, replication_factor: int,
                 context_headers_enabled: bool, producer_config: dict[str, str],
                 admin_config: Mapping[str, Any], flush_timeout_s: float, *,
                 producer_factory: Callable[[dict[str, Any]], Any] = Producer,
                 metrics: ErrorMetrics | None = None) -> None:
        self.task_id = task_id
        # deadletterqueue-produce-{requests,failures} of the task's task-error-metrics.
        self.metrics = metrics or ErrorMetrics()
        self.topic = topic
        self._replication_factor = replication_factor
        self._context_headers = context_headers_enabled
        self._producer_config = producer_config
        self._admin_config = admin_config
        self._flush_timeout_s = flush_timeout_s
        self._producer_factory = producer_factory
        self._producer: Any = None
        self.pending = False  # records produced since the last successful flush
        self.error: KafkaError | None = None  # the first failed delivery

    # --- setup -----------------------------------------------------------------------

    def start(self, timeout_s: float = 30.0) -> None:
        """Create the topic if missing, then the producer (task thread, before the first
        poll). Raises ConnectException naming the setting the broker could not honour."""
        self._ensure_topic(timeout_s)
        config: dict[str, Any] = dict(self._producer_config)
        config["on_delivery"] = self._on_delivery
        config["delivery.report.only.error"] = True
        config["logger"] = CLIENT_LOG
        # Its statistics → its client metrics (ErrorMetrics.dlq_client_stats); librdkafka
        # calls this only when statistics.interval.ms is set (and not 0).
        config["stats_cb"] = DeadLetterQueueStatsListener(self.metrics, self._task)
        self._producer = self._producer_factory(config)

    def _ensure_topic(self, timeout_s: float) -> None:
        conf: dict[str, Any] = {**self._admin_config, "logger": CLIENT_LOG}
        admin = watch_logs(AdminClient(conf))
        failure = f"Could not initialize dead letter queue with topic={self.topic}"
        try:
            existing = admin.list_topics(timeout=timeout_s).topics
        except KafkaException as exc:
            raise ConnectException(f"{failure}: cannot list topics: {exc}") from exc
        if self.topic in existing:
            return
        log.info("Task %s: dead letter queue topic '%s' does not exist; creating it with "
                 "replication factor %d", self._task, self.topic, self._replication_factor)
        new = NewTopic(self.topic, DLQ_NUM_PARTITIONS, self._replication_factor)
        try:
            admin.create_topics([new], operation_timeout=timeout_s,
                                request_timeout=timeout_s)[self.topic].result(timeout_s)
        except KafkaException as exc:
            error = exc.args[0] if exc.args and isinstance(exc.args[0], KafkaError) else None
            code = error.code() if error is not None else None
            if code == KafkaError.TOPIC_ALREADY_EXISTS:
                return
            if code == KafkaError.INVALID_REPLICATION_FACTOR:
                raise ConnectException(
                    f"{failure}: the broker cannot create it with {REPLICATION_FACTOR_KEY}="
                    f"{self._replication_factor} ({exc}); lower {REPLICATION_FACTOR_KEY} or "
                    f"create the topic first") from exc
            raise ConnectException(f"{failure} (set by {TOPIC_NAME_KEY}): {exc}") from exc

    @property
    def _task(self) -> str:
        return f"{self.task_id.connector}-{self.task_id.task}"

    # --- reporting -------------------------------------------------------------------

    def report(self, context: ProcessingContext) -> None:
        message: ConsumedMessage | None = context.original
        producer = self._producer
        if message is None or producer is None:
            return
        headers: list[Header] = list(message.headers() or [])
        if self._context_headers:
            headers += context_headers(context, self.task_id)
        kwargs: dict[str, Any] = {"headers": headers}
        ts_type, ts = message.timestamp()
        if ts_type:  # a record without a timestamp gets the producer's, as in Kafka
            kwargs["timestamp"] = ts
        deadline = time.monotonic() + self._flush_timeout_s
        self.metrics.dlq_produce_requests += 1
        while True:
            try:
                producer.produce(self.topic, message.value(), message.key(), **kwargs)
                break
            except BufferError:
                # librdkafka's queue is full: serve delivery reports, then retry.
                if time.monotonic() >= deadline:
                    self.metrics.dlq_produce_failures += 1
                    raise ConnectException(
                        f"Could not produce message to dead letter queue. topic={self.topic}: "
                        "the producer queue stayed full") from None
                producer.poll(0.05)
            except KafkaException as exc:
                self.metrics.dlq_produce_failures += 1
                raise ConnectException("Could not produce message to dead letter queue. "
                                       f"topic={self.topic}") from exc
        self.pending = True
        producer.poll(0)

    def _on_delivery(self, err: KafkaError | None, _msg: Any) -> None:
        # Called from poll()/flush(), i.e. on the task's thread.
        if err is not None:
            self.metrics.dlq_produce_failures += 1
        if err is not None and self.error is None:
            log.error("Task %s: could not produce message to dead letter queue. topic=%s: %s",
                      self._task, self.topic, err)
            self.error = err

    def flush(self) -> bool:
        """Wait for every reported record's acknowledgement; False (nothing may be
        committed) if some are still unacknowledged or one failed."""
        producer = self._producer
        if producer is None or not self.pending:
            return self.error is None
        remaining = producer.flush(self._flush_timeout_s)
        if remaining:
            log.warning("Task %s: %d dead letter queue records unacknowledged after %.1f s; "
                        "offsets not committed this time", self._task, remaining,
                        self._flush_timeout_s)
            return False
        if self.error is not None:
            return False
        self.pending = False
        return True

    def raise_if_failed(self) -> None:
        """A DLQ write failed: the task must stop rather than skip that record.

        Serves the producer first (``poll(0)``: delivery reports, statistics): called after
        every offset commit attempt, this is what hands over the statistics librdkafka
        queued while no record went to the dead letter queue."""
        producer = self._producer
        if producer is not None:
            producer.poll(0)
        if self.error is not None:
            raise ConnectException(f"Could not produce message to dead letter queue. "
                                   f"topic={self.topic}: {self.error}")

    def close(self) -> None:
        producer, self._producer = self._producer, None
        if producer is not None and self.pending:
            remaining = producer.flush(self._flush_timeout_s)
            if remaining:
                log.warning("Task %s: %d dead letter queue records unacknowledged at close",
                            self._task, remaining)
