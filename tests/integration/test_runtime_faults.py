"""Connector code that hangs or fails must not take down the worker, its REST API or its
shutdown (DESIGN.md §3, §7)."""

from __future__ import annotations

import time

import pytest

from tests.support import wait_for_connector_state, wait_until

PLUGINS = "tests.support.plugins"
GRACEFUL_MS = 1000


@pytest.fixture
def worker(standalone_worker):
    return standalone_worker({"task.shutdown.graceful.timeout.ms": GRACEFUL_MS})


def _timed(fn):  # type: ignore[no-untyped-def]
    started = time.monotonic()
    result = fn()
    return result, time.monotonic() - started


@pytest.mark.integration
def test_hanging_connector_start_does_not_block_rest_or_shutdown(worker, unique_topic) -> None:
    client = worker.client
    response = client.post("/connectors", json={
        "name": "hangs-in-start",
        "config": {"connector.class": f"{PLUGINS}.HangingStartConnector"}})
    assert response.status_code == 201, response.text

    # The REST API keeps answering and other connectors still start.
    response, elapsed = _timed(lambda: client.get("/connectors/hangs-in-start/status"))
    assert response.status_code == 200
    assert response.json()["connector"]["state"] == "UNASSIGNED"
    assert response.json()["tasks"] == []
    assert elapsed < 2.0
    response = client.put("/connectors/healthy/config", json={
        "connector.class": "SequenceGenerator", "topic": unique_topic("gen"), "rate": "10"})
    assert response.status_code == 201, response.text
    wait_for_connector_state(client, "healthy", "RUNNING", tasks_state="RUNNING")

    # Deleting the hung connector abandons its thread after the graceful timeout.
    response, elapsed = _timed(lambda: client.delete("/connectors/hangs-in-start"))
    assert response.status_code == 204
    assert elapsed < GRACEFUL_MS / 1000 + 5
    assert client.get("/connectors").json() == ["healthy"]

    _, elapsed = _timed(worker.stop)
    assert worker.returncode == 0
    assert elapsed < 15


@pytest.mark.integration
def test_task_ignoring_stop_is_abandoned(worker) -> None:
    client = worker.client
    response = client.put("/connectors/hangs-in-poll/config", json={
        "connector.class": f"{PLUGINS}.HangingPollConnector"})
    assert response.status_code == 201
    wait_for_connector_state(client, "hangs-in-poll", "RUNNING", tasks_state="RUNNING")

    # Stopping the task (here: deleting the connector) waits at most the graceful timeout.
    response, elapsed = _timed(lambda: client.delete("/connectors/hangs-in-poll"))
    assert response.status_code == 204
    assert elapsed < GRACEFUL_MS / 1000 + 5
    assert "did not stop within" in worker.log_tail(200)

    response, elapsed = _timed(lambda: client.get("/"))
    assert response.status_code == 200 and elapsed < 2.0
    _, elapsed = _timed(worker.stop)
    assert worker.returncode == 0
    assert elapsed < 15


@pytest.mark.integration
def test_failing_task_goes_failed_with_trace_and_restarts(worker) -> None:
    client = worker.client
    response = client.put("/connectors/fails/config", json={
        "connector.class": f"{PLUGINS}.FailingPollConnector", "tasks.max": "2"})
    assert response.status_code == 201
    status = wait_for_connector_state(client, "fails", "RUNNING", tasks_state="FAILED",
                                      task_count=2)
    for task in status["tasks"]:
        assert "injected poll failure" in task["trace"]
        assert "Traceback" in task["trace"]

    # Restart only the failed tasks: 202 with the tasks RESTARTING, the connector untouched.
    response = client.post("/connectors/fails/restart",
                           params={"includeTasks": "true", "onlyFailed": "true"})
    assert response.status_code == 202
    body = response.json()
    assert body["connector"]["state"] == "RUNNING"
    assert [t["state"] for t in body["tasks"]] == ["RESTARTING", "RESTARTING"]
    wait_until(lambda: [t["state"] for t in
                        client.get("/connectors/fails/status").json()["tasks"]]
               == ["FAILED", "FAILED"], timeout=30, message="tasks did not fail again")
    assert client.get("/").status_code == 200
