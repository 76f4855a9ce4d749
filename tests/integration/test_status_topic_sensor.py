"""The status-topic trigger and sensor against the session's Kafka.

(a) records written by hand as Java's workers write them (``JsonConverter``, schemas off);
(b) a state change written by a real worker (``connect-distributed``); (c) the sensor in a
real Airflow run (``dag.test()``), deferrable — the trigger runs inline — and in poke mode.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from airflow_provider.testing import (
    asset_events,
    record_trigger_runs,
    task_states,
    xcom,
)
from airflow_provider.triggers.status_topic import StatusTopicTrigger
from tests.support import create_topic, unique_name, wait_for_connector_state, wait_until

pytestmark = pytest.mark.integration

DAG_FILE = Path(__file__).parent / "airflow_dags" / "status_topic_sensor_dag.py"
DAG_ID = "kc_status_topic_sensor"
STATUS_PARTITIONS = 3
TRACE = "org.apache.kafka.connect.errors.ConnectException: disk full\n\tat X.poll(X.java:42)"
UNUSED_REST = "http://127.0.0.1:9"  # hand-written records: no worker, REST never called


def status_value(state: str, worker: str = "10.0.0.1:8083", generation: int = 1,
                 trace: str | None = None) -> bytes:
    """``{"state","trace","worker_id","generation"}`` as Java's JsonConverter writes it."""
    return json.dumps({"state": state, "trace": trace, "worker_id": worker,
                       "generation": generation}, separators=(",", ":")).encode()


def topic_value(topic: str, connector: str) -> bytes:
    return json.dumps({"topic": {"name": topic, "connector": connector, "task": 0,
                                 "discoverTimestamp": 1700000000000}},
                      separators=(",", ":")).encode()


def produce(bootstrap: str, topic: str, records: list[tuple[str, bytes | None]]) -> None:
    """One record per produce request (docs/architecture.md §6), keyed like Java's
    partitioner does."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all",
                         "partitioner": "murmur2_random"})
    errors: list[Any] = []
    for key, value in records:
        producer.produce(topic, key=key.encode(), value=value,
                         on_delivery=lambda err, _msg: err and errors.append(err))
        producer.flush(30)
    assert producer.flush(30) == 0 and errors == []


def first_event(trigger: StatusTopicTrigger, timeout: float = 60.0) -> dict[str, Any]:
    async def first() -> dict[str, Any]:
        async for event in trigger.run():
            return event.payload
        raise AssertionError("the trigger yielded no event")

    return asyncio.run(asyncio.wait_for(first(), timeout))


@pytest.fixture
def status_topic(kafka_admin: Any, unique_topic: Callable[..., str]) -> str:
    return create_topic(kafka_admin, unique_topic("status"), STATUS_PARTITIONS,
                        {"cleanup.policy": "compact"})


@pytest.fixture
def conn_id(kafka_connect_conn: Callable[..., str], kafka_bootstrap: str,
            status_topic: str) -> str:
    return kafka_connect_conn(host=UNUSED_REST, extra={"bootstrap_servers": kafka_bootstrap,
                                                       "status_topic": status_topic})


@pytest.fixture
def caught_up() -> Iterator[threading.Event]:
    """Set when a status-topic reader has read every partition to its end."""
    event = threading.Event()

    class Handler(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if record.getMessage().startswith("Caught up on status topic"):
                event.set()

    logger = logging.getLogger("airflow_provider.hooks.status_topic")
    handler, level = Handler(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    yield event
    logger.removeHandler(handler)
    logger.setLevel(level)


# ---------------------------------------------------------------- (a) hand-written records


def test_trigger_success_then_failed_task_with_trace(
        conn_id: str, kafka_bootstrap: str, status_topic: str) -> None:
    name = unique_name("my-conn")  # holds '-': task numbers follow the last one
    produce(kafka_bootstrap, status_topic, [
        (f"status-connector-{name}", status_value("UNASSIGNED")),
        (f"status-connector-{name}", status_value("RUNNING", generation=2)),
        (f"status-task-{name}-0", status_value("RUNNING", generation=2)),
        (f"status-task-{name}-1", status_value("RUNNING", "10.0.0.2:8083", generation=2)),
        (f"status-topic-orders:connector-{name}", topic_value("orders", name)),
        ("status-connector-someone-else", status_value("FAILED", trace="not ours")),
        ("status-task-broken", status_value("RUNNING")),  # malformed: skipped
        (f"status-task-{name}-7", b"{not json"),
    ])
    trigger = StatusTopicTrigger(kafka_connect_conn_id=conn_id, connector=name,
                                 expected_tasks=2, timeout=60)
    assert first_event(trigger) == {
        "status": "success", "connector": name, "target_state": "RUNNING",
        "message": "the connector and its 2 task(s) are RUNNING", "failed": None,
        "trace": None, "state": "RUNNING", "tasks": {"0": "RUNNING", "1": "RUNNING"},
        "topics": ["orders"], "worker_id": "10.0.0.1:8083"}

    produce(kafka_bootstrap, status_topic, [
        (f"status-task-{name}-1", status_value("FAILED", "10.0.0.2:8083", 2, TRACE))])
    event = first_event(trigger)
    assert (event["status"], event["failed"], event["trace"]) == ("failed", "task 1", TRACE)
    assert event["tasks"] == {"0": "RUNNING", "1": "FAILED"}


def test_stale_generation_is_ignored_and_tombstones_delete(
        conn_id: str, kafka_bootstrap: str, status_topic: str) -> None:
    name = unique_name("gen")
    produce(kafka_bootstrap, status_topic, [
        (f"status-connector-{name}", status_value("RUNNING", "w2:8083", generation=5)),
        # A zombie worker of an older generation: ignored.
        (f"status-connector-{name}", status_value("PAUSED", "w1:8083", generation=4)),
    ])
    event = first_event(StatusTopicTrigger(
        kafka_connect_conn_id=conn_id, connector=name, target_state="PAUSED",
        wait_for_tasks=False, timeout=3))
    assert event["status"] == "timeout"
    assert "PAUSED not reached within 3 s: the connector is RUNNING" in event["message"]
    event = first_event(StatusTopicTrigger(kafka_connect_conn_id=conn_id, connector=name,
                                           wait_for_tasks=False, timeout=30))
    assert (event["status"], event["state"], event["worker_id"]) == ("success", "RUNNING",
                                                                     "w2:8083")
    # Deleted: a tombstone always applies; the connector is then never met.
    produce(kafka_bootstrap, status_topic, [(f"status-connector-{name}", None)])
    event = first_event(StatusTopicTrigger(kafka_connect_conn_id=conn_id, connector=name,
                                           wait_for_tasks=False, timeout=3))
    assert event["status"] == "timeout" and "no status yet" in event["message"]


def test_trigger_sees_a_live_change_after_catching_up(
        conn_id: str, kafka_bootstrap: str, status_topic: str,
        caught_up: threading.Event) -> None:
    name = unique_name("live")
    produce(kafka_bootstrap, status_topic, [
        (f"status-connector-{name}", status_value("RUNNING")),
        (f"status-task-{name}-0", status_value("RUNNING"))])
    trigger = StatusTopicTrigger(kafka_connect_conn_id=conn_id, connector=name,
                                 target_state="PAUSED", timeout=60)

    async def scenario() -> dict[str, Any]:
        waiting = asyncio.ensure_future(anext(trigger.run()))
        assert await asyncio.to_thread(caught_up.wait, 30), "the trigger never caught up"
        await asyncio.sleep(0.3)
        assert not waiting.done()  # RUNNING history does not satisfy PAUSED
        await asyncio.to_thread(produce, kafka_bootstrap, status_topic, [
            (f"status-connector-{name}", status_value("PAUSED")),
            (f"status-task-{name}-0", status_value("PAUSED"))])
        return (await asyncio.wait_for(waiting, 30)).payload

    event = asyncio.run(scenario())
    assert (event["status"], event["state"], event["tasks"]) == ("success", "PAUSED",
                                                                 {"0": "PAUSED"})


def test_poke_reader_keeps_its_position_between_reads(
        conn_id: str, kafka_bootstrap: str, status_topic: str) -> None:
    """Poke mode: the first read catches up from the beginning, later reads fetch only
    what arrived since (the record count grows by the new records only)."""
    from airflow_provider.hooks.status_topic import KafkaConnectStatusTopicHook

    name, other = unique_name("poke"), unique_name("other")
    history = [(f"status-connector-{other}", status_value("RUNNING"))] * 20
    produce(kafka_bootstrap, status_topic, [*history,
                                            (f"status-connector-{name}", status_value("RUNNING")),
                                            (f"status-task-{name}-0", status_value("RUNNING"))])
    reader = KafkaConnectStatusTopicHook(conn_id).reader(name)
    try:
        view, caught_up = reader.read(timeout=30)
        assert caught_up and view.connector_status is not None
        assert view.connector_status.state == "RUNNING"
        first_pass = reader._catch_up.records if reader._catch_up else 0
        assert first_pass == 22
        view, _ = reader.read(timeout=30)  # nothing new: no record read again
        assert reader._catch_up is not None and reader._catch_up.records == first_pass
        produce(kafka_bootstrap, status_topic, [
            (f"status-connector-{name}", status_value("PAUSED")),
            (f"status-task-{name}-0", status_value("PAUSED"))])
        wait_until(lambda: reader.read(timeout=5)[0].evaluate(
            "PAUSED", wait_for_tasks=True, expected_tasks=1).verdict.name == "MET",
            timeout=30, message="the reader seeing PAUSED")
        assert reader._catch_up is not None and reader._catch_up.records == first_pass + 2
    finally:
        reader.close()


def test_missing_status_topic_is_a_clear_error(
        kafka_connect_conn: Callable[..., str], kafka_bootstrap: str) -> None:
    missing = unique_name("no-such-status-topic")
    conn_id = kafka_connect_conn(host=UNUSED_REST, extra={"bootstrap_servers": kafka_bootstrap,
                                                          "status_topic": missing})
    event = first_event(StatusTopicTrigger(kafka_connect_conn_id=conn_id, connector="c",
                                           timeout=30))
    assert event["status"] == "error"
    assert "KafkaConnectConfigError" in event["message"]
    assert repr(missing) in event["message"] and kafka_bootstrap in event["message"]


# ---------------------------------------------------------------- (b) a real worker


def file_source(tmp_path: Path, kafka_admin: Any) -> tuple[dict[str, str], str]:
    topic = create_topic(kafka_admin, unique_name("lines"))
    source = tmp_path / "input.txt"
    source.write_text("".join(f"line {i}\n" for i in range(20)))
    return {"connector.class": "FileStreamSource", "file": str(source), "topic": topic,
            "tasks.max": "1"}, topic


def test_trigger_sees_a_pause_written_by_a_real_worker(
        distributed_cluster: Callable[..., Any], kafka_connect_conn: Callable[..., str],
        kafka_bootstrap: str, kafka_admin: Any, tmp_path: Path) -> None:
    cluster = distributed_cluster(size=1)
    worker = cluster.workers[0]
    conn_id = kafka_connect_conn(host=worker.url, extra={
        "bootstrap_servers": kafka_bootstrap, "status_topic": f"{cluster.group_id}-status"})
    config, topic = file_source(tmp_path, kafka_admin)
    name = unique_name("file-src")
    response = worker.client.put(f"/connectors/{name}/config", json=config)
    assert response.status_code == 201, response.text
    wait_for_connector_state(worker.client, name, "RUNNING", "RUNNING", task_count=1)
    wait_until(lambda: worker.client.get(f"/connectors/{name}/topics").json()[name]["topics"]
               == [topic], timeout=30, message="the source's active topic")

    running = first_event(StatusTopicTrigger(kafka_connect_conn_id=conn_id, connector=name,
                                             expected_tasks=1, timeout=60))
    assert (running["status"], running["tasks"], running["topics"]) == (
        "success", {"0": "RUNNING"}, [topic])

    assert worker.client.put(f"/connectors/{name}/pause").status_code == 202
    paused = first_event(StatusTopicTrigger(kafka_connect_conn_id=conn_id, connector=name,
                                            target_state="PAUSED", expected_tasks=1,
                                            timeout=60))
    assert (paused["status"], paused["state"], paused["tasks"]) == ("success", "PAUSED",
                                                                   {"0": "PAUSED"})
    assert paused["worker_id"] == running["worker_id"] and paused["topics"] == [topic]


# ---------------------------------------------------------------- (c) through Airflow


@pytest.fixture
def trigger_runs(monkeypatch: pytest.MonkeyPatch) -> tuple[list[dict[str, Any]],
                                                            threading.Event]:
    """Every StatusTopicTrigger run, and an event set when one starts."""
    return record_trigger_runs(monkeypatch, StatusTopicTrigger)


def after(started: threading.Event, action: Callable[[], None]) -> threading.Thread:
    """Run ``action`` in a thread once a trigger has started (i.e. the task deferred)."""

    def go() -> None:
        if started.wait(90):
            action()

    thread = threading.Thread(target=go, daemon=True)
    thread.start()
    return thread


def test_sensor_in_a_dag_run_deferred_then_poke(
        airflow_dag: Callable[[Path, str], Any], trigger_runs: Any,
        distributed_cluster: Callable[..., Any], kafka_connect_conn: Callable[..., str],
        kafka_bootstrap: str, kafka_admin: Any, tmp_path: Path) -> None:
    runs, started = trigger_runs
    cluster = distributed_cluster(size=1)
    worker = cluster.workers[0]
    kafka_connect_conn(host=worker.url, extra={
        "bootstrap_servers": kafka_bootstrap, "status_topic": f"{cluster.group_id}-status"})
    config, topic = file_source(tmp_path, kafka_admin)
    name = unique_name("dag-src")
    assert worker.client.put(f"/connectors/{name}/config", json=config).status_code == 201
    wait_for_connector_state(worker.client, name, "RUNNING", "RUNNING", task_count=1)
    wait_until(lambda: worker.client.get(f"/connectors/{name}/topics").json()[name]["topics"]
               == [topic], timeout=30, message="the source's active topic")

    # RUNNING now, so the deferrable sensor's first check cannot pass: it defers, and the
    # connector is paused only once the trigger runs.
    pauser = after(started, lambda: worker.client.put(f"/connectors/{name}/pause"))
    dag = airflow_dag(DAG_FILE, DAG_ID)
    run = dag.test(run_conf={"connector": name, "target_state": "PAUSED"})
    pauser.join(5)

    assert str(run.state) == "success"
    assert task_states(run) == {"wait_deferred": "success", "wait_poke": "success"}
    assert [r["connector"] for r in runs] == [name]  # deferred once, trigger ran inline
    assert runs[0]["expected_tasks"] == 1  # looked up over REST
    for task_id in ("wait_deferred", "wait_poke"):
        result = xcom(run, task_id)
        assert (result["status"], result["state"], result["tasks"]) == (
            "success", "PAUSED", {"0": "PAUSED"})
        assert xcom(run, task_id, "topics") == [topic]
    # Only the deferred sensor emits Asset events, one for the connector's KIP-558 topic.
    uri = f"kafka://{kafka_bootstrap.split(',')[0]}/{topic}"
    assert [e["source_task_id"] for e in asset_events(uri)] == ["wait_deferred"]


def test_sensor_fails_the_task_when_a_task_fails_while_deferred(
        airflow_dag: Callable[[Path, str], Any], trigger_runs: Any, conn_id: str,
        kafka_bootstrap: str, status_topic: str) -> None:
    runs, started = trigger_runs
    name = unique_name("dag-fail")
    produce(kafka_bootstrap, status_topic, [
        (f"status-connector-{name}", status_value("RUNNING")),
        (f"status-task-{name}-0", status_value("UNASSIGNED"))])
    failer = after(started, lambda: produce(kafka_bootstrap, status_topic, [
        (f"status-task-{name}-0", status_value("FAILED", trace=TRACE))]))
    dag = airflow_dag(DAG_FILE, DAG_ID)
    run = dag.test(run_conf={"connector": name, "target_state": "RUNNING",
                             "expected_tasks": 1})
    failer.join(5)

    assert str(run.state) == "failed"
    assert task_states(run) == {"wait_deferred": "failed", "wait_poke": "upstream_failed"}
    assert [r["connector"] for r in runs] == [name]
