"""Airflow 3 as a deployment runs it, on one machine: ``api-server``, ``scheduler``,
``dag-processor`` and ``triggerer`` as separate processes on loopback, for
``python -m dags.demo --airflow`` and ``tests/integration/test_airflow_processes.py``.

* Metadata database: SQLite (Airflow 3 accepts it with the LocalExecutor), in
  write-ahead-log mode so that the four processes' writes do not lock each other's reads.
* Executor: ``LocalExecutor``. Task processes reach the metadata database only through the
  API server's Execution API (``[core] execution_api_server_url``), as in any Airflow 3
  deployment; every process shares one JWT secret so the tokens the scheduler issues are
  accepted there.
* Login: the simple auth manager with one ``admin`` user whose random password is written
  to ``passwords.json`` in the Airflow home (mode 0600) and returned by :attr:`login`.
* DAGs: the bundles given (the repository's ``dags/`` folder by default), re-scanned every
  few seconds so a DAG file dropped in is picked up quickly.

Every process logs to its own file under ``log_dir``; each wait has a deadline and its
error names the log to read. :class:`AirflowApi` is a small client of the public REST API
(``/api/v2``) with the token of that login.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

from dags.demo.stack import wait_for
from worker.testing import free_port
from worker.testing.processes import log_tail

#: The processes :meth:`AirflowServices.start` runs, in start order.
SERVICES = ("api-server", "dag-processor", "scheduler", "triggerer")
#: ``/api/v2/monitor/health`` components that must report ``healthy``.
HEALTH_COMPONENTS = ("metadatabase", "scheduler", "triggerer", "dag_processor")
LOCAL_BUNDLE = "airflow.dag_processing.bundles.local.LocalDagBundle"
USER = "admin"
POLL_INTERVAL = 0.2
#: A loaded scheduler was seen to handle its first SIGTERM only after 20 s (its main loop
#: busy), then not to finish within the second signal's wait: give it room before a kill.
STOP_TIMEOUT = 45.0
SECOND_SIGNAL_WAIT = 10.0


class AirflowServicesError(RuntimeError):
    """An Airflow process did not start, died, or did not do its part in time."""


@dataclass(frozen=True)
class DagBundle:
    """A folder of DAG files Airflow parses (a ``LocalDagBundle``)."""

    name: str
    path: Path


@dataclass
class AirflowServices:
    """The four Airflow processes over one home directory; :meth:`start`, :meth:`stop`."""

    home: Path
    bundles: Sequence[DagBundle]
    #: Extra environment for every process (connections, the DAG files' settings).
    env: Mapping[str, str] = field(default_factory=dict)
    log_dir: Path | None = None
    startup_timeout: float = 180.0
    parallelism: int = 4
    port: int = 0
    password: str = ""
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def login(self) -> tuple[str, str]:
        return USER, self.password

    def logs(self) -> Path:
        return self.log_dir or self.home / "logs"

    def log_path(self, service: str) -> Path:
        return self.logs() / f"airflow-{service}.log"

    # ------------------------------------------------------------------ environment

    def environment(self) -> dict[str, str]:
        """The environment every Airflow process (and every task it runs) gets."""
        bundles = [{"name": b.name, "classpath": LOCAL_BUNDLE,
                    "kwargs": {"path": str(b.path), "refresh_interval": 5}}
                   for b in self.bundles]
        return {
            **os.environ,
            "AIRFLOW_HOME": str(self.home),
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{self.home / 'airflow.db'}",
            "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
            "AIRFLOW__CORE__PARALLELISM": str(self.parallelism),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
            "AIRFLOW__CORE__DAGS_FOLDER": str(self.bundles[0].path),
            "AIRFLOW__DAG_PROCESSOR__DAG_BUNDLE_CONFIG_LIST": json.dumps(bundles),
            "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "5",
            "AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL": "30",
            "AIRFLOW__DAG_PROCESSOR__PARSING_PROCESSES": "1",
            "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{self.url}/execution/",
            "AIRFLOW__API__BASE_URL": self.url,
            "AIRFLOW__API_AUTH__JWT_SECRET": self._secret("jwt"),
            "AIRFLOW__API__SECRET_KEY": self._secret("session"),
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{USER}:admin",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(self._passwords_file()),
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "False",
            "AIRFLOW__LOGGING__BASE_LOG_FOLDER": str(self.home / "task-logs"),
            "AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "2",
            "AIRFLOW__TRIGGERER__JOB_HEARTBEAT_SEC": "2",
            "SCARF_ANALYTICS": "false",
            "DO_NOT_TRACK": "true",
            **self.env,
        }

    def _secret(self, name: str) -> str:
        """A random secret kept in the home (mode 0600), the same for every process."""
        path = self.home / f".{name}-secret"
        if not path.exists():
            path.write_text(secrets.token_urlsafe(32), encoding="utf-8")
            path.chmod(0o600)
        return path.read_text(encoding="utf-8").strip()

    def _passwords_file(self) -> Path:
        return self.home / "passwords.json"

    # ------------------------------------------------------------------ life cycle

    def start(self) -> AirflowServices:
        """Migrate the database, start the four processes, wait until all are healthy."""
        self.home.mkdir(parents=True, exist_ok=True)
        self.logs().mkdir(parents=True, exist_ok=True)
        self.port = self.port or free_port()
        self.password = self.password or secrets.token_urlsafe(12)
        passwords = self._passwords_file()
        passwords.write_text(json.dumps({USER: self.password}) + "\n", encoding="utf-8")
        passwords.chmod(0o600)
        self._migrate()
        try:
            for service in SERVICES:
                self.start_service(service)
            self.wait_healthy()
        except BaseException:
            self.stop()
            raise
        return self

    def _migrate(self) -> None:
        log = self.log_path("db-migrate")
        with log.open("ab") as out:
            result = subprocess.run([sys.executable, "-m", "airflow", "db", "migrate"],
                                    env=self.environment(), stdout=out,
                                    stderr=subprocess.STDOUT, timeout=self.startup_timeout,
                                    check=False)
        if result.returncode != 0:
            raise AirflowServicesError(f"airflow db migrate failed ({result.returncode}):\n"
                                       f"{log_tail(log, 40)}")
        # WAL: readers do not wait for writers (the setting is kept in the file).
        with sqlite3.connect(self.home / "airflow.db") as db:
            db.execute("PRAGMA journal_mode=WAL")

    def command(self, service: str) -> list[str]:
        args = [sys.executable, "-m", "airflow", service]
        if service == "api-server":
            args += ["--host", "127.0.0.1", "--port", str(self.port), "--workers", "1"]
        return args

    def start_service(self, service: str) -> None:
        """Start one of :data:`SERVICES` (its own process group, its own log)."""
        if (running := self.processes.get(service)) and running.poll() is None:
            raise AirflowServicesError(f"airflow {service} is already running")
        with self.log_path(service).open("ab") as log:
            self.processes[service] = subprocess.Popen(
                self.command(service), env=self.environment(), stdout=log,
                stderr=subprocess.STDOUT, start_new_session=True)

    def stop_service(self, service: str, timeout: float = STOP_TIMEOUT) -> int | None:
        """Stop one service (see :meth:`_stop_all`); returns its exit code."""
        return self._stop_all([service], timeout).get(service)

    def _stop_all(self, services: Sequence[str], timeout: float) -> dict[str, int | None]:
        """SIGTERM to each of ``services`` at once (to the process itself: it stops its
        children; the scheduler waits for running tasks), a second SIGTERM after
        ``timeout`` (Airflow's "signal again if you don't want to wait"), then SIGKILL to
        whatever is left of its process group."""
        stopping = {s: p for s in services if (p := self.processes.pop(s, None)) is not None}
        for process in stopping.values():
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for process in stopping.values():
            try:
                process.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(SECOND_SIGNAL_WAIT)
                except subprocess.TimeoutExpired:
                    _signal_group(process, signal.SIGKILL)
                    process.wait(10)
            _signal_group(process, signal.SIGKILL)  # children left behind, if any
        return {service: process.returncode for service, process in stopping.items()}

    def restart_service(self, service: str) -> None:
        self.stop_service(service)
        self.start_service(service)
        self.wait_healthy()

    def stop(self) -> dict[str, int | None]:
        """Stop every process, the API server last (tasks report through it)."""
        codes = self._stop_all([s for s in reversed(SERVICES) if s != "api-server"],
                               STOP_TIMEOUT)
        return {**codes, **self._stop_all(["api-server"], STOP_TIMEOUT)}

    def __enter__(self) -> AirflowServices:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ readiness

    def check_alive(self) -> None:
        for service, process in self.processes.items():
            if process.poll() is not None:
                raise AirflowServicesError(
                    f"airflow {service} exited ({process.returncode}); "
                    f"{self.log_path(service)}:\n{log_tail(self.log_path(service), 40)}")

    def health(self) -> dict[str, Any]:
        """``/api/v2/monitor/health`` (no login needed), ``{}`` while it cannot answer."""
        try:
            response = httpx.get(f"{self.url}/api/v2/monitor/health", timeout=5)
        except httpx.TransportError:
            return {}
        return response.json() if response.status_code == 200 else {}

    def wait_healthy(self, timeout: float | None = None) -> None:
        """Until the API server answers and reports every component healthy."""
        def healthy() -> bool:
            self.check_alive()
            report = self.health()
            return bool(report) and all(
                (report.get(part) or {}).get("status") == "healthy"
                for part in HEALTH_COMPONENTS)

        wait_for(healthy, "Airflow's processes to report healthy",
                 timeout or self.startup_timeout, detail=lambda: json.dumps(self.health()))

    def api(self) -> AirflowApi:
        return AirflowApi(self.url, self.login, check=self.check_alive)


def _signal_group(process: subprocess.Popen[bytes], signum: int) -> None:
    try:
        os.killpg(process.pid, signum)
    except (ProcessLookupError, PermissionError):
        pass


TERMINAL_RUN_STATES = ("success", "failed")


class AirflowApi:
    """Airflow's public REST API (``/api/v2``) as the ``admin`` user."""

    def __init__(self, url: str, login: tuple[str, str],
                 check: Callable[[], None] | None = None) -> None:
        self.url = url
        self._check = check or (lambda: None)
        response = httpx.post(f"{url}/auth/token", timeout=30,
                              json={"username": login[0], "password": login[1]})
        if response.status_code not in (200, 201):
            raise AirflowServicesError(f"login to {url} failed: HTTP {response.status_code} "
                                       f"{response.text[:300]}")
        token = response.json()["access_token"]
        self.client = httpx.Client(base_url=f"{url}/api/v2", timeout=30,
                                   headers={"Authorization": f"Bearer {token}"})

    def close(self) -> None:
        self.client.close()

    def get(self, path: str, **params: Any) -> Any:
        response = self.client.get(path, params=params or None)
        if response.status_code != 200:
            raise AirflowServicesError(f"GET {path}: HTTP {response.status_code} "
                                       f"{response.text[:500]}")
        return response.json()

    def request(self, method: str, path: str, body: Any) -> Any:
        response = self.client.request(method, path, json=body)
        if response.status_code not in (200, 201):
            raise AirflowServicesError(f"{method} {path}: HTTP {response.status_code} "
                                       f"{response.text[:500]}")
        return response.json()

    # ------------------------------------------------------------------ DAGs and runs

    def import_errors(self) -> list[dict[str, Any]]:
        return list(self.get("/importErrors")["import_errors"])

    def wait_dags(self, dag_ids: Sequence[str], timeout: float = 180.0) -> None:
        """Until the dag-processor has parsed and stored every one of ``dag_ids``."""
        def parsed() -> bool:
            self._check()
            if errors := self.import_errors():
                raise AirflowServicesError(f"DAG files failed to import: {errors}")
            known = {dag["dag_id"] for dag in self.get("/dags", limit=100)["dags"]}
            return set(dag_ids) <= known

        wait_for(parsed, f"the dag-processor to parse {sorted(dag_ids)}", timeout)

    def trigger(self, dag_id: str, conf: Mapping[str, Any] | None = None) -> str:
        """Trigger a run of ``dag_id`` (as *Trigger DAG* in the UI); returns its run id."""
        body = self.request("POST", f"/dags/{quote(dag_id)}/dagRuns",
                            {"logical_date": None, "conf": dict(conf or {})})
        return str(body["dag_run_id"])

    def dag_run(self, dag_id: str, run_id: str) -> dict[str, Any]:
        return dict(self.get(f"/dags/{quote(dag_id)}/dagRuns/{quote(run_id, safe='')}"))

    def dag_runs(self, dag_id: str) -> list[dict[str, Any]]:
        """Runs of ``dag_id``, oldest first."""
        body = self.get(f"/dags/{quote(dag_id)}/dagRuns", order_by="id", limit=100)
        return list(body["dag_runs"])

    def task_instances(self, dag_id: str, run_id: str) -> dict[str, dict[str, Any]]:
        body = self.get(f"/dags/{quote(dag_id)}/dagRuns/{quote(run_id, safe='')}"
                        "/taskInstances")
        return {ti["task_id"]: ti for ti in body["task_instances"]}

    def xcom_or_none(self, dag_id: str, run_id: str, task_id: str,
                     key: str = "return_value") -> Any:
        """The task's XCom ``key`` (its return value), ``None`` when there is none."""
        response = self.client.get(
            f"/dags/{quote(dag_id)}/dagRuns/{quote(run_id, safe='')}/taskInstances/"
            f"{quote(task_id)}/xcomEntries/{quote(key)}",
            params={"deserialize": "true", "stringify": "false"})
        if response.status_code == 404:
            return None
        if response.status_code != 200:
            raise AirflowServicesError(f"XCom of {dag_id}.{task_id}: HTTP "
                                       f"{response.status_code} {response.text[:300]}")
        return response.json()["value"]

    def wait_run(self, dag_id: str, run_id: str, timeout: float = 300.0,
                 on_poll: Callable[[dict[str, dict[str, Any]]], None] | None = None,
                 interval: float = POLL_INTERVAL) -> dict[str, Any]:
        """Until the run is ``success`` or ``failed``; ``on_poll`` sees the task instances
        at every poll (to record the states they pass through)."""
        def finished() -> dict[str, Any] | None:
            self._check()
            if on_poll is not None:
                on_poll(self.task_instances(dag_id, run_id))
            run = self.dag_run(dag_id, run_id)
            return run if run["state"] in TERMINAL_RUN_STATES else None

        def states() -> str:
            instances = self.task_instances(dag_id, run_id)
            return json.dumps({task: ti["state"] for task, ti in instances.items()})

        return dict(wait_for(finished, f"{dag_id} run {run_id} to finish", timeout,
                             interval=interval, detail=states))
