"""The story's Airflow on Airflow's own processes (``python -m dags.demo --airflow``):
api-server, scheduler, dag-processor and triggerer (``dags/demo/airflow_services.py``)
load the repository's ``dags/``; nothing runs through ``dag.test()``.

* DAGs start paused, as Airflow creates them; the story unpauses each when it needs it.
  Scheduled DAGs (``orders_source_check``, the daily certificate rotation and plugin
  manifest sync) then get their run from the **scheduler**, with their default params,
  which the environment set here points at the demo's files; the runbooks are triggered
  through the REST API with a config, as an operator would from the UI.
* ``orders_pipeline`` is unpaused from the start: the Asset events of the status sensor
  and of the replay runbook make the scheduler start it (run type ``asset_triggered``);
  the story measures how long that took.
* Every wait in a task is deferred (``[operators] default_deferrable``): the state of every
  task instance is sampled while its run goes on, so the story can show ``deferred``.
* Spark: a standalone master and worker from the pyspark package (``spark_default`` is
  ``spark://127.0.0.1:<port>``), or ``local[2]`` with ``spark="local"``.
"""

from __future__ import annotations

import datetime
import json
import os
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dags.demo.airflow_runs import DAGS_FOLDER, PIPELINE, DagResult, task_log_problems
from dags.demo.airflow_services import (
    AirflowApi,
    AirflowServices,
    DagBundle,
)
from dags.demo.stack import StackError, wait_for

if TYPE_CHECKING:
    from dags.demo.spark_standalone import SparkStandalone
    from dags.demo.stack import Stack

RUN_TIMEOUT = 420.0
#: Sampling interval of task instance states while a run goes on.
SAMPLE_INTERVAL = 0.1
#: How long the Spark master may take to mark a finished pipeline application FINISHED.
SPARK_FINISH_TIMEOUT = 30.0


def pipeline_app_name(topic: str) -> str:
    """The name the pipeline's Spark application gives itself
    (``dags/pipelines/orders_job.py``: its ``appName`` wins over spark-submit's
    ``--name``), which the standalone master lists."""
    return f"orders-pipeline-{topic}"


def finished_applications(applications: list[dict[str, Any]], name: str) -> int:
    """How many of the master's ``applications`` are named ``name`` and FINISHED."""
    return sum(app.get("name") == name and app.get("state") == "FINISHED"
               for app in applications)


def _parse_time(value: str | None) -> datetime.datetime | None:
    return datetime.datetime.fromisoformat(value) if value else None


class LiveAirflow:
    """Same interface as :class:`dags.demo.airflow_runs.DagTestAirflow`."""

    def __init__(self, directory: Path, *, spark: str = "standalone") -> None:
        if spark not in ("standalone", "local"):
            raise ValueError(f"spark must be 'standalone' or 'local', not {spark!r}")
        self.dir = directory
        self.home = directory / "airflow"
        self.spark_mode = spark
        self.spark: SparkStandalone | None = None
        self.services: AirflowServices | None = None
        self._api: AirflowApi | None = None
        self._runs_seen: set[str] = set()
        self._spark_jobs = 0
        #: The pipeline's topic (its Spark application is named after it).
        self._topic: str | None = None
        #: Figures the story measured: ``{name: seconds}`` (also written to
        #: ``airflow-timings.json`` in the demo directory).
        self.timings: dict[str, float] = {}

    @property
    def api(self) -> AirflowApi:
        if self._api is None:
            raise RuntimeError("Airflow is not started")
        return self._api

    def describe(self) -> str:
        return (f"Airflow's own processes (api-server, scheduler, dag-processor, triggerer; "
                f"LocalExecutor, SQLite in {self.home}; DAGs from {DAGS_FOLDER})")

    # ------------------------------------------------------------------ start and stop

    def environment(self, stack: Stack, output: Path, spark_master: str) -> dict[str, str]:
        bin_dir = str(Path(sys.executable).parent)
        return {
            "AIRFLOW_CONN_KAFKA_CONNECT_DEFAULT": json.dumps({
                "conn_type": "kafka_connect", "host": stack.url,
                "extra": {"bootstrap_servers": stack.bootstrap,
                          "ca_bundle": str(stack.tls_dir / "ca.pem")}}),
            "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark",
                                                      "host": spark_master}),
            "AIRFLOW__OPERATORS__DEFAULT_DEFERRABLE": "True",
            "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "True",
            "CONNECT_PLANE_KAFKA_BOOTSTRAP": stack.bootstrap,
            "CONNECT_PLANE_PIPELINE_OUTPUT": str(output),
            "CONNECT_PLANE_TLS_DIR": str(stack.tls_dir),
            "CONNECT_PLANE_PLUGIN_PATH": str(stack.plugin_path),
            "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
            "PYSPARK_PYTHON": sys.executable,
            "SPARK_SUBMIT_OPTS": os.environ.get("SPARK_SUBMIT_OPTS",
                                                "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"),
        }

    def start(self, stack: Stack, output: Path) -> list[str]:
        said = []
        master = "local[2]"
        if self.spark_mode == "standalone":
            from dags.demo.spark_standalone import SparkStandalone

            self.spark = SparkStandalone(self.dir / "spark")
            master = self.spark.start()
            said.append(f"Spark standalone master {master} (UI {self.spark.ui_url}), "
                        "one worker")
        self.services = AirflowServices(
            self.home, [DagBundle("dags-folder", DAGS_FOLDER)],
            env=self.environment(stack, output, master), log_dir=stack.logs)
        started = time.monotonic()
        self.services.start()
        self._api = self.services.api()
        self.api.wait_dags([PIPELINE, "orders_source_check"])
        self.timings["airflow_start_s"] = time.monotonic() - started
        said.append(f"api-server {self.services.url}, scheduler, dag-processor and "
                    f"triggerer healthy in {self.timings['airflow_start_s']:.0f} s")
        self.unpause(PIPELINE)
        said.append(f"{PIPELINE} unpaused: it waits for its topic's Asset events")
        return said

    def ui(self) -> list[str]:
        if self.services is None:
            return []
        user, password = self.services.login
        lines = [f"Airflow UI: {self.services.url}  (login {user} / {password})"]
        if self.spark is not None:
            lines.append(f"Spark master UI: {self.spark.ui_url}")
        return lines

    def stop(self) -> list[str]:
        said = []
        if self._api is not None:
            self._api.close()
            self._api = None
        if self.services is not None:
            codes = self.services.stop()
            said.append("Airflow stopped (" + ", ".join(
                f"{service} {code}" for service, code in codes.items()) + ")")
            self.services = None
        if self.spark is not None:
            self.spark.stop()
            said.append("Spark master and worker stopped")
            self.spark = None
        return said

    # ------------------------------------------------------------------ DAG runs

    def unpause(self, dag_id: str) -> None:
        self.api.request("PATCH", f"/dags/{dag_id}", {"is_paused": False})

    def run_dag(self, dag_id: str, conf: Mapping[str, Any] | None = None, *,
                scheduled: bool = False) -> DagResult:
        """``scheduled``: unpause ``dag_id`` and wait for the run the scheduler starts
        (its default params: ``conf`` must be what they already are); else trigger a run
        with ``conf`` through the REST API."""
        self.api.wait_dags([dag_id])
        if scheduled:
            before = {run["dag_run_id"] for run in self.api.dag_runs(dag_id)}
            self.unpause(dag_id)
            run = wait_for(lambda: next((r for r in self.api.dag_runs(dag_id)
                                         if r["dag_run_id"] not in before
                                         and r["run_type"] == "scheduled"), None),
                           f"the scheduler to start a run of {dag_id}", 120.0)
            run_id = run["dag_run_id"]
            note = f"the scheduler started {run_id} when the DAG was unpaused"
        else:
            self.unpause(dag_id)
            run_id = self.api.trigger(dag_id, conf)
            note = ""
        return self._finish(dag_id, run_id, note)

    def _finish(self, dag_id: str, run_id: str, note: str) -> DagResult:
        seen: dict[str, list[str]] = {}

        def sample(instances: dict[str, dict[str, Any]]) -> None:
            for task_id, instance in instances.items():
                states = seen.setdefault(task_id, [])
                state = instance["state"] or "none"
                if not states or states[-1] != state:
                    states.append(state)

        self.api.wait_run(dag_id, run_id, RUN_TIMEOUT, on_poll=sample,
                          interval=SAMPLE_INTERVAL)
        instances = self.api.task_instances(dag_id, run_id)
        sample(instances)
        returned = {task_id: self.api.xcom_or_none(dag_id, run_id, task_id)
                    for task_id in instances}
        states = {t: i["state"] for t, i in instances.items()}
        failed = [task for task, state in states.items() if state not in ("success", "skipped")]
        problems = task_log_problems(self.home, dag_id, run_id, failed) if failed else ""
        return DagResult(run_id, states, returned, note, seen, problems)

    def pipeline(self, emitted_by: str, bootstrap: str, topic: str) -> DagResult:
        """The ``orders_pipeline`` run the **scheduler** starts on ``emitted_by``'s Asset
        event (the event's ``created_dagruns``); the note says how long after the event it
        started."""
        from airflow_provider.utils.assets import topic_asset_uri

        uri = topic_asset_uri(topic, bootstrap_servers=bootstrap)
        self._topic = topic
        # Started first: Airflow 3.3.2's GET /assets/events answers 500 while a run an
        # event created is still queued (its start_date is null; the model requires one).
        run = wait_for(self._new_pipeline_run, f"the scheduler to start {PIPELINE} on "
                       f"{emitted_by}'s Asset event {uri}", 120.0)
        self._runs_seen.add(run["dag_run_id"])
        events = self.api.get("/assets/events", source_task_id=emitted_by,
                              order_by="-timestamp", limit=20)["asset_events"]
        event = next((e for e in events if e["uri"] == uri and run["dag_run_id"] in
                      {r["run_id"] for r in e["created_dagruns"]}), None)
        if event is None:
            raise RuntimeError(f"{run['dag_run_id']} was not started by an Asset event of "
                               f"{emitted_by} on {uri} (its events: {events})")
        emitted, started = _parse_time(event["timestamp"]), _parse_time(run["start_date"])
        pickup = (started - emitted).total_seconds() if emitted and started else float("nan")
        self.timings.setdefault("asset_event_to_pipeline_run_s", pickup)
        result = self._finish(PIPELINE, run["dag_run_id"], "")
        note = (f"→ Asset event {uri} from {emitted_by}; the scheduler started "
                f"{run['dag_run_id']} {pickup:.1f} s later{self._spark_apps()}")
        return DagResult(result.run_id, result.states, result.returned, note, result.seen)

    def _new_pipeline_run(self) -> dict[str, Any] | None:
        """A started ``asset_triggered`` run of the pipeline not seen before."""
        return next((run for run in self.api.dag_runs(PIPELINE)
                     if run["run_type"] == "asset_triggered" and run.get("start_date")
                     and run["dag_run_id"] not in self._runs_seen), None)

    def _spark_apps(self) -> str:
        """What the standalone master lists of the pipeline's Spark applications: each
        pipeline run so far submitted one, which the master marks FINISHED when its driver
        has gone (a moment after the task ends), so this waits for that, bounded."""
        if self.spark is None or self._topic is None:
            return ""
        spark, self._spark_jobs = self.spark, self._spark_jobs + 1
        name = pipeline_app_name(self._topic)
        seen: list[dict[str, Any]] = []

        def done() -> bool:
            seen[:] = spark.applications()
            return finished_applications(seen, name) >= self._spark_jobs

        try:
            wait_for(done, f"{self._spark_jobs} {name} application(s) FINISHED",
                     SPARK_FINISH_TIMEOUT, interval=0.5)
        except StackError:
            pass  # said below: the count falls short of the runs
        return (f"\n    Spark master {spark.master_url}: "
                f"{finished_applications(seen, name)} of {self._spark_jobs} {name} "
                "application(s) FINISHED")

    def rerun(self, first: DagResult) -> DagResult:
        """Clear ``first`` (*Clear* in the UI): the scheduler runs it again, same run id."""
        self.api.request("POST", f"/dags/{PIPELINE}/clearTaskInstances", {
            "dry_run": False, "dag_run_id": first.run_id, "only_failed": False,
            "reset_dag_runs": True})
        wait_for(lambda: self.api.dag_run(PIPELINE, first.run_id)["state"] != "success",
                 f"{first.run_id} to be cleared", 30.0)
        result = self._finish(PIPELINE, first.run_id, "")
        return DagResult(result.run_id, result.states, result.returned,
                         f"cleared {first.run_id}: the scheduler ran it again"
                         f"{self._spark_apps()}", result.seen)
