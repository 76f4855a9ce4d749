"""worker.runtime.metrics.collector: Kafka's group and name → the Prometheus family, read
back with the Prometheus client's own parser."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import CollectorRegistry

from worker.builtin.connectors.file_stream import FileStreamSinkConnector
from worker.builtin.connectors.generator import SequenceGeneratorConnector
from worker.runtime.metrics.collector import (
    ConnectMetricsCollector,
    is_counter,
    prometheus_name,
)
from worker.runtime.metrics.sampled_stat import MetricWindow
from worker.runtime.metrics.tasks import TaskMetrics
from worker.runtime.metrics.worker import RebalanceMetrics, WorkerMetrics
from worker.storage.base import State, TaskId


@pytest.mark.parametrize(("group", "name", "expected"), [
    ("source-task-metrics", "source-record-poll-total",
     "kafka_connect_source_task_metrics_source_record_poll_total"),
    ("connect-worker-metrics", "connector-count",
     "kafka_connect_connect_worker_metrics_connector_count"),
    ("task-error-metrics", "deadletterqueue-produce-requests",
     "kafka_connect_task_error_metrics_deadletterqueue_produce_requests"),
])
def test_prometheus_name(group: str, name: str, expected: str) -> None:
    assert prometheus_name(group, name) == expected


def test_only_kafka_totals_are_counters() -> None:
    assert is_counter("source-record-poll-total")
    assert not is_counter("total-record-errors")  # monotonic, but Kafka's name is kept


def _task(kind: str, connector: str, task: int) -> Any:
    m = TaskMetrics(connector, task, kind, MetricWindow(30.0, 2))
    return SimpleNamespace(metrics=m)


def scrape(worker: Any, rebalance: RebalanceMetrics | None = None) -> dict[str, Any]:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(ConnectMetricsCollector(worker, lambda: 1e9, rebalance))
    text = generate_latest(registry).decode()
    return {family.name: family for family in text_string_to_metric_families(text)}


def samples(families: dict[str, Any], name: str) -> dict[tuple[tuple[str, str], ...], float]:
    family = families[name.removesuffix("_total") if name.endswith("_total") else name]
    return {tuple(sorted(s.labels.items())): s.value for s in family.samples
            if s.name == name}


@pytest.fixture
def worker() -> Any:
    src, sink = _task("source", "gen", 0), _task("sink", "out", 1)
    src.metrics.state_changed(State.RUNNING)
    sink.metrics.state_changed(State.PAUSED)
    src.metrics.record_poll(10, 0.001)
    sink.metrics.record_read(7)
    sink.metrics.errors.record_errors = 2
    wm = WorkerMetrics()
    wm.task_startup(True)
    connectors = {
        "gen": SimpleNamespace(state=State.RUNNING, connector=SequenceGeneratorConnector(),
                               version="1.2"),
        "out": SimpleNamespace(state=State.PAUSED, connector=FileStreamSinkConnector(),
                               version="3.4"),
    }
    return SimpleNamespace(tasks={TaskId("gen", 0): src, TaskId("out", 1): sink},
                           connectors=connectors, metrics=wm)


def test_task_metrics_carry_connector_and_task_labels(worker: Any) -> None:
    families = scrape(worker)
    poll = samples(families, "kafka_connect_source_task_metrics_source_record_poll_total")
    assert poll == {(("connector", "gen"), ("task", "0")): 10.0}
    assert families["kafka_connect_source_task_metrics_source_record_poll"].type == "counter"
    read = samples(families, "kafka_connect_sink_task_metrics_sink_record_read_total")
    assert read == {(("connector", "out"), ("task", "1")): 7.0}
    errors = samples(families, "kafka_connect_task_error_metrics_total_record_errors")
    assert errors[(("connector", "out"), ("task", "1"))] == 2.0
    status = samples(families, "kafka_connect_connector_task_metrics_status")
    assert status == {(("connector", "gen"), ("status", "running"), ("task", "0")): 1.0,
                      (("connector", "out"), ("status", "paused"), ("task", "1")): 1.0}


def test_sink_commit_sequence_number_and_skips(worker: Any) -> None:
    sink = worker.tasks[TaskId("out", 1)].metrics
    sink.record_commit_attempt()
    sink.record_commit_attempt()
    families = scrape(worker)
    out = (("connector", "out"), ("task", "1"))
    assert samples(families, "kafka_connect_sink_task_metrics_offset_commit_seq_no") == {
        out: 2.0}
    assert families["kafka_connect_sink_task_metrics_offset_commit_seq_no"].type == "gauge"
    # Sink commits are synchronous: no completion ever arrives late, so both stay 0.
    assert samples(families, "kafka_connect_sink_task_metrics_offset_commit_skip_total") == {
        out: 0.0}
    assert families["kafka_connect_sink_task_metrics_offset_commit_skip"].type == "counter"
    assert samples(families, "kafka_connect_sink_task_metrics_offset_commit_skip_rate") == {
        out: 0.0}


def test_worker_and_connector_metrics(worker: Any) -> None:
    families = scrape(worker)
    assert samples(families, "kafka_connect_connect_worker_metrics_task_count") == {(): 2.0}
    assert samples(families, "kafka_connect_connect_worker_metrics_connector_count") == {
        (): 2.0}
    assert samples(families,
                   "kafka_connect_connect_worker_metrics_task_startup_success_total") == {
        (): 1.0}
    paused = samples(families, "kafka_connect_connect_worker_metrics_connector_paused_task_count")
    assert paused == {(("connector", "gen"),): 0.0, (("connector", "out"),): 1.0}
    kinds = samples(families, "kafka_connect_connector_metrics_connector_type")
    assert kinds == {(("connector", "gen"), ("connector_type", "source")): 1.0,
                     (("connector", "out"), ("connector_type", "sink")): 1.0}
    classes = samples(families, "kafka_connect_connector_metrics_connector_class")
    # The class's import path, as Kafka's Class.getName() (not the config's canonical name).
    assert classes[(("connector", "gen"), ("connector_class",
                     "worker.builtin.connectors.generator.SequenceGeneratorConnector"))] == 1.0
    versions = samples(families, "kafka_connect_connector_metrics_connector_version")
    assert (("connector", "out"), ("connector_version", "3.4")) in versions


def test_rebalance_metrics_only_when_given(worker: Any) -> None:
    assert not any("rebalance" in name for name in scrape(worker))
    rebalance = RebalanceMetrics("sessioned")
    rebalance.started()
    rebalance.completed_round(3, "http://w1:8083")
    families = scrape(worker, rebalance)
    assert samples(families,
                   "kafka_connect_connect_worker_rebalance_metrics_completed_rebalances_total"
                   ) == {(): 1.0}
    assert samples(families, "kafka_connect_connect_worker_rebalance_metrics_epoch") == {
        (): 3.0}
    assert samples(families, "kafka_connect_connect_worker_rebalance_metrics_leader_name") == {
        (("leader_name", "http://w1:8083"),): 1.0}
