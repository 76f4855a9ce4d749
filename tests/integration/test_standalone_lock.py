"""One standalone worker per state database (issue #42): a second worker started on the
first one's ``storage.sql.url`` exits at once, naming the first, and the first runs on
untouched; a worker killed with SIGKILL leaves no lock behind."""

from __future__ import annotations

import pytest

from tests.conftest import StandaloneWorkerFactory
from tests.support import WorkerProcess, unique_name, wait_for_connector_state, wait_until
from worker.testing import free_port

pytestmark = pytest.mark.integration

#: An idle source of the test plugins: RUNNING at once, nothing to read or write.
IDLE_SOURCE = "tests.support.plugins.NoHookSourceConnector"
#: Well under the 30 s a worker waits for an absent broker (CLUSTER_ID_TIMEOUT_S).
REFUSAL_S = 20.0


def state_url(worker: WorkerProcess) -> str:
    return f"sqlite:///{worker.props_file.parent / 'connect.db'}"


def create_idle_source(worker: WorkerProcess) -> str:
    name = unique_name("idle")
    response = worker.client.post("/connectors", json={
        "name": name, "config": {"connector.class": IDLE_SOURCE, "tasks.max": "1"}})
    assert response.status_code == 201, response.text
    wait_for_connector_state(worker.client, name, "RUNNING", "RUNNING", timeout=30)
    return name


def test_second_worker_on_the_same_database_refuses_and_the_first_runs_on(
        standalone_worker: StandaloneWorkerFactory) -> None:
    first = standalone_worker()
    name = create_idle_source(first)
    before = first.client.get(f"/connectors/{name}/status").json()

    # Its broker does not exist: a worker that reached for Kafka before the lock would
    # wait CLUSTER_ID_TIMEOUT_S (30 s) and fail with "Could not reach Kafka" instead.
    second = standalone_worker({"storage.sql.url": state_url(first),
                                "bootstrap.servers": f"127.0.0.1:{free_port()}"},
                               start=False)
    second.launch()
    wait_until(lambda: not second.is_running, timeout=REFUSAL_S,
               message=lambda: f"the second worker to exit; its log:\n{second.log_tail()}")
    assert second.returncode == 1
    log = second.log_tail(400)
    errors = [line for line in log.splitlines() if " ERROR " in line]
    assert len(errors) == 1, log
    assert (f"The state database {state_url(first)} is in use by another standalone worker "
            f"(PID {first.pid}, REST {first.url}, since ") in errors[0]
    assert "set storage.sql.url (or offset.storage.file.filename) to another file" in errors[0]
    assert "Traceback" not in log
    # It stopped before anything else: no storage opened, no listener bound.
    assert "SQL storage opened" not in log and "REST server listening" not in log

    assert first.is_running
    assert first.client.get("/health").status_code == 200
    after = first.client.get(f"/connectors/{name}/status").json()
    assert after == before  # same states, same worker id: nothing restarted it
    assert after["connector"]["state"] == "RUNNING"


def test_worker_killed_with_sigkill_leaves_no_lock(
        standalone_worker: StandaloneWorkerFactory) -> None:
    first = standalone_worker()
    name = create_idle_source(first)
    first.kill()

    successor = standalone_worker({"storage.sql.url": state_url(first)})
    status = wait_for_connector_state(successor.client, name, "RUNNING", "RUNNING",
                                      timeout=30)
    assert status["connector"]["worker_id"].endswith(successor.url.rsplit(":", 1)[1])
