"""What a worker counts for ``/metrics`` besides its tasks: Kafka Connect's
``connect-worker-metrics`` startup counters and, in distributed mode,
``connect-worker-rebalance-metrics``.

Startups are rare events recorded from several threads (connector threads, task threads,
the herder thread), so these counters take a lock; the per-batch task counters do not
(``worker.runtime.metrics.tasks``).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable

from worker.runtime.metrics.sampled_stat import MetricWindow, SampledStat


class WorkerMetrics:
    """connector-startup-* and task-startup-* (Kafka's ``WorkerMetricsGroup``)."""

    def __init__(self, window: MetricWindow | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.window = window or MetricWindow()
        self._lock = threading.Lock()
        self.connector_startup_success = 0
        self.connector_startup_failure = 0
        self.task_startup_success = 0
        self.task_startup_failure = 0
        # 1.0 per success, 0.0 per failure: the windowed *-startup-*-percentage.
        self.connector_startup_results = SampledStat(self.window, clock)
        self.task_startup_results = SampledStat(self.window, clock)

    def connector_startup(self, ok: bool) -> None:
        with self._lock:
            if ok:
                self.connector_startup_success += 1
            else:
                self.connector_startup_failure += 1
            self.connector_startup_results.record(1.0 if ok else 0.0)

    def task_startup(self, ok: bool) -> None:
        with self._lock:
            if ok:
                self.task_startup_success += 1
            else:
                self.task_startup_failure += 1
            self.task_startup_results.record(1.0 if ok else 0.0)


class RebalanceMetrics:
    """``connect-worker-rebalance-metrics`` (Kafka's ``DistributedHerder.HerderMetrics``):
    the membership thread reports a rebalance starting, the herder thread its end."""

    def __init__(self, protocol: str, window: MetricWindow | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 wall_clock: Callable[[], float] = time.time) -> None:
        self.protocol = protocol  # connect-protocol
        self._clock = clock
        self._wall = wall_clock
        self._lock = threading.Lock()
        self.completed = 0  # completed-rebalances-total
        self.rebalancing = False
        self.epoch = -1  # the generation joined last
        self.leader = ""  # leader-name: the leader's URL
        self._started_at: float | None = None
        self._completed_at_wall: float | None = None
        self.times_ms = SampledStat(window or MetricWindow(), clock)

    def started(self) -> None:
        with self._lock:
            if not self.rebalancing:
                self.rebalancing = True
                self._started_at = self._clock()

    def completed_round(self, generation: int, leader: str) -> None:
        """The worker joined ``generation`` and applied its assignment."""
        with self._lock:
            now = self._clock()
            if self._started_at is not None:
                self.times_ms.record((now - self._started_at) * 1000, now)
            self._started_at = None
            self.rebalancing = False
            self.completed += 1
            self.epoch = generation
            self.leader = leader
            self._completed_at_wall = self._wall()

    def time_since_last_ms(self) -> float:
        """time-since-last-rebalance-ms; +Inf before the first, as Kafka reports it."""
        last = self._completed_at_wall
        return math.inf if last is None else max(0.0, (self._wall() - last) * 1000)
