"""Kafka Connect's metrics as Prometheus metric families, computed at scrape time.

**Naming (docs/metrics.md).** A Kafka metric ``name`` of group ``group`` is exposed as
``kafka_connect_<group>_<name>`` with every ``-`` turned into ``_`` (the names the common
JMX-exporter rules give Kafka Connect's MBeans), e.g. ``source-record-poll-total`` of
``source-task-metrics`` → ``kafka_connect_source_task_metrics_source_record_poll_total``.
Kafka's tags are labels: ``connector`` and ``task`` (the task number). A name ending in
``-total`` is a Prometheus counter; every other numeric metric is a gauge (Kafka's windowed
rates, averages and maxima over ``metrics.num.samples`` × ``metrics.sample.window.ms``,
ratios, counts). A string-valued metric (``status``, ``connector-class``, ``leader-name``,
...) is a gauge of value 1 whose label, named like the metric, carries the string.

``ConnectMetricsCollector`` reads the Worker's running connectors and tasks and their
accumulators (``worker.runtime.metrics.tasks``, ``worker.runtime.metrics.worker``); it
changes nothing and takes no task's lock. The Kafka clients' own metrics (consumer lag,
producer sends) of the tasks, their dead letter queues and, in distributed mode, the
worker's internal topics follow the Java clients' names instead:
``worker.runtime.metrics.clients``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from worker.api.connector import SinkConnector, SourceConnector
from worker.runtime.errors.handling import class_name
from worker.runtime.metrics.clients import WorkerClientStats, client_families
from worker.runtime.metrics.tasks import TaskMetrics
from worker.runtime.metrics.worker import RebalanceMetrics, WorkerMetrics
from worker.storage.base import State

if TYPE_CHECKING:
    from worker.runtime.worker import Worker

PREFIX = "kafka_connect"
CONNECTOR_TAG = "connector"
TASK_TAG = "task"

WORKER = "connect-worker-metrics"
CONNECTOR = "connector-metrics"
TASK = "connector-task-metrics"
SOURCE = "source-task-metrics"
SINK = "sink-task-metrics"
ERRORS = "task-error-metrics"
REBALANCE = "connect-worker-rebalance-metrics"


def prometheus_name(group: str, name: str) -> str:
    """The Prometheus name of Kafka's metric ``name`` in ``group`` (module docstring)."""
    return f"{PREFIX}_{group}_{name}".replace("-", "_").replace(".", "_")


def is_counter(name: str) -> bool:
    return name.endswith("-total")


@dataclass(frozen=True)
class TaskMetric:
    """A numeric per-task metric: its Kafka group and name, doc, and how to read it."""

    group: str
    name: str
    doc: str
    read: Callable[[TaskMetrics, float], float]


def _nan_to_zero(value: float) -> float:
    return 0.0 if math.isnan(value) else value


TASK_METRICS: tuple[TaskMetric, ...] = (
    TaskMetric(TASK, "running-ratio", "The fraction of time this task has spent in the "
               "running state.", lambda m, now: m.ratio(State.RUNNING, now)),
    TaskMetric(TASK, "pause-ratio", "The fraction of time this task has spent in the pause "
               "state.", lambda m, now: m.ratio(State.PAUSED, now)),
    TaskMetric(TASK, "offset-commit-max-time-ms", "The maximum time in milliseconds taken "
               "by this task to commit offsets.", lambda m, now: m.commit_time_ms.max(now)),
    TaskMetric(TASK, "offset-commit-avg-time-ms", "The average time in milliseconds taken "
               "by this task to commit offsets.", lambda m, now: m.commit_time_ms.avg(now)),
    TaskMetric(TASK, "offset-commit-success-percentage", "The average fraction (0..1) of "
               "this task's offset commit attempts that succeeded.",
               lambda m, now: _nan_to_zero(m.commit_results.avg(now))),
    TaskMetric(TASK, "offset-commit-failure-percentage", "The average fraction (0..1) of "
               "this task's offset commit attempts that failed.",
               lambda m, now: _nan_to_zero(1.0 - m.commit_results.avg(now))),
    TaskMetric(TASK, "batch-size-max", "The number of records in the largest batch the "
               "task has processed.", lambda m, now: m.batch_size.max(now)),
    TaskMetric(TASK, "batch-size-avg", "The average number of records in the batches the "
               "task has processed.", lambda m, now: m.batch_size.avg(now)),
)

SOURCE_METRICS: tuple[TaskMetric, ...] = (
    TaskMetric(SOURCE, "source-record-poll-total", "The number of records polled (before "
               "transformation) by this task.", lambda m, now: m.poll_total),
    TaskMetric(SOURCE, "source-record-poll-rate", "The average per-second number of "
               "records polled (before transformation) by this task.",
               lambda m, now: m.poll_counts.rate(now)),
    TaskMetric(SOURCE, "source-record-write-total", "The number of records written to "
               "Kafka (acknowledged) for this task, after transformations.",
               lambda m, now: m.write_total),
    TaskMetric(SOURCE, "source-record-write-rate", "The average per-second number of "
               "records written to Kafka for this task, after transformations.",
               lambda m, now: m.write_counts.rate(now)),
    TaskMetric(SOURCE, "poll-batch-max-time-ms", "The maximum time in milliseconds taken "
               "by this task to poll for a batch of source records.",
               lambda m, now: m.poll_time_ms.max(now)),
    TaskMetric(SOURCE, "poll-batch-avg-time-ms", "The average time in milliseconds taken "
               "by this task to poll for a batch of source records.",
               lambda m, now: m.poll_time_ms.avg(now)),
    TaskMetric(SOURCE, "source-record-active-count", "The number of records polled by "
               "this task but not yet completely written to Kafka.",
               lambda m, now: m.source_active),
    TaskMetric(SOURCE, "source-record-active-count-max", "The maximum number of records "
               "polled but not yet written to Kafka.",
               lambda m, now: m.source_active_stat.max(now)),
    TaskMetric(SOURCE, "source-record-active-count-avg", "The average number of records "
               "polled but not yet written to Kafka.",
               lambda m, now: m.source_active_stat.avg(now)),
)

SINK_METRICS: tuple[TaskMetric, ...] = (
    TaskMetric(SINK, "sink-record-read-total", "The number of records read from Kafka by "
               "this task.", lambda m, now: m.read_total),
    TaskMetric(SINK, "sink-record-read-rate", "The average per-second number of records "
               "read from Kafka by this task, before transformations.",
               lambda m, now: m.read_counts.rate(now)),
    TaskMetric(SINK, "sink-record-send-total", "The number of records output from the "
               "transformations and put to this task.", lambda m, now: m.send_total),
    TaskMetric(SINK, "sink-record-send-rate", "The average per-second number of records "
               "output from the transformations and put to this task.",
               lambda m, now: m.send_counts.rate(now)),
    TaskMetric(SINK, "put-batch-max-time-ms", "The maximum time in milliseconds taken by "
               "this task to put a batch of sink records.",
               lambda m, now: m.put_time_ms.max(now)),
    TaskMetric(SINK, "put-batch-avg-time-ms", "The average time in milliseconds taken by "
               "this task to put a batch of sink records.",
               lambda m, now: m.put_time_ms.avg(now)),
    TaskMetric(SINK, "partition-count", "The number of topic partitions assigned to this "
               "task.", lambda m, now: m.partition_count),
    TaskMetric(SINK, "offset-commit-completion-total", "The number of offset commits that "
               "completed successfully.", lambda m, now: m.commit_completion_total),
    TaskMetric(SINK, "offset-commit-completion-rate", "The average per-second number of "
               "offset commits that completed successfully.",
               lambda m, now: m.commit_completions.rate(now)),
    TaskMetric(SINK, "offset-commit-seq-no", "The current sequence number for offset "
               "commits.", lambda m, now: m.commit_seq_no),
    # Kafka counts a commit completion that arrives for an outdated sequence number; our
    # commits are synchronous, so there is none: 0, kept so that dashboards find the series.
    TaskMetric(SINK, "offset-commit-skip-total", "The number of offset commit completions "
               "that were received too late and skipped (always 0: commits are "
               "synchronous).", lambda m, now: m.commit_skip_total),
    TaskMetric(SINK, "offset-commit-skip-rate", "The average per-second number of offset "
               "commit completions that were received too late and skipped (always 0: "
               "commits are synchronous).", lambda m, now: 0.0),
    TaskMetric(SINK, "sink-record-active-count", "The number of records read from Kafka "
               "but not yet committed by this task.", lambda m, now: m.sink_active),
    TaskMetric(SINK, "sink-record-active-count-max", "The maximum number of records read "
               "but not yet committed.", lambda m, now: m.sink_active_stat.max(now)),
    TaskMetric(SINK, "sink-record-active-count-avg", "The average number of records read "
               "but not yet committed.", lambda m, now: m.sink_active_stat.avg(now)),
)

ERROR_METRICS: tuple[TaskMetric, ...] = (
    TaskMetric(ERRORS, "total-record-failures", "The number of record processing failures "
               "(every failed attempt) in this task.",
               lambda m, now: m.errors.record_failures),
    TaskMetric(ERRORS, "total-record-errors", "The number of record processing errors "
               "(records that failed for good) in this task.",
               lambda m, now: m.errors.record_errors),
    TaskMetric(ERRORS, "total-records-skipped", "The number of records skipped due to "
               "errors.", lambda m, now: m.errors.records_skipped),
    TaskMetric(ERRORS, "total-retries", "The number of operations retried.",
               lambda m, now: m.errors.retries),
    TaskMetric(ERRORS, "total-errors-logged", "The number of errors that were logged.",
               lambda m, now: m.errors.errors_logged),
    TaskMetric(ERRORS, "deadletterqueue-produce-requests", "The number of attempted writes "
               "to the dead letter queue.", lambda m, now: m.errors.dlq_produce_requests),
    TaskMetric(ERRORS, "deadletterqueue-produce-failures", "The number of failed writes to "
               "the dead letter queue.", lambda m, now: m.errors.dlq_produce_failures),
    TaskMetric(ERRORS, "last-error-timestamp", "The epoch timestamp (ms) when this task "
               "last encountered an error; 0 if never.",
               lambda m, now: m.errors.last_error_timestamp_ms),
)

#: connect-worker-metrics per connector: task counts by state (Kafka's names).
TASK_COUNT_STATES: tuple[tuple[str, State | None], ...] = (
    ("connector-total-task-count", None),
    ("connector-running-task-count", State.RUNNING),
    ("connector-paused-task-count", State.PAUSED),
    ("connector-failed-task-count", State.FAILED),
    ("connector-unassigned-task-count", State.UNASSIGNED),
    ("connector-destroyed-task-count", State.DESTROYED),
    ("connector-restarting-task-count", State.RESTARTING),
)


Family = CounterMetricFamily | GaugeMetricFamily


def _family(group: str, name: str, doc: str, labels: list[str]) -> Family:
    if is_counter(name):
        return CounterMetricFamily(prometheus_name(group, name), doc, labels=labels)
    return GaugeMetricFamily(prometheus_name(group, name), doc, labels=labels)


def _info(group: str, name: str, doc: str, labels: list[str]) -> GaugeMetricFamily:
    """A string-valued Kafka metric: value 1, the string in a label named like it."""
    return GaugeMetricFamily(prometheus_name(group, name), doc,
                             labels=[*labels, name.replace("-", "_")])


class ConnectMetricsCollector(Collector):
    """Yields every family at scrape time from the worker's live state."""

    def __init__(self, worker: Worker, clock: Callable[[], float],
                 rebalance: RebalanceMetrics | None = None,
                 worker_clients: WorkerClientStats | None = None) -> None:
        self._worker = worker
        self._clock = clock
        self._rebalance = rebalance
        # The worker's own clients' statistics (distributed mode: the internal topics').
        self._worker_clients = worker_clients

    def describe(self) -> list[Metric]:
        return []  # families depend on what runs: never checked at registration

    def collect(self) -> Iterator[Metric]:
        now = self._clock()
        worker = self._worker
        tasks = dict(worker.tasks)  # a C-level copy: safe while the herder changes it
        metrics = [t.metrics for t in tasks.values()]
        yield from self._worker_metrics(worker.metrics, len(worker.connectors), metrics)
        yield from self._connector_metrics(worker)
        yield from self._task_metrics(metrics, now)
        own = self._worker_clients
        yield from client_families(metrics, own.snapshots() if own is not None else ())
        if self._rebalance is not None:
            yield from rebalance_families(self._rebalance, now)

    def _worker_metrics(self, wm: WorkerMetrics, connectors: int,
                        tasks: list[TaskMetrics]) -> Iterator[Metric]:
        now = self._clock()
        counts: dict[str, tuple[str, float]] = {
            "connector-count": ("The number of connectors run in this worker.", connectors),
            "task-count": ("The number of tasks run in this worker.", len(tasks)),
        }
        for kind, success, failure, results in (
                ("connector", wm.connector_startup_success, wm.connector_startup_failure,
                 wm.connector_startup_results),
                ("task", wm.task_startup_success, wm.task_startup_failure,
                 wm.task_startup_results)):
            avg = results.avg(now)
            counts.update({
                f"{kind}-startup-attempts-total": (
                    f"The total number of {kind} startups that this worker has attempted.",
                    success + failure),
                f"{kind}-startup-success-total": (
                    f"The total number of {kind} starts that succeeded.", success),
                f"{kind}-startup-failure-total": (
                    f"The total number of {kind} starts that failed.", failure),
                f"{kind}-startup-success-percentage": (
                    f"The average fraction (0..1) of this worker's {kind} starts that "
                    "succeeded.", _nan_to_zero(avg)),
                f"{kind}-startup-failure-percentage": (
                    f"The average fraction (0..1) of this worker's {kind} starts that "
                    "failed.", _nan_to_zero(1.0 - avg)),
            })
        for name, (doc, value) in counts.items():
            family = _family(WORKER, name, doc, [])
            family.add_metric([], value)
            yield family
        by_connector: dict[str, list[TaskMetrics]] = {}
        for m in tasks:
            by_connector.setdefault(m.connector, []).append(m)
        for name, state in TASK_COUNT_STATES:
            label = "tasks" if state is None else f"{state.value.lower()} tasks"
            family = _family(WORKER, name, f"The number of {label} of the connector on "
                             "the worker.", [CONNECTOR_TAG])
            for connector, members in sorted(by_connector.items()):
                family.add_metric([connector], sum(
                    1 for m in members if state is None or m.state is state))
            yield family

    def _connector_metrics(self, worker: Worker) -> Iterator[Metric]:
        connectors = dict(worker.connectors)
        status = _info(CONNECTOR, "status", "The status of the connector.", [CONNECTOR_TAG])
        kind = _info(CONNECTOR, "connector-type", "The type of the connector: source or "
                     "sink.", [CONNECTOR_TAG])
        cls = _info(CONNECTOR, "connector-class", "The name of the connector class.",
                    [CONNECTOR_TAG])
        version = _info(CONNECTOR, "connector-version", "The version of the connector "
                        "class, as reported by the connector.", [CONNECTOR_TAG])
        for name, wc in sorted(connectors.items()):
            status.add_metric([name, wc.state.value.lower()], 1)
            connector = wc.connector
            if connector is None:  # not instantiated (yet, or it failed to)
                continue
            kind.add_metric([name, "source" if isinstance(connector, SourceConnector)
                             else "sink" if isinstance(connector, SinkConnector)
                             else "unknown"], 1)
            cls.add_metric([name, class_name(type(connector))], 1)
            version.add_metric([name, wc.version], 1)
        yield from (status, kind, cls, version)

    def _task_metrics(self, tasks: list[TaskMetrics], now: float) -> Iterator[Metric]:
        labels = [CONNECTOR_TAG, TASK_TAG]
        ordered = sorted(tasks, key=lambda m: (m.connector, m.task))
        status = _info(TASK, "status", "The status of the connector task.", labels)
        for m in ordered:
            status.add_metric([m.connector, str(m.task), m.state.value.lower()], 1)
        yield status
        for specs, kind in ((TASK_METRICS, None), (SOURCE_METRICS, "source"),
                            (SINK_METRICS, "sink"), (ERROR_METRICS, None)):
            members = [m for m in ordered if kind is None or m.kind == kind]
            for spec in specs:
                family = _family(spec.group, spec.name, spec.doc, labels)
                for m in members:
                    family.add_metric([m.connector, str(m.task)], float(spec.read(m, now)))
                yield family


def rebalance_families(rm: RebalanceMetrics, now: float) -> Iterator[Metric]:
    """connect-worker-rebalance-metrics (distributed mode only)."""
    protocol = _info(REBALANCE, "connect-protocol", "The Connect protocol used by this "
                     "cluster.", [])
    protocol.add_metric([rm.protocol], 1)
    leader = _info(REBALANCE, "leader-name", "The name (URL) of the group leader.", [])
    if rm.leader:
        leader.add_metric([rm.leader], 1)
    yield from (protocol, leader)
    values = (
        ("epoch", "The epoch or generation number of this worker.", rm.epoch),
        ("completed-rebalances-total", "The total number of rebalances completed by this "
         "worker.", rm.completed),
        ("rebalancing", "Whether this worker is currently rebalancing (1) or not (0).",
         1 if rm.rebalancing else 0),
        ("rebalance-max-time-ms", "The maximum time in milliseconds spent by this worker "
         "to rebalance.", rm.times_ms.max(now)),
        ("rebalance-avg-time-ms", "The average time in milliseconds spent by this worker "
         "to rebalance.", rm.times_ms.avg(now)),
        ("time-since-last-rebalance-ms", "The time in milliseconds since this worker "
         "completed the most recent rebalance.", rm.time_since_last_ms()),
    )
    for name, doc, value in values:
        family = _family(REBALANCE, name, doc, [])
        family.add_metric([], float(value))
        yield family
