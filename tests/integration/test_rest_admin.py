"""``/admin/loggers`` (KIP-495/976), ``/health`` (KIP-1017) and ``/openapi.json`` against a
real worker subprocess.

A level set through the API must change what the worker actually logs: the tests read the
worker's log file for the DEBUG request lines of ``worker.rest``. Health is checked while
the worker is still starting (a command-line connector whose ``start()`` hangs keeps the
CLI busy for the herder's task-config wait) and once it is ready.
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

import httpx
import pytest

from tests.integration._rest_helpers import error_body
from tests.support import WorkerProcess, unique_name, wait_until
from tests.support.connect_api import KAFKA_ENDPOINTS, served_endpoints

pytestmark = pytest.mark.integration

HEALTHY = {"status": "healthy",
           "message": "Worker has completed startup and is ready to handle requests."}




def request_lines(worker: WorkerProcess, probe: str) -> list[str]:
    """DEBUG request-log lines of ``worker.rest`` for ``GET /connectors?probe=<probe>``."""
    pattern = re.compile(rf'DEBUG \S+ "GET /connectors\?probe={probe}" 200 .*\(worker\.rest\)')
    return [line for line in worker.log_tail(100_000).splitlines() if pattern.search(line)]


# --- /admin/loggers -----------------------------------------------------------------------

def test_list_loggers_has_root(client: httpx.Client) -> None:
    response = client.get("/admin/loggers")

    assert response.status_code == 200
    loggers = response.json()
    assert loggers["root"] == {"level": "INFO", "last_modified": None}
    assert list(loggers) == sorted(loggers)


def test_worker_modules_are_loggers(client: httpx.Client) -> None:
    response = client.get("/admin/loggers/worker.runtime.source_task")

    assert response.status_code == 200
    assert response.json() == {"level": "INFO", "last_modified": None}


def test_unknown_logger_is_404(client: httpx.Client) -> None:
    response = client.get("/admin/loggers/no.such.logger")

    assert error_body(response, 404) == "Logger no.such.logger not found."


def test_debug_set_through_the_api_makes_the_worker_log_debug(worker: WorkerProcess,
                                                              client: httpx.Client) -> None:
    client.get("/connectors?probe=before")
    before_ms = int(time.time() * 1000)

    response = client.put("/admin/loggers/worker.rest", json={"level": "DEBUG"})

    assert response.status_code == 200
    assert response.json() == ["worker.rest"]
    client.get("/connectors?probe=debug")
    wait_until(lambda: request_lines(worker, "debug"), timeout=10,
               message="a DEBUG request line from worker.rest in the worker log")
    assert request_lines(worker, "before") == []
    level = client.get("/admin/loggers/worker.rest").json()
    assert level["level"] == "DEBUG"
    assert before_ms <= level["last_modified"] <= int(time.time() * 1000)
    assert client.get("/admin/loggers").json()["worker.rest"] == level

    # Back to INFO: requests are no longer logged (the middleware decides per request).
    assert client.put("/admin/loggers/worker.rest", json={"level": "INFO"}).json() == [
        "worker.rest"]
    client.get("/connectors?probe=info")
    client.put("/admin/loggers/worker.rest", json={"level": "DEBUG"})
    client.get("/connectors?probe=again")
    wait_until(lambda: request_lines(worker, "again"), timeout=10,
               message="the DEBUG request line after re-enabling DEBUG")
    assert request_lines(worker, "info") == []
    client.put("/admin/loggers/worker.rest", json={"level": "INFO"})


def test_namespace_sets_existing_descendants(client: httpx.Client) -> None:
    response = client.put("/admin/loggers/worker.storage", json={"level": "warn"})

    assert response.status_code == 200
    changed = response.json()
    assert "worker.storage" in changed
    assert "worker.storage.sql.database" in changed
    assert all(name == "worker.storage" or name.startswith("worker.storage.")
               for name in changed)
    assert client.get("/admin/loggers/worker.storage.sql.database").json()["level"] == "WARN"
    # Same level again: nothing changes, nothing is reported.
    assert client.put("/admin/loggers/worker.storage", json={"level": "WARN"}).json() == []
    client.put("/admin/loggers/worker.storage", json={"level": "INFO"})


def test_cluster_scope_is_204_and_applies_on_this_worker(client: httpx.Client) -> None:
    name = f"tests.{unique_name('cluster').replace('-', '_')}"

    response = client.put(f"/admin/loggers/{name}?scope=cluster", json={"level": "ERROR"})

    assert response.status_code == 204 and response.content == b""
    assert client.get(f"/admin/loggers/{name}").json()["level"] == "ERROR"


def test_invalid_scope_falls_back_to_worker(client: httpx.Client) -> None:
    name = f"tests.{unique_name('scope').replace('-', '_')}"

    response = client.put(f"/admin/loggers/{name}?scope=galaxy", json={"level": "ERROR"})

    assert response.status_code == 200
    assert response.json() == [name]


def test_level_errors(client: httpx.Client) -> None:
    missing = client.put("/admin/loggers/worker.rest", json={"lvl": "DEBUG"})
    invalid = client.put("/admin/loggers/worker.rest", json={"level": "LOUD"})

    assert error_body(missing, 400) == "Desired 'level' parameter was not specified in request."
    assert error_body(invalid, 404) == "invalid log level 'LOUD'."
    assert client.get("/admin/loggers/worker.rest").json()["level"] == "INFO"


# --- /health ------------------------------------------------------------------------------

def test_health_is_healthy_once_started(client: httpx.Client) -> None:
    response = client.get("/health")

    assert response.status_code == 200
    assert response.json() == HEALTHY


def test_health_is_starting_until_command_line_connectors_are_created(
        standalone_worker: Any, tmp_path: Any) -> None:
    connector = tmp_path / "hanging.json"
    connector.write_text(json.dumps({
        "name": "hanging", "config": {
            "connector.class": "tests.support.plugins.HangingStartConnector"}}))
    # The CLI creates this connector after the REST API is up; the herder waits 5 s for
    # its task configs (start() never returns), and the worker is not ready meanwhile.
    worker: WorkerProcess = standalone_worker(connector_files=[connector], start=False)
    worker.start(healthy=False)  # returns as soon as REST answers, before it is ready

    response = worker.client.get("/health")

    assert response.status_code == 503
    assert response.json() == {"status": "starting", "message": "Worker is still starting up."}
    wait_until(lambda: worker.client.get("/health").status_code == 200, timeout=30,
               message="the worker to become healthy")
    assert worker.client.get("/health").json() == HEALTHY


# --- OpenAPI ------------------------------------------------------------------------------

def test_openapi_lists_every_kafka_connect_endpoint(client: httpx.Client) -> None:
    response = client.get("/openapi.json")

    assert response.status_code == 200
    spec = response.json()
    assert spec["openapi"].startswith("3.")
    assert sorted(KAFKA_ENDPOINTS - served_endpoints(spec)) == []
