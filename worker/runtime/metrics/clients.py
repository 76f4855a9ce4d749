"""Client metrics of the worker's Kafka clients, read from librdkafka's statistics; names
and meanings in docs/metrics.md, "Task clients (librdkafka statistics)".

Whose: a task's own client (a sink task's consumer, a source task's producer), a sink
task's dead letter queue producer, and in distributed mode the worker's internal-topic
clients (the config, offset and status logs' producers, consumers and admin clients; the
admin clients built for one operation, e.g. a topic creation or an offsets request, live
too briefly to report).

A sink task's consumer is the exception: it builds no statistics unless asked, and its
series come from the task itself: ``records-consumed-total`` is what the task read, the
lags are read by its thread (``worker.runtime.metrics.consumer_lag``); only
``bytes-consumed-total`` needs its statistics.

librdkafka builds a JSON document every ``statistics.interval.ms`` (``kafka_clients`` sets
it for task clients, the composition root for the internal ones) and hands it to the
client's ``stats_cb`` from the call that serves the client — ``consume()``, ``poll()`` or
``flush()``, on whichever thread makes that call. A listener parses it there, once per
interval and never per record, into a small immutable snapshot (``ConsumerStats``,
``ProducerStats``) kept in one attribute or dict assignment, without a lock:
``TaskMetrics.client_stats`` (``StatsListener``), ``ErrorMetrics.dlq_client_stats``
(``DeadLetterQueueStatsListener``), or per client id in ``WorkerClientStats``. At scrape
time ``client_families`` turns the current snapshots into Prometheus families named as the
usual JMX-exporter rules name the Java clients' MBeans:
``kafka_consumer_consumer_fetch_manager_metrics_<name>``,
``kafka_producer_producer_metrics_<name>`` and
``kafka_admin_client_admin_client_metrics_<name>``, ``-`` → ``_``; each family once, with
the samples of every client.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.metrics_core import Metric

from worker.runtime.metrics.client_stats import (
    AdminStats,
    ClientStats,
    ConsumerStats,
    ProducerStats,
)

if TYPE_CHECKING:
    from worker.runtime.metrics.tasks import ErrorMetrics, TaskMetrics

log = logging.getLogger(__name__)

CONSUMER_PREFIX = "kafka_consumer_consumer_fetch_manager_metrics"
PRODUCER_PREFIX = "kafka_producer_producer_metrics"
ADMIN_PREFIX = "kafka_admin_client_admin_client_metrics"
LABELS = ("client_id", "connector", "task")


def _int(doc: dict[str, Any], key: str) -> int | None:
    value = doc.get(key)
    # bool is an int too: never a counter's value.
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _dicts(value: Any) -> Iterator[dict[str, Any]]:
    """The object values of ``value`` if it is a JSON object, else nothing."""
    if isinstance(value, dict):
        yield from (v for v in value.values() if isinstance(v, dict))


def _request_latency_avg_ms(doc: dict[str, Any]) -> float:
    """The brokers' round-trip-time averages (µs, over the last statistics interval),
    weighted by their request counts, in ms; NaN when no request was answered (Kafka's
    ``Avg`` of an empty window is NaN too)."""
    total = count = 0.0
    for broker in _dicts(doc.get("brokers")):
        rtt = broker.get("rtt")
        if not isinstance(rtt, dict):
            continue
        avg, cnt = rtt.get("avg"), _int(rtt, "cnt")
        if isinstance(avg, int | float) and cnt:
            total += avg * cnt
            count += cnt
    return total / count / 1000 if count else math.nan


def _document(text: str | bytes) -> dict[str, Any]:
    doc = json.loads(text)
    if not isinstance(doc, dict):
        raise ValueError("the statistics are not a JSON object")
    return doc


def parse_stats(text: str | bytes) -> ClientStats | None:
    """The snapshot of one librdkafka statistics document; None for another client type.

    Missing or mistyped fields are left out (None, or no lag); a document that is not a
    JSON object raises ``ValueError``.
    """
    doc = _document(text)
    client_id = str(doc.get("client_id", ""))
    kind = doc.get("type")
    if kind == "consumer":
        return ConsumerStats(client_id, _int(doc, "rxmsgs"), _int(doc, "rxmsg_bytes"))
    if kind == "producer":
        return ProducerStats(client_id, _int(doc, "txmsgs"), _int(doc, "tx_bytes"),
                             _request_latency_avg_ms(doc))
    return None


def parse_admin_stats(text: str | bytes) -> AdminStats:
    """The snapshot of one statistics document of an admin client; a document that is not
    a JSON object raises ``ValueError``."""
    doc = _document(text)
    up = sum(1 for broker in _dicts(doc.get("brokers"))
             if broker.get("state") == "UP" and _int(broker, "nodeid") not in (None, -1))
    return AdminStats(str(doc.get("client_id", "")), _int(doc, "tx"), _int(doc, "rx"),
                      _int(doc, "tx_bytes"), _int(doc, "rx_bytes"), up)


class _Listener:
    """A client's ``stats_cb``: parses each document and keeps the snapshot (``_keep``)."""

    __slots__ = ("_warned",)

    def __init__(self) -> None:
        self._warned = False

    def __call__(self, stats_json: str) -> None:
        # Called inside the client's consume()/poll()/flush(): an exception leaving this
        # callback is raised again by that call and would fail the task (or end an
        # internal log's thread), so none may. A document that cannot be read keeps the
        # previous snapshot.
        try:
            snapshot = self._parse(stats_json)
            if snapshot is not None:
                self._keep(snapshot)
        except Exception as exc:
            if not self._warned:  # once per listener: the next documents fail alike
                self._warned = True
                log.warning("%s: librdkafka's statistics could not be read, so its client "
                            "metrics are not updated: %s: %s", self._owner(),
                            type(exc).__name__, exc)

    def _parse(self, stats_json: str) -> ClientStats | None:
        return parse_stats(stats_json)

    def _keep(self, snapshot: ClientStats) -> None:
        raise NotImplementedError

    def _owner(self) -> str:
        raise NotImplementedError


class StatsListener(_Listener):
    """A task client's ``stats_cb``: keeps the latest snapshot on the task's metrics."""

    __slots__ = ("_metrics",)

    def __init__(self, metrics: TaskMetrics) -> None:
        super().__init__()
        self._metrics = metrics

    def _keep(self, snapshot: ClientStats) -> None:
        self._metrics.client_stats = snapshot

    def _owner(self) -> str:
        return f"Task {self._metrics.connector}-{self._metrics.task}"


class DeadLetterQueueStatsListener(_Listener):
    """The ``stats_cb`` of a sink task's dead letter queue producer: keeps the latest
    snapshot on the task's error metrics (``ErrorMetrics.dlq_client_stats``)."""

    __slots__ = ("_metrics", "_task")

    def __init__(self, metrics: ErrorMetrics, task: str) -> None:
        super().__init__()
        self._metrics = metrics
        self._task = task  # "{connector}-{task}", for the warning

    def _keep(self, snapshot: ClientStats) -> None:
        self._metrics.dlq_client_stats = snapshot

    def _owner(self) -> str:
        return f"Task {self._task}: the dead letter queue producer"


class WorkerClientStats:
    """The latest snapshot of each of the worker's own clients (the internal topics'
    producers, consumers and admin clients in distributed mode), by client id; exported
    with empty ``connector`` and ``task`` labels.

    ``listener(name)`` is the ``stats_cb`` handed to the producer and consumer of one
    internal topic, ``admin_listener(name)`` that of its admin client
    (``TopicBackedStore.report_statistics``); their threads replace a client's snapshot in
    one dict assignment, and a scrape copies the dict (``snapshots``).
    """

    __slots__ = ("_latest",)

    def __init__(self) -> None:
        self._latest: dict[str, ClientStats] = {}

    def listener(self, name: str) -> Callable[[str], None]:
        """The ``stats_cb`` of the clients of ``name`` (e.g. an internal topic's name):
        one warning for them when their statistics cannot be read."""
        return _WorkerClientListener(self._latest, name)

    def admin_listener(self, name: str) -> Callable[[str], None]:
        """The ``stats_cb`` of the admin client of ``name``: its documents read as an
        admin client's (librdkafka types them as a producer's)."""
        return _WorkerAdminListener(self._latest, name)

    def snapshots(self) -> list[ClientStats]:
        return list(dict(self._latest).values())  # a C-level copy: safe while they change


class _WorkerClientListener(_Listener):
    __slots__ = ("_latest", "_name")

    def __init__(self, latest: dict[str, ClientStats], name: str) -> None:
        super().__init__()
        self._latest = latest
        self._name = name

    def _keep(self, snapshot: ClientStats) -> None:
        self._latest[snapshot.client_id] = snapshot

    def _owner(self) -> str:
        return f"The worker's clients of {self._name}"


class _WorkerAdminListener(_WorkerClientListener):
    __slots__ = ()

    def _parse(self, stats_json: str) -> ClientStats | None:
        return parse_admin_stats(stats_json)


# --- Prometheus families, at scrape time ---------------------------------------------------

ConsumerRead = Callable[[ConsumerStats], float | None]
ProducerRead = Callable[[ProducerStats], float | None]
AdminRead = Callable[[AdminStats], float | None]

CONSUMER_METRICS: tuple[tuple[str, str, ConsumerRead], ...] = (
    ("records-lag-max", "The maximum lag in number of records over the partitions assigned "
     "to this consumer, at its last statistics.", lambda s: s.lag_max),
    ("records-consumed-total", "The total number of records consumed (fetched from the "
     "brokers) by this consumer.", lambda s: s.records_consumed),
    ("bytes-consumed-total", "The total number of record bytes consumed (fetched from the "
     "brokers) by this consumer.", lambda s: s.bytes_consumed),
)

PRODUCER_METRICS: tuple[tuple[str, str, ProducerRead], ...] = (
    ("record-send-total", "The total number of records sent (transmitted to the brokers) "
     "by this producer.", lambda s: s.records_sent),
    ("outgoing-byte-total", "The total number of bytes sent to the brokers by this "
     "producer.", lambda s: s.bytes_sent),
    ("request-latency-avg", "The average request latency in ms over the last statistics "
     "interval.", lambda s: s.request_latency_avg_ms),
)


ADMIN_METRICS: tuple[tuple[str, str, AdminRead], ...] = (
    ("request-total", "The total number of requests sent by this admin client.",
     lambda s: s.requests),
    ("response-total", "The total number of responses received by this admin client.",
     lambda s: s.responses),
    ("outgoing-byte-total", "The total number of bytes sent to the brokers by this admin "
     "client.", lambda s: s.bytes_sent),
    ("incoming-byte-total", "The total number of bytes received from the brokers by this "
     "admin client.", lambda s: s.bytes_received),
    ("connection-count", "The current number of active connections to brokers.",
     lambda s: s.connections),
)


def _family(prefix: str, name: str, doc: str, labels: Iterable[str]
            ) -> CounterMetricFamily | GaugeMetricFamily:
    full = f"{prefix}_{name}".replace("-", "_")
    kind = CounterMetricFamily if name.endswith("-total") else GaugeMetricFamily
    return kind(full, doc, labels=list(labels))


Member = tuple[list[str], Any]  # a client's label values (LABELS) and its snapshot


def client_families(tasks: Iterable[TaskMetrics], worker_clients: Iterable[ClientStats] = ()
                    ) -> Iterator[Metric]:
    """The client families of every client that has produced statistics: the tasks' own
    clients and dead letter queue producers, and ``worker_clients`` (the worker's own,
    ``connector`` and ``task`` empty). Each family once, its samples ordered by connector,
    task and client id (the worker's own first)."""
    # (sort key, snapshot, label values)
    found: list[tuple[tuple[str, int, str], ClientStats, list[str]]] = [
        (("", -1, s.client_id), s, [s.client_id, "", ""]) for s in worker_clients]
    for m in tasks:
        # Each read once: the task thread may replace them meanwhile.
        own = _sink_consumer(m) if m.kind == "sink" else m.client_stats
        for stats in (own, m.errors.dlq_client_stats):
            if stats is not None:
                found.append(((m.connector, m.task, stats.client_id), stats,
                              [stats.client_id, m.connector, str(m.task)]))
    found.sort(key=lambda f: f[0])
    consumers: list[Member] = [(v, s) for _, s, v in found if isinstance(s, ConsumerStats)]
    producers: list[Member] = [(v, s) for _, s, v in found if isinstance(s, ProducerStats)]
    admins: list[Member] = [(v, s) for _, s, v in found if isinstance(s, AdminStats)]
    if consumers:
        yield from _simple(CONSUMER_PREFIX, CONSUMER_METRICS, consumers)
        lag = _family(CONSUMER_PREFIX, "records-lag", "The latest lag in number of records "
                      "of the partition.", [*LABELS, "topic", "partition"])
        for label_values, c in consumers:
            for topic, partition, value in c.lags:
                lag.add_metric([*label_values, topic, str(partition)], float(value))
        yield lag
    if producers:
        yield from _simple(PRODUCER_PREFIX, PRODUCER_METRICS, producers)
    if admins:
        yield from _simple(ADMIN_PREFIX, ADMIN_METRICS, admins)


def _sink_consumer(m: TaskMetrics) -> ConsumerStats | None:
    """A sink task's consumer, once created: what the task read and the lags its thread
    read; the bytes only from statistics, if asked for."""
    client_id = m.client_id
    if client_id is None:
        return None
    stats = m.client_stats
    return ConsumerStats(client_id, m.read_total,
                         stats.bytes_consumed if isinstance(stats, ConsumerStats) else None,
                         m.consumer_lags)


def _simple(prefix: str, specs: tuple[tuple[str, str, Callable[[Any], float | None]], ...],
            members: list[Member]) -> Iterator[Metric]:
    for name, doc, read in specs:
        family = _family(prefix, name, doc, LABELS)
        for label_values, stats in members:
            value = read(stats)
            if value is not None:  # not in the document: no sample
                family.add_metric(label_values, float(value))
        yield family
