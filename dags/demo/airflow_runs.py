"""Airflow for ``make demo``: its own home and SQLite database, the repository's ``dags/``
folder, and DAG runs through ``dag.test()`` — the way the tests run them.

:func:`configure` sets the environment and must run before anything imports ``airflow``.
No scheduler runs: where a scheduler would start a run queued by an Asset event
(``airflow_provider.testing.queued_asset_runs`` shows it), :class:`DagTestAirflow` starts
it with :func:`run_dag` and says so. ``python -m dags.demo --airflow`` runs the same story
on Airflow's own processes instead (``dags/demo/live_airflow.py``).
"""

from __future__ import annotations

import datetime
import functools
import json
import os
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dags.demo.stack import Stack

DAGS_FOLDER = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class DagResult:
    """A finished DAG run: its id, ``{task_id: state}`` and each task's return value;
    ``note``: what the story says about how the run came about (or ``""``); ``seen``:
    every state each task was seen in, in order (real processes only)."""

    run_id: str
    states: dict[str, str | None]
    returned: dict[str, Any]
    note: str = ""
    seen: dict[str, list[str]] = field(default_factory=dict)
    #: For a run that did not succeed: the warnings and errors its failed tasks logged.
    problems: str = ""

    @property
    def succeeded(self) -> bool:
        """Every task succeeded or was skipped (by a short circuit), as a successful run."""
        return all(state in ("success", "skipped") for state in self.states.values())


def configure(home: Path, *, connect_url: str, bootstrap: str, output: Path,
              tls_dir: Path) -> None:
    """Environment of the demo's Airflow: home, database, DAG folder, the two connections
    the example DAGs use (the Kafka Connect one trusting the demo CA,
    ``tls_dir/ca.pem``) and the settings ``dags/orders_pipeline.py`` and
    ``dags/kafka_connect_certificate_rotation.py`` read."""
    home.mkdir(parents=True, exist_ok=True)
    venv_bin = str(Path(sys.executable).parent)
    os.environ.update({
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / 'airflow.db'}",
        "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS_FOLDER),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
        "SCARF_ANALYTICS": "false",
        "DO_NOT_TRACK": "true",
        "AIRFLOW_CONN_KAFKA_CONNECT_DEFAULT": json.dumps({
            "conn_type": "kafka_connect", "host": connect_url,
            "extra": {"bootstrap_servers": bootstrap, "ca_bundle": str(tls_dir / "ca.pem")}}),
        "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[2]"}),
        "CONNECT_PLANE_KAFKA_BOOTSTRAP": bootstrap,
        "CONNECT_PLANE_PIPELINE_OUTPUT": str(output),
        "CONNECT_PLANE_TLS_DIR": str(tls_dir),
        # SparkSubmitOperator runs `spark-submit` from PATH: this virtualenv's (pyspark).
        "PATH": f"{venv_bin}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYSPARK_PYTHON": sys.executable,
    })
    # The demo's Spark jobs are a few seconds of work: the driver JVM starts ~2 s sooner
    # per job with the client JIT compiler alone and the serial collector (user settings
    # win).
    os.environ.setdefault("SPARK_SUBMIT_OPTS", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")


def migrate(timeout: float = 300.0) -> None:
    """``airflow db migrate`` into the demo's SQLite database."""
    result = subprocess.run([sys.executable, "-m", "airflow", "db", "migrate"],
                            capture_output=True, text=True, timeout=timeout, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"airflow db migrate failed:\n{result.stdout[-3000:]}\n"
                           f"{result.stderr[-3000:]}")


@functools.cache
def _bag() -> Any:
    """The DAG folder, parsed once (after :func:`configure`: DAG files read the environment)."""
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(str(DAGS_FOLDER))
    if bag.import_errors:
        raise RuntimeError(f"DAG files failed to import: {bag.import_errors}")
    return bag


def task_log_problems(home: Path, dag_id: str, run_id: str, task_ids: list[str], *,
                      limit: int = 20) -> str:
    """The warnings and errors that ``task_ids`` logged in ``run_id`` (every attempt and
    its trigger logs, from ``<home>/task-logs``), last ``limit`` lines per task, with the
    exception of an error record when it has one: what a failed run's report shows."""
    lines: list[str] = []
    for task_id in task_ids:
        folder = (home / "task-logs" / f"dag_id={dag_id}" / f"run_id={run_id}"
                  / f"task_id={task_id}")
        found: list[str] = []
        for log in sorted(folder.glob("attempt=*.log*")):
            for raw in log.read_text(encoding="utf-8", errors="replace").splitlines():
                try:
                    record = json.loads(raw)
                except json.JSONDecodeError:
                    continue
                if not isinstance(record, dict) or record.get("level") not in (
                        "warning", "error", "critical"):
                    continue
                found.append(f"{log.name} {record.get('timestamp', '')} {record['level']}: "
                             f"{record.get('event', '')}")
                for exc in record.get("error_detail") or []:
                    if isinstance(exc, dict):
                        found.append(f"    {exc.get('exc_type')}: {exc.get('exc_value')}")
        lines.append(f"  {task_id}: " + (f"{len(found)} warning/error line(s)" if found
                                          else f"no warning or error logged in {folder}"))
        lines.extend(f"    {line}" for line in found[-limit:])
    return "\n".join(lines)


def _dag(dag_id: str) -> Any:
    dag = _bag().get_dag(dag_id)
    if dag is None:
        raise RuntimeError(f"no DAG {dag_id!r} in {DAGS_FOLDER}")
    return dag


def run_dag(dag_id: str, *, conf: Mapping[str, Any] | None = None,
            when: datetime.datetime | None = None) -> DagResult:
    """Run ``dag_id`` with ``dag.test()``. With ``when``, the run is ``manual__<when>``,
    and running it again clears and re-runs that same run ("Clear" in the UI)."""
    from airflow_provider.testing import task_states, xcom

    dag = _dag(dag_id)
    if when is None:
        dag_run = dag.test(run_conf=dict(conf or {}))
    else:
        dag_run = dag.test(run_after=when, logical_date=when, run_conf=dict(conf or {}))
    states = task_states(dag_run)
    return DagResult(dag_run.run_id, states,
                     {task_id: xcom(dag_run, task_id) for task_id in states})


PIPELINE = "orders_pipeline"
#: The pipeline's first run (its run id is manual__<this>); later runs an hour apart.
FIRST_RUN = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)


class DagTestAirflow:
    """The story's Airflow through ``dag.test()``: no scheduler, so the demo starts the
    pipeline runs that Asset events queue, and says so."""

    def __init__(self, directory: Path) -> None:
        self.home = directory / "airflow"
        self._runs: dict[str, datetime.datetime] = {}
        self.timings: dict[str, float] = {}  # nothing measured: no real processes

    def describe(self) -> str:
        return f"Airflow (SQLite in {self.home}, DAGs from {DAGS_FOLDER})"

    def start(self, stack: Stack, output: Path) -> list[str]:
        configure(self.home, connect_url=stack.url, bootstrap=stack.bootstrap,
                  output=output, tls_dir=stack.tls_dir)
        migrate()
        return []

    def run_dag(self, dag_id: str, conf: Mapping[str, Any] | None = None, *,
                scheduled: bool = False) -> DagResult:
        """Run ``dag_id`` now (``scheduled``: the run its schedule would start, with the
        DAG's default params — ``dag.test()`` runs that the same way)."""
        return run_dag(dag_id, conf=conf)

    def pipeline(self, emitted_by: str, bootstrap: str, topic: str) -> DagResult:
        """The ``orders_pipeline`` run that ``emitted_by``'s Asset event queued: checked
        to be queued, then run with ``dag.test()``."""
        from airflow_provider.testing import asset_events, queued_asset_runs
        from airflow_provider.utils.assets import topic_asset_uri

        uri = topic_asset_uri(topic, bootstrap_servers=bootstrap)
        events, queued = asset_events(uri), queued_asset_runs(PIPELINE)
        if not events or events[-1]["source_task_id"] != emitted_by or uri not in queued:
            raise RuntimeError(f"{emitted_by} did not emit the Asset event {uri} that "
                               f"schedules {PIPELINE} (events: {events}, queued: {queued})")
        when = FIRST_RUN + datetime.timedelta(hours=len(self._runs))
        result = run_dag(PIPELINE, when=when)
        self._runs[result.run_id] = when
        note = (f"→ Asset event {uri} from {emitted_by}: Airflow queued a run of {PIPELINE}"
                "\n    (no scheduler runs in the demo: it starts that run itself)")
        return DagResult(result.run_id, result.states, result.returned, note)

    def rerun(self, first: DagResult) -> DagResult:
        """``first`` cleared and run again (same run id)."""
        return run_dag(PIPELINE, when=self._runs[first.run_id])

    def ui(self) -> list[str]:
        return []

    def stop(self) -> list[str]:
        return []
