"""Operators that wait deferred (``deferrable=True``), through real ``dag.test()`` runs:
each wait runs as a trigger (inline, as ``dag.test()`` does) and the task resumes with its
event in the method the operator named.

- The offsets runbook over REST (standalone worker: no status topic) and on the status
  topic (a one-worker cluster): same result, records re-read from the new offsets.
- A wait that times out in the trigger restores the snapshot (offsets and state).
- Create with ``initial_state``, resume, stop and restart wait deferred too.

Every operator reads the status once before it defers: a wait whose state is already
reached goes on in the task, so the tests check which waits deferred only where that is
certain.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from airflow_provider.testing import record_trigger_runs, task_states, xcom
from airflow_provider.triggers.connector_state import ConnectorStateTrigger
from airflow_provider.triggers.status_topic import StatusTopicTrigger
from tests.integration._rest_helpers import STRING_CONVERTER, path, read_values
from tests.support import create_topic, unique_name, wait_for_connector_state, wait_until
from tests.support.plugins import PREFIX as PLUGINS

pytestmark = pytest.mark.integration

DAG_FILE = Path(__file__).parent / "airflow_dags" / "deferrable_operator_dags.py"
WORKER_PROPS = {"key.converter": STRING_CONVERTER, "value.converter": STRING_CONVERTER}


def run(airflow_dag: Callable[[Path, str], Any], dag_id: str, **conf: Any) -> Any:
    return airflow_dag(DAG_FILE, dag_id).test(run_conf=conf)


def file_source(client: Any, kafka_admin: Any, tmp_path: Path, lines: int
                ) -> tuple[str, str, Path]:
    name, topic = unique_name("dfr-src"), create_topic(kafka_admin, unique_name("dfr-src"))
    source = tmp_path / f"{name}.txt"
    source.write_text("".join(f"line-{n}\n" for n in range(lines)), encoding="utf-8")
    response = client.put(f"{path(name)}/config", json={
        "connector.class": "FileStreamSource", "file": str(source), "topic": topic,
        "tasks.max": "1", **WORKER_PROPS})
    assert response.status_code == 201, response.text
    wait_for_connector_state(client, name, "RUNNING", tasks_state="RUNNING")
    return name, topic, source


def committed(client: Any, name: str) -> list[dict[str, Any]]:
    response = client.get(f"{path(name)}/offsets")
    assert response.status_code == 200, response.text
    return list(response.json()["offsets"])


def wait_committed(client: Any, name: str, source: Path) -> list[dict[str, Any]]:
    expected = [{"partition": {"filename": str(source)},
                 "offset": {"position": source.stat().st_size}}]
    wait_until(lambda: committed(client, name) == expected, timeout=60,
               message=lambda: f"offsets of {name}: {committed(client, name)}")
    return expected


def waits(runs: list[dict[str, Any]]) -> list[str]:
    return [r["target_state"] for r in runs]


def deferred_among(runs: list[dict[str, Any]], expected: list[str]) -> list[str]:
    """The waits that ran as triggers, checked to be ``expected`` in order with some left
    out: an operator reads the status before it defers, and a state already reached (a
    stop often is by the time its answer comes) is not deferred."""
    seen, rest = waits(runs), iter(expected)
    assert all(state in rest for state in seen), (seen, expected)
    return seen


def test_deferred_runbook_over_rest(standalone_worker: Any, kafka_connect_conn: Any,
                                    airflow_dag: Any, kafka_admin: Any, kafka_bootstrap: str,
                                    tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    worker = standalone_worker(WORKER_PROPS)
    # bootstrap_servers set, but a standalone worker has no status topic: REST it is.
    kafka_connect_conn(host=worker.url, extra={"bootstrap_servers": kafka_bootstrap})
    rest_runs, _ = record_trigger_runs(monkeypatch, ConnectorStateTrigger)
    topic_runs, _ = record_trigger_runs(monkeypatch, StatusTopicTrigger)
    name, topic, source = file_source(worker.client, kafka_admin, tmp_path, 5)
    text = [f"line-{n}" for n in range(5)]
    assert read_values(kafka_bootstrap, topic, 5) == text
    before = wait_committed(worker.client, name, source)

    rewind = [{"partition": {"filename": str(source)},
               "offset": {"position": len("line-0\nline-1\nline-2\n")}}]
    dag_run = run(airflow_dag, "kc_runbook_deferred", connector=name, action="alter",
                  offsets=rewind)
    assert task_states(dag_run) == {"runbook": "success"}
    deferred_among(rest_runs, ["STOPPED", "RUNNING"])
    assert topic_runs == []
    result = xcom(dag_run, "runbook")
    assert (result["action"], result["initial_state"], result["before"], result["after"]) \
        == ("alter", "RUNNING", before, rewind)
    assert xcom(dag_run, "runbook", "offsets_snapshot") == before
    assert read_values(kafka_bootstrap, topic, 7) == text + text[3:]


def test_deferred_runbook_on_the_status_topic(
        distributed_cluster: Callable[..., Any], kafka_connect_conn: Any, airflow_dag: Any,
        kafka_admin: Any, kafka_bootstrap: str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    cluster = distributed_cluster(size=1)
    worker = cluster.workers[0]
    kafka_connect_conn(host=worker.url, extra={
        "bootstrap_servers": kafka_bootstrap, "status_topic": f"{cluster.group_id}-status"})
    rest_runs, _ = record_trigger_runs(monkeypatch, ConnectorStateTrigger)
    topic_runs, _ = record_trigger_runs(monkeypatch, StatusTopicTrigger)
    name, topic, source = file_source(worker.client, kafka_admin, tmp_path, 4)
    text = [f"line-{n}" for n in range(4)]
    assert read_values(kafka_bootstrap, topic, 4) == text
    before = wait_committed(worker.client, name, source)

    dag_run = run(airflow_dag, "kc_runbook_deferred", connector=name, action="reset")
    assert task_states(dag_run) == {"runbook": "success"}
    deferred_among(topic_runs, ["STOPPED", "RUNNING"])
    assert rest_runs == []
    result = xcom(dag_run, "runbook")
    assert (result["before"], result["after"]) == (before, [])
    assert read_values(kafka_bootstrap, topic, 8) == text + text  # read again from the start
    wait_for_connector_state(worker.client, name, "RUNNING", tasks_state="RUNNING")


def test_a_deferred_wait_that_times_out_restores_the_snapshot(
        standalone_worker: Any, kafka_connect_conn: Any, airflow_dag: Any,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The task cannot start again after the stop (its second start hangs): the wait for
    RUNNING times out in the trigger; the restore stops the connector, writes the
    snapshot back and resumes it (the third task start works)."""
    worker = standalone_worker(WORKER_PROPS)
    kafka_connect_conn(host=worker.url)
    rest_runs, _ = record_trigger_runs(monkeypatch, ConnectorStateTrigger)
    name = unique_name("hangs-once")
    response = worker.client.put(f"{path(name)}/config", json={
        "connector.class": f"{PLUGINS}.SecondStartHangsConnector", "tasks.max": "1"})
    assert response.status_code == 201, response.text
    wait_for_connector_state(worker.client, name, "RUNNING", tasks_state="RUNNING")
    assert committed(worker.client, name) == []

    moved = [{"partition": {"shard": "a"}, "offset": {"position": 7}}]
    dag_run = run(airflow_dag, "kc_runbook_deferred_short_wait", connector=name,
                  action="alter", offsets=moved)
    assert task_states(dag_run) == {"runbook": "failed"}
    # The task never gets back to RUNNING: that wait is certain to run as a trigger.
    assert deferred_among(rest_runs, ["STOPPED", "RUNNING"])[-1:] == ["RUNNING"]
    assert xcom(dag_run, "runbook", "runbook_state")["offsets_touched"] is True
    assert committed(worker.client, name) == []  # the snapshot, written back
    wait_for_connector_state(worker.client, name, "RUNNING", tasks_state="RUNNING")


def test_state_changes_wait_deferred(standalone_worker: Any, kafka_connect_conn: Any,
                                     airflow_dag: Any, kafka_admin: Any,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    worker = standalone_worker(WORKER_PROPS)
    kafka_connect_conn(host=worker.url)
    rest_runs, _ = record_trigger_runs(monkeypatch, ConnectorStateTrigger)
    name = unique_name("dfr-gen")
    config = {"connector.class": "SequenceGenerator", "rate": "5", "tasks.max": "1",
              "topic": create_topic(kafka_admin, unique_name("dfr-gen"))}
    dag_run = run(airflow_dag, "kc_state_changes_deferred", connector=name, config=config)
    assert set(task_states(dag_run).values()) == {"success"}, task_states(dag_run)
    deferred_among(rest_runs, ["PAUSED", "RUNNING", "STOPPED", "RUNNING", "RUNNING"])
    assert xcom(dag_run, "create") == {"connector": name, "action": "created",
                                       "state": "PAUSED"}
    assert xcom(dag_run, "stop")["connector"]["state"] == "STOPPED"  # the status body
    restarted = xcom(dag_run, "restart")
    assert restarted["connector"]["state"] == "RUNNING"
    assert [task["state"] for task in restarted["tasks"]] == ["RUNNING"]
