"""An isolated Airflow for the test session: its own AIRFLOW_HOME and SQLite database.

:func:`configure` must run before anything imports ``airflow`` (Airflow reads its
configuration at import), so ``tests/conftest.py`` calls it at import time. The database
is migrated once, on first use, by the ``airflow_db`` fixture.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

_HOME_ENV = "CONNECT_PLANE_TEST_AIRFLOW_HOME"
_OWNER_ENV = "CONNECT_PLANE_TEST_AIRFLOW_OWNER"


def _owner() -> str:
    """The pytest process this is: an xdist worker's id, or the process id."""
    return os.environ.get("PYTEST_XDIST_WORKER") or f"pid-{os.getpid()}"


def configure() -> Path:
    """Point Airflow at a fresh temporary home (never the developer's ``~/airflow``).

    Each pytest process gets its own: xdist workers inherit the controller's environment,
    and a home they shared would be migrated by both and deleted by whichever finished
    first, under the other's running tests."""
    if (existing := os.environ.get(_HOME_ENV)) and os.environ.get(_OWNER_ENV) == _owner():
        return Path(existing)
    home = Path(tempfile.mkdtemp(prefix="connect-plane-airflow-"))
    os.environ[_HOME_ENV] = str(home)
    os.environ[_OWNER_ENV] = _owner()
    os.environ["AIRFLOW_HOME"] = str(home)
    os.environ["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"] = f"sqlite:///{home}/airflow.db"
    os.environ["AIRFLOW__CORE__LOAD_EXAMPLES"] = "False"
    os.environ["AIRFLOW__CORE__DAGS_FOLDER"] = str(home / "dags")
    os.environ["AIRFLOW__CORE__UNIT_TEST_MODE"] = "False"
    # Unpaused, as in a deployment where they are switched on: Asset events then queue
    # runs of the DAGs scheduled on them (no scheduler runs here to start those).
    os.environ["AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION"] = "False"
    # Tests start nothing but dag.test(); keep Airflow from phoning home or logging noise.
    os.environ["AIRFLOW__CORE__ALLOWED_DESERIALIZATION_CLASSES_REGEXP"] = r"airflow\..*"
    os.environ.setdefault("SCARF_ANALYTICS", "false")
    os.environ.setdefault("DO_NOT_TRACK", "true")
    return home


def migrate(timeout: float = 300.0) -> None:
    """Create the Airflow schema in the session's SQLite database (idempotent)."""
    result = subprocess.run([sys.executable, "-m", "airflow", "db", "migrate"],
                            env=dict(os.environ), capture_output=True, text=True,
                            timeout=timeout, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"airflow db migrate failed:\n{result.stdout}\n{result.stderr}")


def cleanup() -> None:
    """Delete this process's home (never one another process configured)."""
    if (home := os.environ.get(_HOME_ENV)) and os.environ.get(_OWNER_ENV) == _owner():
        shutil.rmtree(home, ignore_errors=True)


def connection_env(conn_id: str, *, host: str, extra: Mapping[str, Any] | None = None,
                   login: str | None = None, password: str | None = None) -> dict[str, str]:
    """The ``AIRFLOW_CONN_<ID>`` variable defining a ``kafka_connect`` connection."""
    spec: dict[str, Any] = {"conn_type": "kafka_connect", "host": host,
                            "extra": dict(extra or {})}
    if login is not None:
        spec["login"] = login
    if password is not None:
        spec["password"] = password
    return {f"AIRFLOW_CONN_{conn_id.upper()}": json.dumps(spec)}
