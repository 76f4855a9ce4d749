"""worker.runtime.metrics.clients beyond a task's own client: the dead letter queue's
producer and, in distributed mode, the internal topics' producers, consumers and admin
clients.

The statistics documents are those of ``test_client_metrics`` (``librdkafka_stats``), with
their ``client_id`` changed, and a real admin client's (``admin.json``). Two tests run real
librdkafka clients against the session's broker with ``statistics.interval.ms`` of 100 ms:
a dead letter queue producer, and the status store's log.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import CollectorRegistry

from worker import compose
from worker.clients import factories as kafka_clients
from worker.config.worker_config import DistributedConfig, WorkerConfig
from worker.rest.routes.metrics import METRICS_REGISTRY
from worker.runtime.errors.dead_letter_queue import DeadLetterQueueReporter
from worker.runtime.errors.handling import ProcessingContext
from worker.runtime.metrics.clients import (
    AdminStats,
    ConsumerStats,
    DeadLetterQueueStatsListener,
    ProducerStats,
    WorkerClientStats,
    client_families,
    parse_admin_stats,
    parse_stats,
)
from worker.runtime.metrics.collector import ConnectMetricsCollector
from worker.runtime.metrics.sampled_stat import MetricWindow
from worker.runtime.metrics.tasks import ErrorMetrics, TaskMetrics
from worker.runtime.metrics.worker import WorkerMetrics
from worker.storage.base import State, TaskId, TaskStatus
from worker.storage.kafka import KafkaStatusBackingStore, topics
from worker.storage.kafka.log import KafkaBasedLog

STATS = Path(__file__).parent / "librdkafka_stats"
LAG = "kafka_consumer_consumer_fetch_manager_metrics_records_lag"
LAG_MAX = "kafka_consumer_consumer_fetch_manager_metrics_records_lag_max"
CONSUMED = "kafka_consumer_consumer_fetch_manager_metrics_records_consumed_total"
SENT = "kafka_producer_producer_metrics_record_send_total"
SENT_BYTES = "kafka_producer_producer_metrics_outgoing_byte_total"
LATENCY = "kafka_producer_producer_metrics_request_latency_avg"
ADMIN = "kafka_admin_client_admin_client_metrics_"
LOGGER = "worker.runtime.metrics.clients"


def document(kind: str, client_id: str, **top: Any) -> str:
    """A statistics document of ``librdkafka_stats`` under another client id."""
    stats: dict[str, Any] = json.loads((STATS / f"{kind}.json").read_text())
    stats.update(client_id=client_id, **top)
    return json.dumps(stats)


def snapshot(kind: str, client_id: str, **top: Any) -> Any:
    return parse_stats(document(kind, client_id, **top))


def task_metrics(kind: str = "sink", connector: str = "sink", task: int = 0) -> TaskMetrics:
    return TaskMetrics(connector, task, kind, MetricWindow(30.0, 2))


def warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == LOGGER]


# --- the worker's own clients --------------------------------------------------------------

def test_the_worker_keeps_the_latest_snapshot_of_each_client() -> None:
    stats = WorkerClientStats()
    statuses, configs = stats.listener("topic 'statuses'"), stats.listener("topic 'configs'")
    assert stats.snapshots() == []
    statuses(document("producer", "connect-statuses-producer", txmsgs=1))
    statuses(document("consumer", "connect-statuses-consumer"))
    configs(document("producer", "connect-configs-producer", txmsgs=7))
    statuses(document("producer", "connect-statuses-producer", txmsgs=2))  # replaces
    by_id = {s.client_id: s for s in stats.snapshots()}
    assert sorted(by_id) == ["connect-configs-producer", "connect-statuses-consumer",
                             "connect-statuses-producer"]
    assert isinstance(by_id["connect-statuses-consumer"], ConsumerStats)
    sent = {k: v.records_sent for k, v in by_id.items() if isinstance(v, ProducerStats)}
    assert sent == {"connect-statuses-producer": 2, "connect-configs-producer": 7}


@pytest.mark.parametrize("bad", ["{not json", "[1, 2]", "", '{"type": "producer", "x": '])
def test_an_unreadable_document_of_a_worker_client_never_raises_and_warns_once(
        bad: str, caplog: pytest.LogCaptureFixture) -> None:
    stats = WorkerClientStats()
    statuses, configs = stats.listener("topic 'statuses'"), stats.listener("topic 'configs'")
    statuses(document("producer", "connect-statuses-producer"))
    kept = stats.snapshots()
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        statuses(bad)
        statuses(bad)
        configs(bad)  # another topic's clients: a warning of their own
    assert stats.snapshots() == kept and stats.snapshots()[0] is kept[0]
    assert len(warnings(caplog)) == 2
    assert "topic 'statuses'" in warnings(caplog)[0]
    assert "topic 'configs'" in warnings(caplog)[1]


def test_another_client_type_changes_nothing() -> None:
    stats = WorkerClientStats()
    stats.listener("x")(json.dumps({"type": "admin", "client_id": "a"}))
    assert stats.snapshots() == []


# --- the dead letter queue's producer ------------------------------------------------------

def test_the_dead_letter_queue_listener_keeps_its_snapshot_on_the_error_metrics(
        caplog: pytest.LogCaptureFixture) -> None:
    errors = ErrorMetrics()
    listener = DeadLetterQueueStatsListener(errors, "sink-0")
    assert errors.dlq_client_stats is None
    listener(document("producer", "connector-dlq-producer-sink-0"))
    first = errors.dlq_client_stats
    assert isinstance(first, ProducerStats)
    assert first.client_id == "connector-dlq-producer-sink-0"
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        listener("{not json")
        listener("[]")
    assert errors.dlq_client_stats is first
    assert len(warnings(caplog)) == 1
    assert "sink-0" in warnings(caplog)[0] and "dead letter queue" in warnings(caplog)[0]


class ServedProducer:
    """A Producer that, like librdkafka, hands its queued statistics to ``stats_cb`` only
    when it is served (``poll``/``flush``)."""

    def __init__(self, config: Mapping[str, Any]) -> None:
        self.config = dict(config)
        self.queued: list[str] = []
        self.polls = 0

    def serve(self) -> None:
        queued, self.queued = self.queued, []
        for doc in queued:
            self.config["stats_cb"](doc)

    def produce(self, topic: str, value: Any, key: Any, **kwargs: Any) -> None:
        pass

    def poll(self, timeout: float) -> int:
        self.polls += 1
        self.serve()
        return 0

    def flush(self, timeout: float) -> int:
        self.serve()
        return 0


def test_the_dead_letter_queue_producer_is_served_after_each_commit_attempt(
        monkeypatch: pytest.MonkeyPatch) -> None:
    m = task_metrics()
    reporter = DeadLetterQueueReporter(TaskId("sink", 0), "dlq", 1, False,
                                       {"statistics.interval.ms": "30000"}, {}, 1.0,
                                       producer_factory=ServedProducer, metrics=m.errors)
    monkeypatch.setattr(reporter, "_ensure_topic", lambda timeout_s: None)
    reporter.start()
    producer = reporter._producer
    assert isinstance(producer, ServedProducer)
    assert isinstance(producer.config["stats_cb"], DeadLetterQueueStatsListener)
    assert producer.config["statistics.interval.ms"] == "30000"  # as configured
    # No record went to the dead letter queue: the sink's loop still calls
    # raise_if_failed after every commit attempt, which serves the producer.
    producer.queued += [document("producer", "connector-dlq-producer-sink-0", txmsgs=n)
                        for n in (0, 0)]
    assert reporter.flush()  # nothing pending: nothing to wait for
    reporter.raise_if_failed()
    assert producer.queued == []
    assert isinstance(m.errors.dlq_client_stats, ProducerStats)
    assert m.errors.dlq_client_stats.records_sent == 0


def test_the_dead_letter_queue_gets_the_task_clients_statistics_interval() -> None:
    # What the worker asks producer_config for: the task clients' rule, and the worker's
    # producer. key or the connector's producer.override. key wins (0: off).
    worker = WorkerConfig({"bootstrap.servers": "b:9092", "metrics.sample.window.ms": "5000"})
    conf = kafka_clients.producer_config(worker, {}, "dlq", statistics=True)
    assert conf["statistics.interval.ms"] == "5000"
    off = {"producer.override.statistics.interval.ms": "0"}
    assert kafka_clients.producer_config(worker, off, "dlq", statistics=True)[
        "statistics.interval.ms"] == "0"


# --- the families ----------------------------------------------------------------------------

Samples = dict[str, list[tuple[dict[str, str], float]]]


def exposition(collect: Callable[[], Any]) -> str:
    class Collector:
        def collect(self) -> Any:
            return collect()

    registry = CollectorRegistry(auto_describe=False)
    registry.register(Collector())
    return generate_latest(registry).decode()


def samples(text: str) -> Samples:
    found: Samples = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            found.setdefault(s.name, []).append((s.labels, s.value))
    return found


def every_client() -> tuple[list[TaskMetrics], WorkerClientStats]:
    """Tasks in no particular order: a sink with a dead letter queue, a source, a sink
    whose consumer does not exist yet; and the status topic's two clients."""
    sink, source, idle = task_metrics(), task_metrics("source", "gen"), task_metrics("sink", "b")
    sink.client_id = "connector-consumer-sink-0"  # its consumer: no statistics, the default
    sink.record_read(200)
    sink.consumer_lags = (("orders", 0, 30),)
    sink.errors.dlq_client_stats = snapshot("producer", "connector-dlq-producer-sink-0",
                                            txmsgs=3, tx_bytes=300)
    source.client_stats = snapshot("producer", "connector-producer-gen-0")
    worker = WorkerClientStats()
    statuses = worker.listener("topic 'statuses'")
    statuses(document("producer", "connect-statuses-producer", txmsgs=5, tx_bytes=500))
    statuses(document("consumer", "connect-statuses-consumer", rxmsgs=5))
    worker.admin_listener("topic 'statuses'")(document("admin", "connect-statuses-admin"))
    return [source, idle, sink], worker


def who(client_id: str, connector: str = "", task: str = "") -> dict[str, str]:
    return {"client_id": client_id, "connector": connector, "task": task}


def test_each_family_once_with_every_clients_samples_in_order() -> None:
    tasks, worker = every_client()
    text = exposition(lambda: client_families(tasks, worker.snapshots()))
    # Each family declared once (one TYPE line), whatever the number of clients.
    types = [line.split()[2] for line in text.splitlines() if line.startswith("# TYPE ")]
    assert len(types) == len(set(types)) == 12
    found = samples(text)
    # Internal clients first (empty connector and task), then by connector, task, client.
    assert found[SENT] == [
        (who("connect-statuses-producer"), 5.0),
        (who("connector-producer-gen-0", "gen", "0"), 232.0),
        (who("connector-dlq-producer-sink-0", "sink", "0"), 3.0)]
    assert [labels for labels, _ in found[SENT_BYTES]] == \
        [labels for labels, _ in found[SENT]] == [labels for labels, _ in found[LATENCY]]
    assert found[CONSUMED] == [(who("connect-statuses-consumer"), 5.0),
                               (who("connector-consumer-sink-0", "sink", "0"), 200.0)]
    # The lags: the sink's, read by its task; the status consumer stores no offsets.
    assert found[LAG] == [({**who("connector-consumer-sink-0", "sink", "0"),
                            "topic": "orders", "partition": "0"}, 30.0)]
    # The status log's admin client: in its own families, not among the producers
    # (librdkafka types its document as a producer's).
    assert {name: rows for name, rows in found.items() if name.startswith(ADMIN)} == {
        f"{ADMIN}request_total": [(who("connect-statuses-admin"), 6.0)],
        f"{ADMIN}response_total": [(who("connect-statuses-admin"), 6.0)],
        f"{ADMIN}outgoing_byte_total": [(who("connect-statuses-admin"), 365.0)],
        f"{ADMIN}incoming_byte_total": [(who("connect-statuses-admin"), 591.0)],
        f"{ADMIN}connection_count": [(who("connect-statuses-admin"), 1.0)]}
    # One label set per family, the same for every client.
    for name, rows in found.items():
        keys = {tuple(sorted(labels)) for labels, _ in rows}
        assert len(keys) == 1, (name, keys)


def test_an_admin_clients_document_reads_as_an_admin_clients() -> None:
    doc = json.loads(document("admin", "connect-configs-admin"))
    assert doc["type"] == "producer"  # what librdkafka calls it
    assert parse_admin_stats(json.dumps(doc)) == AdminStats(
        "connect-configs-admin", requests=6, responses=6, bytes_sent=365,
        bytes_received=591, connections=1)
    # Only brokers of the cluster that are up count as connections: not librdkafka's
    # bootstrap entry (node id -1), nor a broker that is down.
    broker = next(iter(doc["brokers"].values()))
    doc["brokers"] = {"bootstrap": {**broker, "nodeid": -1},
                      "down": {**broker, "nodeid": 112, "state": "DOWN"},
                      "up": {**broker, "nodeid": 113}}
    del doc["tx"]
    stats = parse_admin_stats(json.dumps(doc))
    assert stats.connections == 1 and stats.requests is None
    with pytest.raises(ValueError):
        parse_admin_stats("[]")


def test_the_order_does_not_depend_on_the_order_of_the_tasks() -> None:
    tasks, worker = every_client()
    first = exposition(lambda: client_families(tasks, worker.snapshots()))
    again = exposition(lambda: client_families(list(reversed(tasks)),
                                               list(reversed(worker.snapshots()))))
    assert first == again


def test_worker_clients_alone_make_the_families() -> None:
    worker = WorkerClientStats()
    worker.listener("topic 'configs'")(document("producer", "connect-configs-producer"))
    found = samples(exposition(lambda: client_families([], worker.snapshots())))
    assert found[SENT] == [(who("connect-configs-producer"), 232.0)]
    assert CONSUMED not in found and LAG_MAX not in found


def test_the_collector_serves_the_worker_clients() -> None:
    tasks, worker_clients = every_client()
    worker = SimpleNamespace(tasks={TaskId(m.connector, m.task): SimpleNamespace(metrics=m)
                                    for m in tasks},
                             connectors={}, metrics=WorkerMetrics())
    text = exposition(ConnectMetricsCollector(worker, lambda: 1e9,  # type: ignore[arg-type]
                                              None, worker_clients).collect)
    assert f'{SENT}{{client_id="connect-statuses-producer",connector="",task=""}} 5.0' in text
    assert f'{SENT}{{client_id="connector-dlq-producer-sink-0",connector="sink",task="0"}} ' \
           "3.0" in text
    assert sum(line.startswith(f"# TYPE {SENT.removesuffix('_total')}")
               for line in text.splitlines()) == 1


# --- wiring: storage takes a plain callback ------------------------------------------------

def distributed_config(bootstrap: str = "127.0.0.1:1", **props: str) -> DistributedConfig:
    run = uuid.uuid4().hex[:12]
    return DistributedConfig({
        "bootstrap.servers": bootstrap, "group.id": f"stats-{run}",
        "config.storage.topic": f"stats-{run}-configs",
        "offset.storage.topic": f"stats-{run}-offsets",
        "status.storage.topic": f"stats-{run}-status",
        "config.storage.replication.factor": "-1", "offset.storage.replication.factor": "-1",
        "status.storage.replication.factor": "-1", "status.storage.partitions": "1",
        "listeners": "http://127.0.0.1:0",
        **{k.replace("_", "."): v for k, v in props.items()}})


def test_the_log_hands_the_callback_to_both_clients() -> None:
    def callback(stats_json: str) -> None:
        pass

    def admin_callback(stats_json: str) -> None:
        pass

    log = KafkaBasedLog("t", producer_config={}, consumer_config={"client.id": "c"},
                        admin_config={"client.id": "a"}, on_record=lambda r: None,
                        stats_cb=callback, admin_stats_cb=admin_callback)
    assert log._producer_config["stats_cb"] is callback
    assert log._consumer_config["stats_cb"] is callback
    assert log._admin_config == {"client.id": "a", "stats_cb": admin_callback,
                                 "logger": log._producer_config["logger"]}
    plain = KafkaBasedLog("t", producer_config={}, consumer_config={"client.id": "c"},
                          admin_config={}, on_record=lambda r: None)
    assert "stats_cb" not in plain._producer_config
    assert "stats_cb" not in plain._consumer_config
    assert "stats_cb" not in plain._admin_config


def started_log_configs(monkeypatch: pytest.MonkeyPatch, store: KafkaStatusBackingStore
                        ) -> dict[str, Any]:
    """The keyword arguments the store's start() builds its KafkaBasedLog with."""
    built: dict[str, Any] = {}

    class Log:
        def __init__(self, topic: str, **kwargs: Any) -> None:
            built.update(kwargs)

        def start(self, timeout_s: float) -> None:
            pass

    monkeypatch.setattr(topics, "ensure_topic", lambda *a, **k: False)
    monkeypatch.setattr(topics, "KafkaBasedLog", Log)
    store.start()
    return built


def test_a_store_gives_its_clients_the_callback_and_the_interval(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def callback(stats_json: str) -> None:
        pass

    def admin_callback(stats_json: str) -> None:
        pass

    store = KafkaStatusBackingStore(distributed_config())
    store.report_statistics(callback, 5000, admin_callback)
    built = started_log_configs(monkeypatch, store)
    assert built["stats_cb"] is callback
    assert built["admin_stats_cb"] is admin_callback
    assert built["producer_config"]["statistics.interval.ms"] == 5000
    assert built["consumer_config"]["statistics.interval.ms"] == 5000
    assert built["admin_config"]["statistics.interval.ms"] == 5000
    assert built["producer_config"]["client.id"] == "connect-statuses-producer"
    assert built["admin_config"]["client.id"] == "connect-statuses-admin"


def test_the_workers_statistics_interval_wins_for_internal_clients(
        monkeypatch: pytest.MonkeyPatch) -> None:
    store = KafkaStatusBackingStore(distributed_config(producer_statistics_interval_ms="0"))
    store.report_statistics(lambda s: None, 5000)
    built = started_log_configs(monkeypatch, store)
    assert str(built["producer_config"]["statistics.interval.ms"]) == "0"
    assert built["consumer_config"]["statistics.interval.ms"] == 5000


def test_a_store_without_a_callback_builds_no_statistics(
        monkeypatch: pytest.MonkeyPatch) -> None:
    built = started_log_configs(monkeypatch, KafkaStatusBackingStore(distributed_config()))
    assert built["stats_cb"] is None and built["admin_stats_cb"] is None
    assert "statistics.interval.ms" not in built["producer_config"]
    assert "statistics.interval.ms" not in built["consumer_config"]
    assert "statistics.interval.ms" not in built["admin_config"]


def build_distributed(monkeypatch: pytest.MonkeyPatch, **props: str) -> compose.Connect:
    monkeypatch.setattr(compose, "kafka_cluster_id", lambda config, **_: "cluster")
    return compose.build_distributed(distributed_config(**props))


def test_a_distributed_worker_wires_its_stores_to_metrics(
        monkeypatch: pytest.MonkeyPatch) -> None:
    connect = build_distributed(monkeypatch, metrics_sample_window_ms="5000")
    herder: Any = connect.herder
    stores = [herder.kafka_config_store, herder.offset_store, herder.kafka_status_store]
    assert [s._stats_interval_ms for s in stores] == [5000, 5000, 5000]
    statuses = herder.kafka_status_store._stats_cb
    statuses(document("producer", "connect-statuses-producer", txmsgs=4))
    herder.kafka_status_store._admin_stats_cb(document("admin", "connect-statuses-admin"))
    app: Any = connect.server._app  # what /metrics serves
    registry = getattr(app.state, METRICS_REGISTRY)
    text = generate_latest(registry).decode()
    assert f'{SENT}{{client_id="connect-statuses-producer",connector="",task=""}} 4.0' in text
    assert f'{ADMIN}request_total{{client_id="connect-statuses-admin",connector="",task=""}} ' \
           "6.0" in text


def test_without_metrics_the_stores_build_no_statistics(
        monkeypatch: pytest.MonkeyPatch) -> None:
    connect = build_distributed(monkeypatch, rest_metrics_enabled="false")
    herder: Any = connect.herder
    assert herder.kafka_status_store._stats_cb is None
    assert herder.kafka_status_store._admin_stats_cb is None


# --- real clients against the session's broker ---------------------------------------------

class Consumed:
    """The part of a consumed message the dead letter queue writes."""

    def __init__(self, value: bytes) -> None:
        self._value = value

    def topic(self) -> str:
        return "orders"

    def partition(self) -> int:
        return 0

    def offset(self) -> int:
        return 1

    def key(self) -> bytes | None:
        return None

    def value(self) -> bytes:
        return self._value

    def headers(self) -> None:
        return None

    def timestamp(self) -> tuple[int, int]:
        return (0, -1)


def wait_for(condition: Callable[[], bool], serve: Callable[[], Any], what: str,
             timeout_s: float = 15.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        serve()
        time.sleep(0.05)


@pytest.mark.integration
def test_a_real_dead_letter_queue_producer_reports_its_sends(kafka_bootstrap: str) -> None:
    worker = WorkerConfig({"bootstrap.servers": kafka_bootstrap})
    override = {"producer.override.statistics.interval.ms": "100"}
    m = task_metrics()
    reporter = DeadLetterQueueReporter(
        TaskId("sink", 0), f"stats-dlq-{uuid.uuid4().hex[:12]}", 1, False,
        kafka_clients.producer_config(worker, override, "connector-dlq-producer-sink-0",
                                      statistics=True),
        kafka_clients.admin_config(worker), 10.0, metrics=m.errors)
    reporter.start()
    try:
        # Served without any record sent: the commit path's raise_if_failed.
        wait_for(lambda: m.errors.dlq_client_stats is not None, reporter.raise_if_failed,
                 "the first statistics")
        first = m.errors.dlq_client_stats
        assert isinstance(first, ProducerStats)
        assert first.client_id == "connector-dlq-producer-sink-0"
        before = first.records_sent or 0
        for n in range(3):
            reporter.report(ProcessingContext(Consumed(b"bad-%d" % n)))
        assert reporter.flush()

        def sent() -> bool:
            stats = m.errors.dlq_client_stats
            return isinstance(stats, ProducerStats) and (stats.records_sent or 0) >= before + 3

        wait_for(sent, reporter.raise_if_failed, "record-send-total to move")
    finally:
        reporter.close()
    last = m.errors.dlq_client_stats
    assert isinstance(last, ProducerStats) and last.records_sent is not None
    found = samples(exposition(lambda: client_families([m])))
    assert found[SENT] == [(who("connector-dlq-producer-sink-0", "sink", "0"),
                            float(last.records_sent))]


@pytest.mark.integration
def test_a_real_status_store_reports_its_clients(kafka_bootstrap: str) -> None:
    worker_clients = WorkerClientStats()
    store = KafkaStatusBackingStore(distributed_config(kafka_bootstrap))
    name = f"topic '{store.topic}'"
    store.report_statistics(worker_clients.listener(name), 100,
                            worker_clients.admin_listener(name))
    store.start()
    clients = {"connect-statuses-producer", "connect-statuses-consumer",
               "connect-statuses-admin"}
    try:
        def by_id() -> dict[str, Any]:
            return {s.client_id: s for s in worker_clients.snapshots()}

        # The log's threads serve the three clients: nothing to call here.
        wait_for(lambda: clients <= set(by_id()), lambda: None, "the clients' statistics")
        before = by_id()["connect-statuses-producer"].records_sent or 0
        admin = by_id()["connect-statuses-admin"]
        assert isinstance(admin, AdminStats) and admin.connections >= 1
        asked = admin.requests or 0
        store.put_task(TaskStatus(TaskId("c", 0), State.RUNNING, "w:8083"))
        store.refresh()  # asks the admin client for the end offsets

        def moved() -> bool:
            found = by_id()
            return (found["connect-statuses-producer"].records_sent or 0) >= before + 1 \
                and (found["connect-statuses-consumer"].records_consumed or 0) >= 1 \
                and (found["connect-statuses-admin"].requests or 0) > asked

        wait_for(moved, lambda: None,
                 "record-send-total, records-consumed-total and request-total to move")
        consumer = by_id()["connect-statuses-consumer"]
        assert isinstance(consumer, ConsumerStats)
        assert consumer.lags == ()  # the log stores and commits no offsets: no lag
    finally:
        store.stop()
    found = samples(exposition(lambda: client_families([], worker_clients.snapshots())))
    assert [labels for labels, _ in found[SENT]] == [who("connect-statuses-producer")]
    assert [labels for labels, _ in found[CONSUMED]] == [who("connect-statuses-consumer")]
    assert [labels for labels, _ in found[f"{ADMIN}request_total"]] == \
        [who("connect-statuses-admin")]
