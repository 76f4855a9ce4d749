"""The provider's operators, sensors and runbook through real Airflow ``dag.test()`` runs
against a real ``connect-standalone`` worker and the test broker.

The runbook resets and alters a source's and a sink's offsets and the connector resumes
from them (records re-read show it); a failure injected after the change restores the
snapshot; lifecycle operators and the REST sensor (deferred and poking) drive a connector
from creation to deletion; topic Asset events reach Airflow's database.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest
from confluent_kafka import Producer

from airflow_provider.testing import (
    asset_events,
    record_trigger_runs,
    task_states,
    xcom,
)
from airflow_provider.triggers.connector_state import ConnectorStateTrigger
from tests.integration._rest_helpers import STRING_CONVERTER, path, read_values
from tests.support import create_topic, unique_name, wait_for_connector_state, wait_until

pytestmark = pytest.mark.integration

DAG_FILE = Path(__file__).parent / "airflow_dags" / "kafka_connect_provider_dags.py"
WORKER_PROPS = {"key.converter": STRING_CONVERTER, "value.converter": STRING_CONVERTER}


@pytest.fixture
def worker(standalone_worker, kafka_connect_conn, kafka_bootstrap: str):
    worker = standalone_worker(WORKER_PROPS)
    kafka_connect_conn(host=worker.url, extra={"bootstrap_servers": kafka_bootstrap})
    return worker


def run(airflow_dag, dag_id: str, **conf: Any) -> Any:
    dag = airflow_dag(DAG_FILE, dag_id)
    return dag.test(run_conf=conf)


def offsets(client: httpx.Client, name: str) -> list[dict[str, Any]]:
    response = client.get(f"{path(name)}/offsets")
    assert response.status_code == 200, response.text
    return response.json()["offsets"]


def wait_for_offsets(client: httpx.Client, name: str, expected: list[dict[str, Any]]) -> None:
    wait_until(lambda: offsets(client, name) == expected, timeout=60,
               message=lambda: f"offsets of {name} to be {expected}; "
                               f"got {offsets(client, name)}")


def create(client: httpx.Client, name: str, config: dict[str, str]) -> None:
    response = client.put(f"{path(name)}/config", json=config)
    assert response.status_code == 201, response.text
    wait_for_connector_state(client, name, "RUNNING", tasks_state="RUNNING")


def file_source(client, kafka_admin, tmp_path: Path, lines: int) -> tuple[str, str, Path]:
    name, topic = unique_name("af-src"), create_topic(kafka_admin, unique_name("af-src"))
    source = tmp_path / f"{name}.txt"
    source.write_text("".join(f"line-{n}\n" for n in range(lines)), encoding="utf-8")
    create(client, name, {"connector.class": "FileStreamSource", "file": str(source),
                          "topic": topic})
    return name, topic, source


def position(source: Path) -> list[dict[str, Any]]:
    return [{"partition": {"filename": str(source)},
             "offset": {"position": source.stat().st_size}}]


# --- the runbook on a source --------------------------------------------------------------


def test_runbook_resets_and_alters_a_source(worker, airflow_dag, kafka_admin,
                                            kafka_bootstrap: str, tmp_path: Path) -> None:
    client = worker.client
    text = [f"line-{n}" for n in range(5)]
    name, topic, source = file_source(client, kafka_admin, tmp_path, 5)
    assert read_values(kafka_bootstrap, topic, 5) == text
    committed = position(source)
    wait_for_offsets(client, name, committed)

    # Alter: back to the start of line 2 → lines 2..4 are produced again.
    rewind = [{"partition": {"filename": str(source)},
               "offset": {"position": len("line-0\nline-1\n")}}]
    dag_run = run(airflow_dag, "kc_runbook", connector=name, action="alter", offsets=rewind)
    assert task_states(dag_run) == {"runbook": "success"}
    assert xcom(dag_run, "runbook", "offsets_snapshot") == committed
    result = xcom(dag_run, "runbook")
    assert (result["type"], result["action"], result["initial_state"]) == (
        "source", "alter", "RUNNING")
    assert result["before"] == committed and result["after"] == rewind
    assert read_values(kafka_bootstrap, topic, 8) == text + text[2:]
    wait_for_offsets(client, name, committed)
    assert client.get(f"{path(name)}/status").json()["connector"]["state"] == "RUNNING"

    # Reset: everything from the beginning again.
    dag_run = run(airflow_dag, "kc_runbook", connector=name, action="reset")
    assert task_states(dag_run) == {"runbook": "success"}
    assert xcom(dag_run, "runbook")["after"] == []
    assert read_values(kafka_bootstrap, topic, 13) == text + text[2:] + text

    # The runbook emitted one Asset event per active topic (KIP-558), through its alias.
    uri = f"kafka://{kafka_bootstrap.split(',')[0]}/{topic}"
    events = asset_events(uri)
    assert [e["source_task_id"] for e in events] == ["runbook", "runbook"]
    assert events[-1]["extra"]["connector"] == name


def test_runbook_refuses_bad_offsets_before_touching_anything(
        worker, airflow_dag, kafka_admin, tmp_path: Path) -> None:
    client = worker.client
    name, _, source = file_source(client, kafka_admin, tmp_path, 3)
    wait_for_offsets(client, name, position(source))
    dag_run = run(airflow_dag, "kc_runbook", connector=name, action="alter",
                  offsets=[{"partition": {"filename": str(source)}, "offset": 7}])
    assert task_states(dag_run) == {"runbook": "failed"}
    assert xcom(dag_run, "runbook", "offsets_snapshot") is None  # failed before the snapshot
    status = client.get(f"{path(name)}/status").json()
    assert status["connector"]["state"] == "RUNNING"
    assert offsets(client, name) == position(source)

    dag_run = run(airflow_dag, "kc_runbook", connector="no-such-connector", action="reset")
    assert task_states(dag_run) == {"runbook": "failed"}


def test_injected_failure_after_the_reset_restores_the_snapshot(
        worker, airflow_dag, kafka_admin, kafka_bootstrap: str, tmp_path: Path) -> None:
    client = worker.client
    text = [f"line-{n}" for n in range(4)]
    name, topic, source = file_source(client, kafka_admin, tmp_path, 4)
    assert read_values(kafka_bootstrap, topic, 4) == text
    committed = position(source)
    wait_for_offsets(client, name, committed)

    dag_run = run(airflow_dag, "kc_runbook_injected_failure", connector=name, action="reset")
    assert task_states(dag_run) == {"runbook": "failed"}
    assert xcom(dag_run, "runbook", "offsets_snapshot") == committed
    # Restored: the snapshot's offsets, RUNNING again, and nothing re-read from the start.
    assert offsets(client, name) == committed
    wait_for_connector_state(client, name, "RUNNING", tasks_state="RUNNING")
    source.open("a", encoding="utf-8").write("line-4\n")
    assert read_values(kafka_bootstrap, topic, 5) == [*text, "line-4"]


# --- the runbook on a sink ----------------------------------------------------------------


def produce(bootstrap: str, topic: str, values: list[str]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for value in values:
        producer.produce(topic, value.encode(), partition=0)
        producer.flush(30)  # one record per batch: offsets match positions (Tansu)
    assert producer.flush(30) == 0


def sink_entry(topic: str, offset: int | None) -> dict[str, Any]:
    return {"partition": {"kafka_topic": topic, "kafka_partition": 0},
            "offset": None if offset is None else {"kafka_offset": offset}}


def test_runbook_alters_and_resets_a_sink(worker, airflow_dag, kafka_admin,
                                          kafka_bootstrap: str, tmp_path: Path) -> None:
    client = worker.client
    name, topic = unique_name("af-sink"), create_topic(kafka_admin, unique_name("af-sink"))
    values = [f"v-{n}" for n in range(6)]
    produce(kafka_bootstrap, topic, values)
    out = tmp_path / "out.txt"

    def lines() -> list[str]:
        return out.read_text(encoding="utf-8").splitlines() if out.exists() else []

    create(client, name, {"connector.class": "FileStreamSink", "topics": topic,
                          "file": str(out)})
    wait_until(lambda: len(lines()) == 6, timeout=60, message=lambda: f"6 lines: {lines()}")
    wait_for_offsets(client, name, [sink_entry(topic, 6)])

    # A sink-shaped check: a source-style partition is refused before anything happens.
    dag_run = run(airflow_dag, "kc_runbook", connector=name, action="alter",
                  offsets=[{"partition": {"filename": "x"}, "offset": None}])
    assert task_states(dag_run) == {"runbook": "failed"}
    assert client.get(f"{path(name)}/status").json()["connector"]["state"] == "RUNNING"

    # Skip ahead: alter to offset 4 → v-4 and v-5 are written again.
    dag_run = run(airflow_dag, "kc_runbook", connector=name, action="alter",
                  offsets={"offsets": [sink_entry(topic, 4)]})
    assert task_states(dag_run) == {"runbook": "success"}
    assert xcom(dag_run, "runbook")["type"] == "sink"
    wait_until(lambda: len(lines()) == 8, timeout=60, message=lambda: f"8 lines: {lines()}")
    assert lines()[6:] == values[4:]
    wait_for_offsets(client, name, [sink_entry(topic, 6)])

    # Reset: the group is deleted, the sink starts from the beginning of the topic.
    dag_run = run(airflow_dag, "kc_runbook", connector=name, action="reset")
    assert task_states(dag_run) == {"runbook": "success"}
    wait_until(lambda: len(lines()) == 14, timeout=60, message=lambda: f"14 lines: {lines()}")
    assert lines()[8:] == values


# --- lifecycle operators and the REST sensor ---------------------------------------------


def test_apply_is_idempotent_and_validates_first(worker, airflow_dag, kafka_admin,
                                                 tmp_path: Path) -> None:
    client = worker.client
    name, topic = unique_name("af-apply"), create_topic(kafka_admin, unique_name("af-apply"))
    config = {"connector.class": "FileStreamSource", "file": str(tmp_path / "in.txt"),
              "topic": topic, "tasks.max": 1}
    actions = []
    for conf in (config, config, {**config, "batch.size": 10}):
        dag_run = run(airflow_dag, "kc_apply", connector=name, config=conf)
        assert task_states(dag_run) == {"apply": "success"}
        actions.append(xcom(dag_run, "apply")["action"])
    assert actions == ["created", "unchanged", "updated"]
    stored = client.get(f"{path(name)}/config").json()
    assert (stored["batch.size"], stored["tasks.max"]) == ("10", "1")

    # An invalid config fails the task and changes nothing.
    bad = unique_name("af-bad")
    dag_run = run(airflow_dag, "kc_apply", connector=bad,
                  config={"connector.class": "FileStreamSource", "topic": topic,
                          "tasks.max": "many"})
    assert task_states(dag_run) == {"apply": "failed"}
    assert client.get(path(bad)).status_code == 404

    # KIP-980: created straight into STOPPED.
    stopped = unique_name("af-stopped")
    dag_run = run(airflow_dag, "kc_apply", connector=stopped, config=config,
                  initial_state="STOPPED")
    assert task_states(dag_run) == {"apply": "success"}
    wait_for_connector_state(client, stopped, "STOPPED")


def test_lifecycle_from_creation_to_deletion(worker, airflow_dag, kafka_admin,
                                             tmp_path: Path) -> None:
    client = worker.client
    name, topic = unique_name("af-life"), create_topic(kafka_admin, unique_name("af-life"))
    source = tmp_path / "in.txt"
    source.write_text("a\nb\n", encoding="utf-8")
    dag_run = run(airflow_dag, "kc_lifecycle", connector=name,
                  config={"connector.class": "FileStreamSource", "file": str(source),
                          "topic": topic})
    states = task_states(dag_run)
    assert set(states.values()) == {"success"}, states
    assert xcom(dag_run, "running")["state"] == "RUNNING"
    assert xcom(dag_run, "paused")["tasks"] == {"0": "PAUSED"}  # poke mode
    assert xcom(dag_run, "get_offsets") == position(source)
    assert client.get(path(name)).status_code == 404  # deleted at the end


def test_the_rest_sensor_defers_until_the_connector_runs(
        worker, airflow_dag, kafka_admin, kafka_bootstrap: str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    client = worker.client
    name, topic = unique_name("af-defer"), create_topic(kafka_admin, unique_name("af-defer"))
    source = tmp_path / "in.txt"
    source.write_text("a\n", encoding="utf-8")
    response = client.post("/connectors", json={
        "name": name, "initial_state": "PAUSED",
        "config": {"connector.class": "FileStreamSource", "file": str(source),
                   "topic": topic}})
    assert response.status_code == 201, response.text
    wait_for_connector_state(client, name, "PAUSED")

    # Resume only once Airflow has deferred the sensor and its trigger runs.
    runs, started = record_trigger_runs(monkeypatch, ConnectorStateTrigger)
    resumed: list[int] = []

    def resume_when_deferred() -> None:
        if started.wait(90):
            resumed.append(client.put(f"{path(name)}/resume").status_code)

    resumer = threading.Thread(target=resume_when_deferred, daemon=True)
    resumer.start()
    dag_run = run(airflow_dag, "kc_wait_running", connector=name)
    resumer.join(30)
    assert [r["connector"] for r in runs] == [name] and resumed == [202]
    assert task_states(dag_run) == {"running": "success"}
    event = xcom(dag_run, "running")
    assert (event["status"], event["state"], event["tasks"]) == ("success", "RUNNING",
                                                                 {"0": "RUNNING"})
    assert xcom(dag_run, "running", "topics") == [topic]
    uri = f"kafka://{kafka_bootstrap.split(',')[0]}/{topic}"
    assert [e["source_task_id"] for e in asset_events(uri)] == ["running"]


def test_the_rest_sensor_fails_fast_with_the_trace(worker, airflow_dag, kafka_admin,
                                                   tmp_path: Path) -> None:
    client = worker.client
    name, topic = unique_name("af-fail"), create_topic(kafka_admin, unique_name("af-fail"))
    # A sink whose file cannot be opened (a directory) fails its task on start.
    dag_run = run(airflow_dag, "kc_lifecycle", connector=name,
                  config={"connector.class": "FileStreamSink", "topics": topic,
                          "file": str(tmp_path)})
    states = task_states(dag_run)
    assert states["apply"] == "success" and states["running"] == "failed", states
    status = client.get(f"{path(name)}/status").json()
    assert any(task["state"] == "FAILED" for task in status["tasks"]), json.dumps(status)
