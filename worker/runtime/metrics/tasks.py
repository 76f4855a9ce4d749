"""What one task counts for ``/metrics``: Kafka Connect's ``connector-task-metrics``,
``source-task-metrics``, ``sink-task-metrics`` and ``task-error-metrics`` groups.

The Worker creates one ``TaskMetrics`` per task and hands it to the ``WorkerTask``. The
task thread records once per batch (``record_poll``, ``record_write``, ``record_read``,
``record_put``, ``record_commit``): plain attribute arithmetic and a windowed sample
(``worker.runtime.metrics.sampled_stat``), never a lock and never per record, so counting costs no
measurable throughput. The scrape thread reads the attributes and the windowed values
(``worker.runtime.metrics.collector``); names and meanings are listed in docs/metrics.md.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from worker.runtime.metrics.client_stats import ClientStats, Lags
from worker.runtime.metrics.sampled_stat import MetricWindow, SampledStat
from worker.storage.base import State

#: A task's ``status`` before its first state change (Kafka reports the status-store
#: state, which is UNASSIGNED for a task that has not started).
INITIAL_STATE = State.UNASSIGNED


class ErrorMetrics:
    """``task-error-metrics``: counted by the error handling of the task's thread (the
    retry-and-tolerance operator, the log reporter, the dead letter queue reporter)."""

    __slots__ = ("record_failures", "record_errors", "records_skipped", "retries",
                 "errors_logged", "dlq_produce_requests", "dlq_produce_failures",
                 "last_error_timestamp_ms", "dlq_client_stats")

    def __init__(self) -> None:
        self.record_failures = 0  # total-record-failures: every failed attempt
        self.record_errors = 0  # total-record-errors: every record that failed for good
        self.records_skipped = 0  # total-records-skipped
        self.retries = 0  # total-retries
        self.errors_logged = 0  # total-errors-logged
        self.dlq_produce_requests = 0  # deadletterqueue-produce-requests
        self.dlq_produce_failures = 0  # deadletterqueue-produce-failures
        self.last_error_timestamp_ms = 0  # last-error-timestamp (epoch ms; 0 = never)
        # The dead letter queue producer's latest librdkafka statistics
        # (worker.runtime.metrics.clients): replaced whole by its stats callback on the task
        # thread; None until its first statistics, or without a dead letter queue.
        self.dlq_client_stats: ClientStats | None = None

    def mark_failed(self) -> None:
        """Kafka's ``markAsFailed``: a record failed; note when."""
        self.last_error_timestamp_ms = int(time.time() * 1000)


class TaskMetrics:
    """One task's accumulators (see the module docstring for who writes and reads)."""

    def __init__(self, connector: str, task: int, kind: str = "source",
                 window: MetricWindow | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.connector = connector
        self.task = task
        self.kind = kind  # "source" or "sink": which of the two groups the task reports
        window = window or MetricWindow()
        self._clock = clock

        def stat() -> SampledStat:
            return SampledStat(window, clock)

        # connector-task-metrics
        self.state: State = INITIAL_STATE
        self.started = False  # reached RUNNING once (task-startup-success-total)
        # Told once whether the task started (RUNNING) or failed before (FAILED): the
        # worker's task-startup-* counters (Kafka's WorkerMetricsGroup status listener).
        self.on_startup: Callable[[bool], None] | None = None
        self._startup_reported = False
        self._state_since = clock()
        self._state_seen = False
        self._durations: dict[State, float] = {}
        self.commit_time_ms = stat()  # offset-commit-{avg,max}-time-ms (successes)
        self.commit_results = stat()  # 1.0 success, 0.0 failure: the percentages
        self.batch_size = stat()  # batch-size-{avg,max}
        # source-task-metrics
        self.poll_total = 0
        self.poll_counts = stat()
        self.poll_time_ms = stat()
        self.write_total = 0
        self.write_counts = stat()
        self.source_active = 0
        self.source_active_stat = stat()
        # sink-task-metrics
        self.read_total = 0
        self.read_counts = stat()
        self.send_total = 0
        self.send_counts = stat()
        self.put_time_ms = stat()
        self.partition_count = 0
        self.commit_completion_total = 0
        self.commit_completions = stat()
        # offset-commit-seq-no: Kafka's commitSeqno, one per commit attempt.
        self.commit_seq_no = 0
        # offset-commit-skip-total: Kafka counts a commit completion that arrives for an
        # older sequence number; our sink commits are synchronous (each completes before
        # the next starts), so it stays 0 and is kept for the series only.
        self.commit_skip_total = 0
        self.sink_active = 0
        self.sink_active_stat = stat()
        # task-error-metrics
        self.errors = ErrorMetrics()
        # The task client's latest librdkafka statistics (worker.runtime.metrics.clients):
        # replaced whole by the client's stats callback on the task thread, once per
        # statistics.interval.ms; None until the client's first statistics (or without
        # them: a sink task's consumer builds none unless asked).
        self.client_stats: ClientStats | None = None
        # A sink task's consumer: its client.id once created, and its lag as the task
        # thread last read it (worker.runtime.metrics.consumer_lag), replaced whole.
        self.client_id: str | None = None
        self.consumer_lags: Lags = ()

    # --- status (connector-task-metrics) --------------------------------------------------

    def state_changed(self, state: State) -> None:
        """The task reported ``state`` (Kafka's ``TaskMetricsGroup`` status listener)."""
        now = self._clock()
        if self._state_seen:
            self._durations[self.state] = (self._durations.get(self.state, 0.0)
                                           + now - self._state_since)
        self._state_seen = True
        self.state, self._state_since = state, now
        if state is State.RUNNING:
            self.started = True
        if state in (State.RUNNING, State.FAILED) and not self._startup_reported:
            self._startup_reported = True
            if self.on_startup is not None:
                self.on_startup(state is State.RUNNING)

    def ratio(self, state: State, now: float | None = None) -> float:
        """The fraction of the task's life spent in ``state`` (running-ratio,
        pause-ratio); 0.0 before its first state change, as Kafka's ``StateTracker``."""
        if not self._state_seen:
            return 0.0
        now = self._clock() if now is None else now
        current = now - self._state_since
        durations = dict(self._durations)
        total = sum(durations.values()) + current
        wanted = durations.get(state, 0.0) + (current if state is self.state else 0.0)
        return wanted / total if total > 0 else 0.0

    # --- recording, on the task thread, once per batch ----------------------------------

    def record_poll(self, count: int, elapsed_s: float) -> None:
        """A source ``poll()`` returned ``count`` records after ``elapsed_s``."""
        now = self._clock()
        self.poll_total += count
        self.poll_counts.record(count, now)
        self.poll_time_ms.record(elapsed_s * 1000, now)
        self.batch_size.record(count, now)
        self.source_active += count
        self.source_active_stat.record(self.source_active, now)

    def record_write(self, count: int, skipped: int = 0) -> None:
        """``count`` polled records were acknowledged by Kafka, ``skipped`` were dropped
        (a transformation filtered them, errors.tolerance skipped them): both leave the
        active count; only the written ones count as written."""
        now = self._clock()
        self.write_total += count
        self.write_counts.record(count, now)
        self.source_active = max(0, self.source_active - count - skipped)
        self.source_active_stat.record(self.source_active, now)

    def record_read(self, count: int) -> None:
        """A sink consumer poll returned ``count`` records."""
        self.read_total += count
        self.read_counts.record(count)

    def record_put(self, count: int, elapsed_s: float) -> None:
        """``put()`` of a batch of ``count`` records returned after ``elapsed_s``."""
        now = self._clock()
        self.send_total += count
        self.send_counts.record(count, now)
        self.put_time_ms.record(elapsed_s * 1000, now)
        self.batch_size.record(count, now)

    def record_sink_active(self, count: int) -> None:
        """Records put but not yet committed, over the task's partitions."""
        self.sink_active = count
        self.sink_active_stat.record(count)

    def record_commit_attempt(self) -> None:
        """A sink offset commit starts (Kafka increments its commitSeqno)."""
        self.commit_seq_no += 1

    def record_commit(self, elapsed_s: float, ok: bool) -> None:
        """An offset commit ended after ``elapsed_s``, successfully or not."""
        now = self._clock()
        if ok:
            self.commit_time_ms.record(elapsed_s * 1000, now)
            self.commit_completion_total += 1
            self.commit_completions.record(1, now)
        self.commit_results.record(1.0 if ok else 0.0, now)

    def commit_success_fraction(self, now: float | None = None) -> float:
        """offset-commit-success-percentage: Kafka's ``Frequencies`` over the window, a
        fraction in 0..1 (0.0 when no commit was attempted)."""
        value = self.commit_results.avg(now)
        return 0.0 if value != value else value  # NaN: no attempt in the window
