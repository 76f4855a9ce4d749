"""worker.runtime.metrics.clients: librdkafka's statistics → the task clients' metrics; a
sink task's consumer, whose count and lags come from the task (``TaskMetrics``), with only
its bytes from statistics, when they are asked for.

``librdkafka_stats/*.json`` are statistics documents of librdkafka 2.16 clients captured
against the test broker, trimmed to the fields that matter here:

- the consumer ``connector-consumer-sink-0`` was assigned ``orders`` 0..2 (100 records
  each) and handed 70 records of partition 0 to the application (no commit: its
  ``consumer_lag`` is -1, ``consumer_lag_stored`` 30); partition 1 was paused before any
  fetch (no high watermark yet: both lags -1); partition 2 was consumed, committed at 100,
  then unassigned (``desired`` false, its stale ``consumer_lag`` 0 kept); ``-1`` is
  librdkafka's internal unassigned partition;
- the producer ``connector-producer-gen-0`` sent 232 records in 65 requests (rtt average
  276 µs over the interval).
"""

from __future__ import annotations

import json
import logging
import math
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from confluent_kafka import Producer
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import CollectorRegistry

from worker.clients import factories as kafka_clients
from worker.config.worker_config import WorkerConfig
from worker.runtime.metrics.clients import (
    ConsumerStats,
    ProducerStats,
    StatsListener,
    client_families,
    parse_stats,
)
from worker.runtime.metrics.collector import ConnectMetricsCollector
from worker.runtime.metrics.sampled_stat import MetricWindow
from worker.runtime.metrics.tasks import TaskMetrics
from worker.runtime.metrics.worker import WorkerMetrics
from worker.storage.base import TaskId

STATS = Path(__file__).parent / "librdkafka_stats"
LAG = "kafka_consumer_consumer_fetch_manager_metrics_records_lag"
LAG_MAX = "kafka_consumer_consumer_fetch_manager_metrics_records_lag_max"
CONSUMED = "kafka_consumer_consumer_fetch_manager_metrics_records_consumed_total"
CONSUMED_BYTES = "kafka_consumer_consumer_fetch_manager_metrics_bytes_consumed_total"
SENT = "kafka_producer_producer_metrics_record_send_total"
SENT_BYTES = "kafka_producer_producer_metrics_outgoing_byte_total"
LATENCY = "kafka_producer_producer_metrics_request_latency_avg"


def doc(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((STATS / f"{name}.json").read_text())
    return loaded


def consumer(stats: dict[str, Any] | None = None) -> ConsumerStats:
    parsed = parse_stats(json.dumps(doc("consumer") if stats is None else stats))
    assert isinstance(parsed, ConsumerStats)
    return parsed


def producer(stats: dict[str, Any] | None = None) -> ProducerStats:
    parsed = parse_stats(json.dumps(doc("producer") if stats is None else stats))
    assert isinstance(parsed, ProducerStats)
    return parsed


# --- parsing -------------------------------------------------------------------------------

def test_consumer_totals_from_the_statistics_and_no_lag() -> None:
    stats = consumer()
    assert stats.client_id == "connector-consumer-sink-0"
    assert (stats.records_consumed, stats.bytes_consumed) == (200, 1800)
    # A sink task reads its lag itself (worker.runtime.metrics.consumer_lag); the document's
    # per-partition lags are not used, so the snapshot has none.
    assert stats.lags == () and stats.lag_max is None


def test_producer_totals_and_request_latency() -> None:
    stats = producer()
    assert stats.client_id == "connector-producer-gen-0"
    assert (stats.records_sent, stats.bytes_sent) == (232, 11718)
    assert stats.request_latency_avg_ms == pytest.approx(0.276)


def test_request_latency_is_weighted_by_requests_and_nan_without_any() -> None:
    raw = doc("producer")
    raw["brokers"]["other"] = {"name": "other", "rtt": {"avg": 1000, "cnt": 35}}
    raw["brokers"]["idle"] = {"name": "idle", "rtt": {"avg": 0, "cnt": 0}}
    assert producer(raw).request_latency_avg_ms == pytest.approx(
        (276 * 65 + 1000 * 35) / 100 / 1000)
    for broker in raw["brokers"].values():
        broker["rtt"]["cnt"] = 0
    assert math.isnan(producer(raw).request_latency_avg_ms)


@pytest.mark.parametrize("stats", [
    {"type": "consumer"},
    {"type": "consumer", "client_id": "c", "rxmsgs": "many", "topics": []},
    {"type": "consumer", "client_id": "c", "topics": {"t": {"topic": "t", "partitions": {
        "0": {"partition": 0}, "1": "x", "2": {"partition": "2", "consumer_lag": 5}}}}},
    {"type": "producer", "brokers": {"b": {"rtt": None}, "c": 1}, "txmsgs": True},
])
def test_missing_or_mistyped_fields_are_left_out(stats: dict[str, Any]) -> None:
    parsed = parse_stats(json.dumps(stats))
    assert parsed is not None
    if isinstance(parsed, ConsumerStats):
        assert parsed.lags == () and parsed.records_consumed is None
    else:
        assert parsed.records_sent is None and math.isnan(parsed.request_latency_avg_ms)


def test_another_client_type_is_no_snapshot() -> None:
    assert parse_stats('{"type": "admin"}') is None


# --- the stats callback ------------------------------------------------------------------

def task_metrics(kind: str = "sink", connector: str = "sink", task: int = 0) -> TaskMetrics:
    return TaskMetrics(connector, task, kind, MetricWindow(30.0, 2))


def test_the_listener_swaps_in_each_snapshot() -> None:
    m = task_metrics()
    listener = StatsListener(m)
    assert m.client_stats is None
    listener(json.dumps(doc("consumer")))
    first = m.client_stats
    assert isinstance(first, ConsumerStats) and first.bytes_consumed == 1800
    listener(json.dumps(doc("consumer")))
    assert m.client_stats == first and m.client_stats is not first


@pytest.mark.parametrize("bad", ["{not json", "[1, 2]", "", '{"type": "consumer", "x": '])
def test_an_unreadable_document_never_raises_and_warns_once(
        bad: str, caplog: pytest.LogCaptureFixture) -> None:
    m = task_metrics()
    listener = StatsListener(m)
    listener(json.dumps(doc("consumer")))
    kept = m.client_stats
    with caplog.at_level(logging.WARNING, logger="worker.runtime.metrics.clients"):
        listener(bad)
        listener(bad)
    assert m.client_stats is kept  # the previous snapshot stays
    warnings = [r for r in caplog.records if r.name == "worker.runtime.metrics.clients"]
    assert len(warnings) == 1
    assert "sink-0" in warnings[0].getMessage()


def test_a_real_producer_serves_its_statistics_to_the_listener() -> None:
    # No broker is needed: librdkafka emits statistics from its first interval on.
    m = task_metrics("source", "gen")
    p = Producer({"bootstrap.servers": "127.0.0.1:1", "client.id": "connector-producer-gen-0",
                  "statistics.interval.ms": 100, "stats_cb": StatsListener(m),
                  "logger": logging.getLogger("tests.librdkafka")})
    deadline = time.monotonic() + 10
    while m.client_stats is None and time.monotonic() < deadline:
        p.poll(0.05)
    assert isinstance(m.client_stats, ProducerStats)
    assert m.client_stats.client_id == "connector-producer-gen-0"
    assert m.client_stats.records_sent == 0


# --- Prometheus families -----------------------------------------------------------------

Families = dict[str, Any]


def scrape_clients(tasks: list[TaskMetrics]) -> Families:
    class Clients:
        def collect(self) -> Any:
            return client_families(tasks)

    registry = CollectorRegistry(auto_describe=False)
    registry.register(Clients())
    text = generate_latest(registry).decode()
    return {f.name: f for f in text_string_to_metric_families(text)}


def values(families: Families, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    family = families[name.removesuffix("_total")]
    return {tuple(sorted(s.labels.items())): s.value for s in family.samples
            if s.name == name}


def labels(client_id: str, connector: str, task: str, **more: str
           ) -> tuple[tuple[str, str], ...]:
    return tuple(sorted({"client_id": client_id, "connector": connector, "task": task,
                         **more}.items()))


def sink_consumer(m: TaskMetrics, read: int = 0, lags: tuple[tuple[str, int, int], ...] = ()
                  ) -> TaskMetrics:
    """``m`` as a sink task leaves it: its consumer created, ``read`` records handed to
    it, ``lags`` as its thread last read them."""
    m.client_id = f"connector-consumer-{m.connector}-{m.task}"
    m.record_read(read)
    m.consumer_lags = lags
    return m


def test_families_of_a_consumer_and_a_producer() -> None:
    sink = sink_consumer(task_metrics(), 150, (("orders", 0, 30), ("orders", 1, 60)))
    source, idle = task_metrics("source", "gen"), task_metrics("sink", "b")
    sink.client_stats = consumer()  # asked for: statistics.interval.ms set
    source.client_stats = producer()
    families = scrape_clients([sink, source, idle])  # idle: no consumer yet, no samples
    who = labels("connector-consumer-sink-0", "sink", "0")
    assert values(families, LAG_MAX) == {who: 60.0}
    assert values(families, LAG) == {
        labels("connector-consumer-sink-0", "sink", "0", topic="orders", partition="0"): 30.0,
        labels("connector-consumer-sink-0", "sink", "0", topic="orders", partition="1"): 60.0}
    # Records handed to the task (as the Java consumer counts them), not the 200 fetched.
    assert values(families, CONSUMED) == {who: 150.0}
    assert values(families, CONSUMED_BYTES) == {who: 1800.0}
    them = labels("connector-producer-gen-0", "gen", "0")
    assert values(families, SENT) == {them: 232.0}
    assert values(families, SENT_BYTES) == {them: 11718.0}
    assert values(families, LATENCY) == {them: pytest.approx(0.276)}
    kinds = {name: f.type for name, f in families.items()}
    assert kinds[CONSUMED.removesuffix("_total")] == "counter"
    assert kinds[SENT.removesuffix("_total")] == "counter"
    assert kinds[LAG_MAX] == kinds[LAG] == kinds[LATENCY] == "gauge"


def test_no_clients_no_client_families() -> None:
    assert scrape_clients([task_metrics(), task_metrics("source", "gen")]) == {}


def test_a_sink_consumer_without_statistics_has_its_count_and_lags_not_its_bytes() -> None:
    # The default: the task's consumer builds no statistics.
    families = scrape_clients([sink_consumer(task_metrics(), 7, (("orders", 0, 3),))])
    who = labels("connector-consumer-sink-0", "sink", "0")
    assert values(families, CONSUMED) == {who: 7.0}
    assert values(families, LAG_MAX) == {who: 3.0}
    assert values(families, CONSUMED_BYTES) == {}


def test_before_its_first_lag_a_sink_consumer_has_no_lag_samples() -> None:
    families = scrape_clients([sink_consumer(task_metrics())])
    assert values(families, CONSUMED) == {labels("connector-consumer-sink-0", "sink", "0"):
                                          0.0}
    assert values(families, LAG_MAX) == {} and values(families, LAG) == {}


def test_fields_missing_from_the_statistics_have_no_sample() -> None:
    m = task_metrics("source", "gen")
    m.client_stats = ProducerStats("p", None, 5, math.nan)
    families = scrape_clients([m])
    assert values(families, SENT) == {}
    assert values(families, SENT_BYTES) == {labels("p", "gen", "0"): 5.0}


def test_the_worker_collector_serves_the_client_families() -> None:
    m = sink_consumer(task_metrics(), 70, (("orders", 0, 30),))
    worker = SimpleNamespace(tasks={TaskId("sink", 0): SimpleNamespace(metrics=m)},
                             connectors={}, metrics=WorkerMetrics())
    registry = CollectorRegistry(auto_describe=False)
    registry.register(ConnectMetricsCollector(worker, lambda: 1e9))  # type: ignore[arg-type]
    text = generate_latest(registry).decode()
    assert f'{LAG_MAX}{{client_id="connector-consumer-sink-0",connector="sink",task="0"}} ' \
           "30.0" in text


# --- the task clients' statistics.interval.ms ---------------------------------------------

def worker_config(**props: str) -> WorkerConfig:
    return WorkerConfig({"bootstrap.servers": "b:9092",
                         **{k.replace("_", "."): v for k, v in props.items()}})


def test_task_producers_default_to_the_metrics_window() -> None:
    worker = worker_config()
    assert kafka_clients.producer_config(worker, {}, "p", statistics=True)[
        "statistics.interval.ms"] == "30000"
    short = worker_config(metrics_sample_window_ms="5000")
    assert kafka_clients.statistics_interval_ms(short) == 5000
    tiny = worker_config(metrics_sample_window_ms="10")
    assert kafka_clients.statistics_interval_ms(tiny) == 1000  # at least 1 s


def test_a_worker_that_serves_no_metrics_builds_no_client_statistics() -> None:
    # They would cost each client its histograms (110-140 kB) for nothing.
    worker = worker_config(rest_metrics_enabled="false")
    assert "statistics.interval.ms" not in kafka_clients.producer_config(
        worker, {}, "p", statistics=True)
    # An explicit setting is the user's: it stays.
    asked = worker_config(rest_metrics_enabled="false", consumer_statistics_interval_ms="5000")
    assert kafka_clients.consumer_config(asked, {}, "c", "id")[
        "statistics.interval.ms"] == "5000"


def test_clients_without_a_listener_and_sink_consumers_build_no_statistics() -> None:
    # The config check's producer; a sink task's consumer, whose lag the task reads
    # without them (about 140 kB of histograms saved per consumer).
    worker = worker_config()
    assert "statistics.interval.ms" not in kafka_clients.producer_config(worker, {}, "p")
    assert "statistics.interval.ms" not in kafka_clients.consumer_config(worker, {}, "c", "i")


def test_the_users_statistics_interval_wins() -> None:
    worker = worker_config(producer_statistics_interval_ms="0",
                           consumer_statistics_interval_ms="5000")
    assert kafka_clients.producer_config(worker, {}, "p", statistics=True)[
        "statistics.interval.ms"] == "0"
    assert kafka_clients.consumer_config(worker, {}, "c", "i")[
        "statistics.interval.ms"] == "5000"
    override = {"consumer.override.statistics.interval.ms": "2000"}
    assert kafka_clients.consumer_config(worker, override, "c", "i")[
        "statistics.interval.ms"] == "2000"


def test_a_snapshot_cannot_be_changed() -> None:
    stats = consumer()
    with pytest.raises(AttributeError):
        stats.lags = ()  # type: ignore[misc]
