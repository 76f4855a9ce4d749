"""Real Airflow processes over the DAGs of ``tests/integration/airflow_live_dags/``, for
``tests/integration/test_airflow_processes.py`` and ``tests/bench/bench_airflow_pickup.py``.

:func:`start_airflow` runs api-server, scheduler, dag-processor and triggerer
(``dags/demo/airflow_services.py``) with ``kafka_connect_default`` pointing at a worker;
:func:`measure_pickup` times one deferred wait from the connector's state change to the
task's success, with the trigger's own event time read from its log in the triggerer.
"""

from __future__ import annotations

import datetime
import json
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

from dags.demo.airflow_services import AirflowApi, AirflowServices, DagBundle
from dags.demo.stack import wait_for
from tests.support.plugins import PREFIX as PLUGINS

LIVE_DAGS = Path(__file__).parents[1] / "integration" / "airflow_live_dags"
DAG_IDS = ("live_wait_running", "live_runbook", "live_runbook_short_wait", "live_emit",
           "live_on_asset")
#: How often the task instance's state is sampled while a pickup is timed.
SAMPLE_S = 0.05


def start_airflow(home: Path, worker_url: str, log_dir: Path) -> AirflowServices:
    """Airflow's four processes, the live DAGs parsed; the worker over REST (no
    ``bootstrap_servers``: a standalone worker has no status topic)."""
    services = AirflowServices(home, [DagBundle("live-dags", LIVE_DAGS)], log_dir=log_dir, env={
        "AIRFLOW_CONN_KAFKA_CONNECT_DEFAULT": json.dumps(
            {"conn_type": "kafka_connect", "host": worker_url}),
        "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False"})
    services.start()
    try:
        api = services.api()
        api.wait_dags(DAG_IDS)
        api.close()
    except BaseException:
        services.stop()
        raise
    return services


def create_gated(client: httpx.Client, name: str, gate: Path) -> None:
    """A ``GatedStartConnector`` (its task starts once ``gate`` exists), RUNNING."""
    gate.touch()
    response = client.put(f"/connectors/{quote(name)}/config", json={
        "connector.class": f"{PLUGINS}.GatedStartConnector", "tasks.max": "1",
        "gate.file": str(gate)})
    response.raise_for_status()
    wait_state(client, name, "RUNNING")


def wait_state(client: httpx.Client, name: str, state: str, timeout: float = 60.0) -> None:
    def reached() -> bool:
        body = client.get(f"/connectors/{quote(name)}/status").json()
        return body.get("connector", {}).get("state") == state and all(
            task["state"] == state for task in body.get("tasks") or [{"state": None}])

    wait_for(reached, f"{name} to be {state}", timeout)


def task_instance(api: AirflowApi, dag_id: str, run_id: str, task_id: str) -> dict[str, Any]:
    return api.task_instances(dag_id, run_id)[task_id]


def wait_deferred(api: AirflowApi, dag_id: str, run_id: str, task_id: str,
                  timeout: float = 120.0) -> dict[str, Any]:
    """Until the task instance is deferred and a triggerer runs its trigger."""
    def held() -> dict[str, Any] | None:
        ti = task_instance(api, dag_id, run_id, task_id)
        if ti["state"] in ("failed", "success", "upstream_failed"):
            raise AssertionError(f"{dag_id}.{task_id} ended {ti['state']} before deferring")
        trigger = ti.get("trigger") or {}
        return ti if ti["state"] == "deferred" and trigger.get("triggerer_id") else None

    return dict(wait_for(held, f"{dag_id}.{task_id} to be deferred in a triggerer", timeout))


def trigger_log_events(home: Path, dag_id: str, run_id: str, task_id: str
                       ) -> list[dict[str, Any]]:
    """The "Trigger fired event" records the triggerer wrote to the task's trigger logs."""
    folder = (home / "task-logs" / f"dag_id={dag_id}" / f"run_id={run_id}"
              / f"task_id={task_id}")
    events = []
    for log in sorted(folder.glob("attempt=*.log.trigger.*.log")):
        for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
            if '"Trigger fired event"' in line:
                events.append(json.loads(line))
    return events


def _seconds(value: str) -> float:
    return datetime.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


def measure_pickup(services: AirflowServices, api: AirflowApi, client: httpx.Client,
                   connector: str) -> dict[str, float]:
    """One round: ``connector`` (RUNNING) is paused; ``live_wait_running`` is triggered
    and defers; the clock starts at ``PUT /resume``. Returns seconds from the resume to
    the trigger's event (its log record in the triggerer), to the task instance leaving
    ``deferred``, to the task running again, and to its success."""
    response = client.put(f"/connectors/{quote(connector)}/pause")
    response.raise_for_status()
    wait_state(client, connector, "PAUSED")
    dag_id, task_id = "live_wait_running", "wait_running"
    run_id = api.trigger(dag_id, {"connector": connector})
    wait_deferred(api, dag_id, run_id, task_id)
    started = time.time()
    client.put(f"/connectors/{quote(connector)}/resume").raise_for_status()
    marks: dict[str, float] = {}
    deadline = time.monotonic() + 120
    while "success" not in marks:
        state = task_instance(api, dag_id, run_id, task_id)["state"]
        now = time.time() - started
        if state != "deferred":
            marks.setdefault("left_deferred", now)
        if state in ("running", "success"):
            marks.setdefault("running", now)
        if state == "success":
            marks["success"] = now
        elif state == "failed" or time.monotonic() > deadline:
            raise AssertionError(f"{dag_id} run {run_id}: {state} after {now:.1f} s")
        time.sleep(SAMPLE_S)
    # (A second event only if Airflow's stale-success race made the task retry.)
    event = trigger_log_events(services.home, dag_id, run_id, task_id)[0]
    return {"trigger_event": _seconds(event["timestamp"]) - started,
            "left_deferred": marks["left_deferred"], "task_running": marks["running"],
            "task_success": marks["success"]}


def measure_asset_pickup(api: AirflowApi) -> float:
    """Seconds from ``live_emit``'s Asset event to the start of the ``live_on_asset`` run
    the scheduler created for it (both times from Airflow's database)."""
    before = {run["dag_run_id"] for run in api.dag_runs("live_on_asset")}
    run_id = api.trigger("live_emit")
    run = api.wait_run("live_emit", run_id, 120.0)
    if run["state"] != "success":
        raise AssertionError(f"live_emit {run_id}: {run['state']}")
    # Started first: Airflow 3.3.2's GET /assets/events answers 500 while a run an event
    # created is still queued (its start_date is null; the response model requires one).
    started = wait_for(lambda: next((r for r in api.dag_runs("live_on_asset")
                                     if r["dag_run_id"] not in before and r.get("start_date")),
                                    None),
                       f"the scheduler to start live_on_asset after {run_id}", 120.0)
    (event,) = api.get("/assets/events", source_run_id=run_id)["asset_events"]
    if started["dag_run_id"] not in {r["run_id"] for r in event["created_dagruns"]}:
        raise AssertionError(f"{started['dag_run_id']} was not created by {run_id}'s event")
    return _seconds(started["start_date"]) - _seconds(event["timestamp"])
