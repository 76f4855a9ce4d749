"""WorkerSinkTask: consume → converters → transforms → put → commit after flush.

Consumer offsets are committed to the group ``connect-{name}`` (or the
``consumer.override.group.id``) only after ``pre_commit`` (by default ``flush``) returned:
every ``offset.flush.interval.ms``, when partitions are revoked, and on stop.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import cast

from confluent_kafka import Consumer, KafkaError, KafkaException
from confluent_kafka import TopicPartition as KafkaTopicPartition

from worker.api.connector import TopicPartition
from worker.api.converter import Converter
from worker.api.exceptions import ConnectException, RetriableException
from worker.api.header_converter import decode_headers
from worker.api.records import SinkRecord, consumed_record
from worker.api.task import SinkTask
from worker.clients.factories import CLIENT_LOG
from worker.clients.kafka_types import ConsumedMessage
from worker.runtime.chain import TransformationChain
from worker.runtime.errors.dead_letter_queue import DeadLetterQueueReporter
from worker.runtime.errors.handling import (
    TOLERANCE_EXCEEDED,
    ErrorHandlingConfig,
    RetryInterrupted,
    RetryWithToleranceOperator,
)
from worker.runtime.errors.sink import TIMESTAMP_NAMES, SinkErrorHandler
from worker.runtime.idle_poller import IdlePoller
from worker.runtime.metrics.clients import StatsListener
from worker.runtime.metrics.consumer_lag import LagReader
from worker.runtime.metrics.tasks import TaskMetrics
from worker.runtime.sink_context import WorkerSinkTaskContext, subscription_pattern
from worker.runtime.status import StatusReporter
from worker.runtime.worker_task import WorkerTask
from worker.storage.base import State, TargetState, TaskId

log = logging.getLogger(__name__)

#: Records per consume() and put() unless the consumer's max.poll.records says otherwise
#: (Kafka's default there is 500; larger batches cost less per record here).
MAX_BATCH = 2000
POLL_TIMEOUT_S = 0.2
#: Empty polls in a row (of POLL_TIMEOUT_S) after which a sink parks its consumer with the
#: worker's IdlePoller: one, so that a sink fed a record a second (whose own polls would
#: never see five empty ones in a row) parks too. A sink that was never assigned a
#: partition waits longer, so that its first assignment (the connector's open()) runs on
#: its own thread.
PARK_AFTER_EMPTY_POLLS = 1
PARK_UNASSIGNED_AFTER_EMPTY_POLLS = 50


class WorkerSinkTask(WorkerTask):
    native_kind = "sink"

    def __init__(self, task_id: TaskId, task: SinkTask, task_config: dict[str, str],
                 target_state: TargetState, status: StatusReporter, *,
                 consumer_config: dict[str, str], topics: list[str], topics_regex: str,
                 key_converter: Converter, value_converter: Converter,
                 chain: TransformationChain, offset_flush_interval_ms: int,
                 error_config: ErrorHandlingConfig | None = None,
                 dlq: DeadLetterQueueReporter | None = None,
                 on_topic: Callable[[str], None] | None = None,
                 metrics: TaskMetrics | None = None,
                 max_poll_records: int | None = None,
                 idle_poller: IdlePoller | None = None) -> None:
        super().__init__(task_id, task, task_config, target_state, status, on_topic, metrics)
        self.sink_task: SinkTask = task
        self._consumer_config = consumer_config
        self._max_batch = max_poll_records or MAX_BATCH
        # Idle, the consumer is watched by the worker's poller and this thread sleeps on
        # _wake (worker.runtime.idle_poller); None: this thread polls all the time.
        self._idle_poller = idle_poller
        self._wake = threading.Event()
        self._empty_polls = 0
        # The rebalance protocol, which decides how on_assign assigns: KIP-848's consumer
        # protocol and the cooperative-sticky assignor are incremental.
        self._cooperative = consumer_config.get("group.protocol") == "consumer" or \
            "cooperative" in consumer_config.get("partition.assignment.strategy", "")
        self._subscription = [subscription_pattern(topics_regex)] if topics_regex \
            else list(topics)
        self._key_converter = key_converter
        self._value_converter = value_converter
        self._chain = chain
        self._flush_interval_s = offset_flush_interval_ms / 1000
        # errors.*: retries, tolerance, the error log and the dead letter queue, used only
        # once a record has failed (the slow path, worker.runtime.errors.sink). A retry's
        # backoff ends at once when the task stops or pauses.
        self._retry_interrupt = threading.Event()
        errors = error_config or ErrorHandlingConfig()
        self._errors = SinkErrorHandler(
            task_id, errors, RetryWithToleranceOperator(errors, self._retry_interrupt,
                                                        metrics=self.metrics.errors),
            key_converter, value_converter, chain, dlq)
        # As Kafka, reports name the SinkTask base class as the stage's class.
        self.errant_reporter = self._errors.errant_record_reporter(
            SinkTask, lambda: self.header_converter)
        self._consumer: Consumer | None = None
        self._context = WorkerSinkTaskContext(self)
        self.assignment: set[TopicPartition] = set()
        self._current: dict[TopicPartition, int] = {}  # next offset to read, per partition
        # Per partition, the offset committed last (or the first one read): with
        # _current, the sink-record-active-count of /metrics.
        self._committed: dict[TopicPartition, int] = {}
        self._paused = False
        self._warned: set[int] = set()
        self._lag = LagReader(self.metrics, self._max_batch)  # records-lag of /metrics

    # --- setup ---------------------------------------------------------------------------

    def initialize(self) -> None:
        self._errors.start()
        # stats_cb: librdkafka's statistics if asked for → /metrics (served by consume()).
        # logger: librdkafka's log lines join the worker's log (never raw to stderr),
        # served by consume() too; they name the client, whose id names the task.
        self._consumer = Consumer({**self._consumer_config, "logger": CLIENT_LOG,
                                   "stats_cb": StatsListener(self.metrics)})
        self.metrics.client_id = self._consumer_config.get("client.id")
        self.sink_task.initialize(self._context)
        self.sink_task.start(self.task_config)
        self._consumer.subscribe(self._subscription, on_assign=self._on_assign,
                                 on_revoke=self._on_revoke, on_lost=self._on_lost)

    def consumer_call(self, method: str, partitions: tuple[TopicPartition, ...]) -> None:
        if self._consumer is not None and partitions:
            getattr(self._consumer, method)([KafkaTopicPartition(t, p) for t, p in partitions])

    # --- rebalance callbacks: inside consume(), on this thread or, parked, the poller's ---

    def _rebalancing(self) -> None:
        """First in each rebalance callback. Parked, the callback runs on the poller's
        thread: the task takes its consumer back once it returns (``_wake``), and since
        the connector's open()/close() may block, a new poller thread serves the other
        parked consumers meanwhile (``idle_poller``)."""
        self._wake.set()
        self._lag.expire()
        if self._idle_poller is not None:
            self._idle_poller.hand_over()

    def _on_assign(self, consumer: Consumer, partitions: list[KafkaTopicPartition]) -> None:
        self._rebalancing()
        assigned = [TopicPartition(p.topic, p.partition) for p in partitions]
        log.info("Task %s: assigned partitions %s", self.id,
                 ", ".join(f"{p.topic}-{p.partition}" for p in partitions))
        self.assignment.update(assigned)
        self.metrics.partition_count = len(self.assignment)
        self.sink_task.open(assigned)
        # As Kafka, the offsets open() asked for (SinkTaskContext.offset) apply before
        # anything is read. librdkafka cannot seek a partition before its assignment is
        # applied, so the partitions are assigned at those offsets here.
        rewinds = self._context.rewinds
        if any(tp in rewinds for tp in assigned):
            for p in partitions:
                offset = rewinds.pop(TopicPartition(p.topic, p.partition), None)
                if offset is not None:
                    p.offset = offset
                    self._current[TopicPartition(p.topic, p.partition)] = offset
            if self._cooperative:
                consumer.incremental_assign(partitions)
            else:
                consumer.assign(partitions)
        if self._paused:
            consumer.pause(partitions)

    def _on_revoke(self, consumer: Consumer, partitions: list[KafkaTopicPartition]) -> None:
        self._rebalancing()
        revoked = [TopicPartition(p.topic, p.partition) for p in partitions]
        if not self.failed:  # a failed task's put() may not have been flushed
            committed = self._commit(only=set(revoked))
            log.info("Task %s: partitions revoked; committed %s", self.id,
                     ", ".join(f"{t}-{p}@{o}" for (t, p), o in sorted(committed.items()))
                     or "nothing new")
        self._close_partitions(revoked)

    def _on_lost(self, consumer: Consumer, partitions: list[KafkaTopicPartition]) -> None:
        self._rebalancing()
        # Lost partitions may already belong to another member: never commit for them.
        self._close_partitions([TopicPartition(p.topic, p.partition) for p in partitions])

    def _close_partitions(self, partitions: list[TopicPartition]) -> None:
        try:
            self.sink_task.close(partitions)
        finally:
            for tp in partitions:
                self.assignment.discard(tp)
                self._current.pop(tp, None)
                self._committed.pop(tp, None)
            self.metrics.partition_count = len(self.assignment)

    # --- loop ------------------------------------------------------------------------------

    def execute(self) -> None:
        consumer = self._consumer
        assert consumer is not None
        next_commit = time.monotonic() + self._flush_interval_s
        while not self.stopping.is_set():
            self._apply_target_state(consumer)
            self._apply_rewinds(consumer)
            messages = self._poll(consumer, next_commit)
            self._lag.after_poll(consumer, self.assignment, len(messages))
            if messages:
                self.metrics.record_read(len(messages))
                records, positions, poison = self._convert(messages)
                if self._deliver(records):
                    # Only records put() may be committed: a batch abandoned by a stop
                    # must be consumed again, not skipped.
                    self._current.update(positions)
                    self._record_active()
                    if isinstance(poison, RetryInterrupted):
                        # Paused or stopping in a retry: the record and the rest of the
                        # batch are consumed again later.
                        self._rewind(consumer, poison.rest)
                    elif poison is not None:
                        # Everything before the bad record is delivered and committed, so
                        # the group's offset is the bad record's: moving it one past skips
                        # that record alone (the KIP-875 runbook), nothing else.
                        self._commit()
                        raise poison
            elif not self._paused and (self._context.commit_requested
                                       or time.monotonic() >= next_commit):
                # Kafka calls put() after every poll, even an empty one, and its poll waits
                # for records until the next commit is due: an idle sink gets put([]) once
                # per offset.flush.interval.ms, just before the commit (not on every wake).
                self._deliver([])
            if self._context.commit_requested or time.monotonic() >= next_commit:
                self._context.commit_requested = False
                self._commit()
                self._errors.raise_if_failed()
                next_commit = time.monotonic() + self._flush_interval_s

    def _poll(self, consumer: Consumer, next_commit: float) -> list[ConsumedMessage]:
        """The next messages: polled on this thread, or, once idle, by the worker's
        poller while this thread sleeps until records come, the task is stopped, paused or
        resumed, or the next commit is due."""
        poller = self._idle_poller
        if poller is None or self._empty_polls < (
                PARK_AFTER_EMPTY_POLLS if self.assignment
                else PARK_UNASSIGNED_AFTER_EMPTY_POLLS):
            messages = cast("list[ConsumedMessage]",
                            consumer.consume(self._max_batch, POLL_TIMEOUT_S))
            self._empty_polls = 0 if messages else self._empty_polls + 1
            return messages
        self._wake.clear()
        # stop() and transition_to() set the event after the change: checked after the
        # clear, neither can be missed.
        if self.stopping.is_set() or self._context.commit_requested or self._context.rewinds \
                or (self.target_state is TargetState.PAUSED) != self._paused:
            return []
        parking = poller.park(f"{self.id.connector}-{self.id.task}", consumer,
                               self._max_batch, self._wake)
        try:
            self._wake.wait(max(next_commit - time.monotonic(), 0.0))
        finally:
            poller.unpark(parking)
        if parking.error is not None:
            raise parking.error
        if len(parking.messages) >= self._max_batch:
            # A full batch: records come faster than the poller's rounds hand them over,
            # so this thread reads again. Fewer: it parks again once they are put, so that
            # a sink with a trickle of records wakes once per batch, not twice.
            self._empty_polls = 0
        return cast("list[ConsumedMessage]", parking.messages)

    def _apply_target_state(self, consumer: Consumer) -> None:
        want_paused = self.target_state is TargetState.PAUSED
        if want_paused == self._paused:
            return
        parts = [KafkaTopicPartition(t, p) for t, p in self.assignment]
        # Paused sinks keep polling (no records) so they stay members of the group.
        if want_paused:
            consumer.pause(parts)
            self.report_state(State.PAUSED)
        else:
            consumer.resume(parts)
            self.report_state(State.RUNNING)
        self._paused = want_paused

    def _apply_rewinds(self, consumer: Consumer) -> None:
        if not self._context.rewinds:
            return
        for tp, offset in self._context.rewinds.items():
            if tp in self.assignment:
                consumer.seek(KafkaTopicPartition(tp.topic, tp.partition, offset))
                self._current[tp] = offset
        self._context.rewinds.clear()

    def _convert(self, messages: list[ConsumedMessage]
                 ) -> tuple[list[SinkRecord], dict[TopicPartition, int],
                            ConnectException | RetryInterrupted | None]:
        """The batch's records, the next offset per partition once they are put, and the
        error of a record that failed conversion or transformation (``errors.tolerance=none``)
        or whose retries a pause or stop interrupted (``RetryInterrupted``, with the messages
        not processed).

        On such a record the batch ends before it: the records before it are returned, and
        positions do not move past it, so it is the next record read after a restart.
        """
        # The hot path of every sink: per-record work is kept to what the record needs.
        records: list[SinkRecord] = []
        append = records.append
        key_conv = self._key_converter.to_connect_data
        value_conv = self._value_converter.to_connect_data
        chain = self._chain if self._chain else None
        new_record = consumed_record
        positions: dict[TopicPartition, int] = {}
        committed = self._committed
        # The first message always differs from this sentinel, so ``tp`` is set before use.
        last_topic, last_partition, tp = "", -1, TopicPartition("", -1)
        for msg in messages:
            error = msg.error()
            if error is not None:
                # Most consumer errors are transient (e.g. a subscribed topic that does not
                # exist yet): librdkafka retries them itself. Only fatal ones end the task.
                if error.fatal():
                    raise ConnectException(f"Fatal consumer error: {error}")
                if error.code() != KafkaError._PARTITION_EOF:
                    self._warn_once(error)
                continue
            topic = msg.topic()
            partition = msg.partition()
            offset = msg.offset()
            if partition != last_partition or topic != last_topic:
                last_topic, last_partition = topic, partition
                tp = TopicPartition(topic, partition)
                if tp not in committed:
                    committed[tp] = offset  # /metrics: the active count's baseline
                if topic not in self.seen_topics:
                    self.record_topic(topic)  # KIP-558: a topic is active once consumed
            try:
                key_schema, key = key_conv(topic, msg.key())
                value_schema, value = value_conv(topic, msg.value())
                ts_type, ts = msg.timestamp()
                raw_headers = msg.headers()  # None when the message has none
                record: SinkRecord | None = new_record(
                    topic, partition, key_schema, key, value_schema, value, offset,
                    ts if ts_type else None, TIMESTAMP_NAMES[ts_type],
                    decode_headers(raw_headers, self.header_converter, topic)
                    if raw_headers else None)
                if chain is not None:
                    record = chain.apply(record)
            except Exception:
                # The slow path: run the record again stage by stage, with retries, and
                # report it (log, dead letter queue); errors.tolerance decides the rest.
                self._retry_interrupt.clear()
                if self.stopping.is_set() or self.target_state is TargetState.PAUSED:
                    self._retry_interrupt.set()
                try:
                    record = self._errors.recover(msg, self.header_converter)
                except RetryInterrupted as interrupted:
                    interrupted.rest = messages[messages.index(msg):]
                    return records, positions, interrupted
                except ConnectException as exc:
                    # Kafka's wording, plus where the record is: the operator needs its
                    # offset to skip it (the trace keeps the stage's error as cause).
                    cause = exc.__cause__ or exc
                    failure = ConnectException(
                        f"{TOLERANCE_EXCEEDED}: converting or transforming the record at "
                        f"offset {offset} of {topic}-{partition} failed: "
                        f"{type(cause).__name__}: {cause}")
                    failure.__cause__ = cause
                    return records, positions, failure
            positions[tp] = offset + 1
            if record is not None:
                append(record)
        return records, positions, None

    def _rewind(self, consumer: Consumer, rest: list[ConsumedMessage]) -> None:
        """Seek each partition back to its first message in ``rest`` (not processed)."""
        first: dict[TopicPartition, int] = {}
        for msg in rest:
            if msg.error() is None:
                first.setdefault(TopicPartition(msg.topic(), msg.partition()), msg.offset())
        for tp, offset in first.items():
            if tp in self.assignment:
                consumer.seek(KafkaTopicPartition(tp.topic, tp.partition, offset))

    def transition_to(self, target: TargetState) -> None:
        super().transition_to(target)
        if target is TargetState.PAUSED:
            self._retry_interrupt.set()  # a retry in progress ends; the record waits
        self._wake.set()  # a parked task applies it at once

    def _warn_once(self, error: KafkaError) -> None:
        if error.code() not in self._warned:
            self._warned.add(error.code())
            log.warning("Task %s: consumer reported %s (retrying)", self.id, error)

    def _deliver(self, records: list[SinkRecord]) -> bool:
        """put() the batch, retrying after RetriableException; False if a stop came first."""
        while True:
            try:
                started = time.monotonic()
                self.sink_task.put(records)
                self.metrics.record_put(len(records), time.monotonic() - started)
                return True
            except RetriableException:
                # Redeliver the same batch after the task's timeout; keep polling (paused)
                # so the consumer stays in the group.
                wait_s = (self._context.timeout_ms or 1000) / 1000
                log.warning("Task %s: retriable error from put(); retrying in %.1f s",
                            self.id, wait_s)
                deadline = time.monotonic() + wait_s
                consumer = self._consumer
                assert consumer is not None
                parts = [KafkaTopicPartition(t, p) for t, p in self.assignment]
                consumer.pause(parts)
                while time.monotonic() < deadline and not self.stopping.is_set():
                    consumer.consume(1, min(POLL_TIMEOUT_S, deadline - time.monotonic()))
                if not self._paused:
                    consumer.resume(parts)
                if self.stopping.is_set():
                    return False

    def _commit(self, only: set[TopicPartition] | None = None) -> dict[TopicPartition, int]:
        """Flush (``pre_commit``) and commit; returns the offsets committed."""
        consumer = self._consumer
        if consumer is None or not self._current:
            return {}
        if self.cancelled:
            # Abandoned after the graceful timeout (as Kafka, "skipping final offset commit
            # as task has been cancelled"): the offsets may have been reset, or a new task
            # may own the partitions, since.
            log.info("Task %s: cancelled; its offsets are not committed", self.id)
            return {}
        current = {tp: o for tp, o in self._current.items() if only is None or tp in only}
        if not current:
            return {}
        self.metrics.record_commit_attempt()  # offset-commit-seq-no, as Kafka's commitSeqno
        started = time.monotonic()  # as Kafka, the commit's time includes pre_commit
        try:
            committable = self.sink_task.pre_commit(dict(current))
        except Exception:
            self.metrics.record_commit(time.monotonic() - started, ok=False)
            raise
        chosen = {tp: off for tp, off in committable.items() if tp in self.assignment}
        if not chosen:
            return {}
        if not self._errors.before_commit():
            # A record skipped to the dead letter queue is not acknowledged there yet:
            # committing past it could lose it. The next commit tries again.
            return {}
        try:
            consumer.commit(offsets=[KafkaTopicPartition(tp.topic, tp.partition, off)
                                     for tp, off in chosen.items()], asynchronous=False)
        except KafkaException as exc:
            # The next commit retries; records since the last commit may be redelivered.
            log.warning("Task %s: offset commit failed: %s", self.id, exc)
            self.metrics.record_commit(time.monotonic() - started, ok=False)
            return {}
        self.metrics.record_commit(time.monotonic() - started, ok=True)
        self._committed.update(chosen)
        self._record_active()
        return chosen

    def _record_active(self) -> None:
        """sink-record-active-count: records put but not committed (Kafka's consumed
        minus committed offsets, per partition); once per batch and per commit."""
        current = self._current
        self.metrics.record_sink_active(sum(
            max(current.get(tp, committed) - committed, 0)
            for tp, committed in self._committed.items()))

    def _interrupt(self) -> None:
        """Stopping needs no call into the plugin, only a retry's backoff is ended and a
        parked task woken: the loop sees ``stopping`` within one poll (``POLL_TIMEOUT_S``),
        or at once when parked. Calling the sink's stop() from another thread, as for
        sources, could close its resources under a running put(): records the task then
        drops would still be committed."""
        self._retry_interrupt.set()
        self._wake.set()

    def close(self) -> None:
        consumer = self._consumer
        try:
            if consumer is not None:
                # Leaving the group revokes every partition: _on_revoke commits (unless the
                # task failed) and closes them in the task.
                consumer.close()
            if self.assignment:
                self._close_partitions(sorted(self.assignment))
            # Last, on this thread, after the final commit: as in Kafka, a sink task's
            # stop() never runs concurrently with put() or flush() (see _interrupt).
            self.sink_task.stop()
        finally:
            self._errors.close()
            self._key_converter.close()
            self._value_converter.close()
            self._chain.close()

