"""Airflow as it runs in production — api-server, scheduler, dag-processor and triggerer as
separate processes (LocalExecutor, SQLite) — with no ``dag.test()``:

* ``python -m dags.demo --airflow --spark local``: the whole story over the repository's
  ``dags/``. The scheduler starts the status sensor's run, then ``orders_pipeline`` on
  the sensor's and the replay runbook's Asset events; the runbooks, the certificate
  rotation and the manifest sync wait ``deferred`` and finish after their triggers fired
  in the triggerer; the UI answers with the printed login; Ctrl-C (SIGTERM) stops it all.
* Over the DAGs of ``airflow_live_dags/`` and a standalone worker: how long Airflow takes
  from a connector's state change to the deferred task's success; a triggerer restarted
  during a runbook's wait re-creates the trigger and the runbook finishes; a wait that
  times out in the triggerer restores the offsets snapshot.
"""

from __future__ import annotations

import json
import os
import re
import select
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from dags.demo.airflow_services import AirflowApi, AirflowServices
from dags.demo.stack import wait_for
from tests.integration._rest_helpers import path
from tests.support import NO_JAVA, WorkerProcess, unique_name
from tests.support.airflow_live import (
    create_gated,
    measure_asset_pickup,
    measure_pickup,
    start_airflow,
    trigger_log_events,
    wait_deferred,
    wait_state,
)
from tests.support.plugins import PREFIX as PLUGINS

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).parents[2]
#: Broker, worker, Airflow's four processes, nine DAG runs, three Spark jobs (local).
STORY_TIMEOUT_S = 720
PICKUP_ROUNDS = 3


# ------------------------------------------------------------------ the demo, live


def _read_until(proc: subprocess.Popen[bytes], marker: str, timeout: float) -> str:
    """The process's output up to and including ``marker`` (bounded by ``timeout``); read
    from the pipe's file descriptor, so nothing waits in a Python buffer unseen."""
    assert proc.stdout is not None
    fd, out = proc.stdout.fileno(), b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not select.select([fd], [], [], 1.0)[0]:
            continue
        chunk = os.read(fd, 65536)
        if not chunk:  # the demo ended without reaching the marker
            break
        out += chunk
        if marker.encode() in out:
            return out.decode(errors="replace")
    raise AssertionError(f"no {marker!r} within {timeout:g} s (exit code {proc.poll()}):\n"
                         + out.decode(errors="replace"))


@pytest.mark.skipif(NO_JAVA is not None, reason=f"the demo's Spark pipeline: {NO_JAVA}")
@pytest.mark.timeout(STORY_TIMEOUT_S + 180)
def test_the_demo_on_airflow_processes(tmp_path: Path) -> None:
    demo_dir = tmp_path / "demo"
    proc = subprocess.Popen(
        [sys.executable, "-m", "dags.demo", "--airflow", "--spark", "local",
         "--dir", str(demo_dir)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=ROOT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        story = _read_until(proc, "Ctrl-C stops it all.", STORY_TIMEOUT_S)
        login = re.search(r"Airflow UI: (http://127\.0\.0\.1:\d+)  \(login (\w+) / (\S+)\)",
                          story)
        assert login, story
        # The printed login works against the running API server, and the UI is served.
        api = AirflowApi(login[1], (login[2], login[3]))
        dags = {dag["dag_id"]: dag for dag in api.get("/dags")["dags"]}
        api.close()
        assert httpx.get(login[1], timeout=30).status_code == 200
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            rest, _ = proc.communicate(timeout=150)  # Airflow, Spark, worker, broker stop
        except subprocess.TimeoutExpired:
            proc.kill()
            rest, _ = proc.communicate()
    out = story + rest.decode(errors="replace")
    context = f"demo output:\n{out}"
    assert proc.returncode == 0, context  # Ctrl-C after the story is a clean end
    assert re.search(r"Airflow stopped \(triggerer 0, scheduler 0, dag-processor 0, "
                     r"api-server 0\)", out), context
    assert {"orders_pipeline", "orders_source_check", "kafka_connect_replay_source",
            "kafka_connect_skip_poison_record", "kafka_connect_certificate_rotation",
            "kafka_connect_plugin_manifest_sync"} <= set(dags), dags

    # Scheduled by the scheduler: the sensor's run, and the pipeline on two Asset events.
    assert "orders_source_check: source_running=success" in out, context
    assert re.search(r"the scheduler started scheduled__\S+ when the DAG was unpaused", out)
    pipeline_starts = re.findall(r"→ Asset event kafka://\S+/orders from (\w+); the scheduler "
                                 r"started (asset_triggered__\S+) ([\d.]+) s later", out)
    assert [source for source, _, _ in pipeline_starts] == ["source_running", "replay"], \
        context
    # The runbooks succeeded; their waits defer only when a state is not reached at the
    # first read (the demo then prints the states the task went through).
    for dag_id, task in (("kafka_connect_skip_poison_record", "skip_poison_record"),
                         ("kafka_connect_replay_source", "replay")):
        assert re.search(rf"\n  {dag_id}: .*\b{task}=success", out), context
    # The rotation's wait for the new certificate runs in the triggerer.
    assert re.search(r"\n    rotate: .*deferred.* → success\n", out), context
    # The story's own checks: totals, an identical re-run, rotation, plugin sync.
    assert "89 orders of 5 customers" in out and "identical" in out, context
    before = re.search(r"fingerprint before: ([0-9a-f]{64})", out)
    after = re.search(r"fingerprint after:  ([0-9a-f]{64})", out)
    assert before and after and before[1] != after[1], context
    assert "tickets-source: RUNNING, task RUNNING; published 25 tickets" in out, context
    next_night = re.search(r"\(next night\): (.+)\n", out)
    assert next_night and set(next_night[1].split(", ")) == {
        "plan=success", "should_sync=success", "sync=skipped", "check_workers=skipped"}, context
    timings = json.loads((demo_dir / "airflow-timings.json").read_text())
    assert 0 <= timings["asset_event_to_pipeline_run_s"] < 60, timings
    print(f"\nAsset event → pipeline run started: {[float(s) for _, _, s in pipeline_starts]}"
          f" s; Airflow healthy in {timings['airflow_start_s']:.1f} s")


# ------------------------------------------------------------------ waits, live


@pytest.fixture(scope="module")
def airflow(worker: WorkerProcess, tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[AirflowServices]:
    home = tmp_path_factory.mktemp("airflow-live")
    services = start_airflow(home, worker.url, home / "logs")
    try:
        yield services
    finally:
        services.stop()


@pytest.fixture
def api(airflow: AirflowServices) -> Iterator[AirflowApi]:
    client = airflow.api()
    try:
        yield client
    finally:
        client.close()


def test_a_state_change_reaches_the_deferred_task(airflow: AirflowServices, api: AirflowApi,
                                                  worker: WorkerProcess,
                                                  tmp_path: Path) -> None:
    name = unique_name("live-pickup")
    create_gated(worker.client, name, tmp_path / "gate")
    rounds = [measure_pickup(airflow, api, worker.client, name) for _ in range(PICKUP_ROUNDS)]
    for figures in rounds:
        assert 0 < figures["trigger_event"] <= figures["left_deferred"] + 1.0, figures
        assert figures["left_deferred"] <= figures["task_running"] <= figures["task_success"]
    medians = {key: statistics.median(r[key] for r in rounds) for key in rounds[0]}
    print(f"\nstate change → (median of {PICKUP_ROUNDS}) "
          + ", ".join(f"{key} {value:.2f} s" for key, value in medians.items()))


def test_an_asset_event_makes_the_scheduler_start_the_dag_on_it(api: AirflowApi) -> None:
    pickup = measure_asset_pickup(api)
    assert 0 <= pickup < 60, pickup
    print(f"\nAsset event → run started: {pickup:.2f} s")


def test_a_triggerer_restart_mid_wait_resumes_the_wait(airflow: AirflowServices,
                                                       api: AirflowApi, worker: WorkerProcess,
                                                       tmp_path: Path) -> None:
    """The runbook defers waiting for RUNNING while the task cannot start (its gate is
    closed); the triggerer is restarted; the new one re-creates the trigger from its
    serialized form, and once the task starts the runbook finishes."""
    name, gate = unique_name("live-restart"), tmp_path / "gate"
    create_gated(worker.client, name, gate)
    gate.unlink()  # the next task start waits for it
    run_id = api.trigger("live_runbook", {"connector": name, "action": "reset"})

    def waiting_for_running() -> dict[str, Any] | None:
        """Deferred in a triggerer after the offsets were reset: the wait for RUNNING."""
        ti = api.task_instances("live_runbook", run_id)["runbook"]
        progress = api.xcom_or_none("live_runbook", run_id, "runbook",
                                    key="runbook_state") or {}
        held = ti["state"] == "deferred" and (ti.get("trigger") or {}).get("triggerer_id")
        return ti if held and progress.get("offsets_touched") else None

    first = wait_for(waiting_for_running, "the runbook to wait for RUNNING", 120.0)
    tasks = worker.client.get(f"{path(name)}/status").json().get("tasks", [])
    assert [task["state"] for task in tasks] != ["RUNNING"]  # its start waits for the gate
    airflow.restart_service("triggerer")
    second = wait_deferred(api, "live_runbook", run_id, "runbook")["trigger"]["triggerer_id"]
    assert second != first
    gate.touch()
    run = api.wait_run("live_runbook", run_id, 120.0)
    assert run["state"] == "success", api.task_instances("live_runbook", run_id)
    fired = trigger_log_events(airflow.home, "live_runbook", run_id, "runbook")
    assert any("'target_state': 'RUNNING'" in event["result"] for event in fired), fired
    wait_state(worker.client, name, "RUNNING")


def test_a_wait_that_times_out_in_the_triggerer_restores_the_snapshot(
        airflow: AirflowServices, api: AirflowApi, worker: WorkerProcess) -> None:
    name = unique_name("live-timeout")
    response = worker.client.put(f"{path(name)}/config", json={
        "connector.class": f"{PLUGINS}.SecondStartHangsConnector", "tasks.max": "1"})
    assert response.status_code == 201, response.text
    wait_state(worker.client, name, "RUNNING")
    moved = [{"partition": {"shard": "a"}, "offset": {"position": 7}}]
    run_id = api.trigger("live_runbook_short_wait",
                         {"connector": name, "action": "alter", "offsets": moved})
    run = api.wait_run("live_runbook_short_wait", run_id, 180.0)
    assert run["state"] == "failed"
    fired = trigger_log_events(airflow.home, "live_runbook_short_wait", run_id, "runbook")
    assert any("'status': 'timeout'" in event["result"] for event in fired), fired
    # The snapshot (no offsets) is written back and the connector runs again.
    assert worker.client.get(f"{path(name)}/offsets").json()["offsets"] == []
    wait_state(worker.client, name, "RUNNING")
