"""Connector code that hangs or fails must not take down the worker, its REST API or its
shutdown (docs/architecture.md §4, §8)."""

from __future__ import annotations

import time

import pytest

from tests.support import create_topic, unique_name, wait_for_connector_state, wait_until

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


@pytest.mark.integration
def test_sink_stops_at_a_poison_record_with_everything_before_it_committed(
        worker, kafka_bootstrap: str, kafka_admin, tmp_path) -> None:
    """A record the converter rejects (errors.tolerance=none) fails the task; the records
    before it in the same batch are delivered and committed, the trace names its offset, so
    moving the group offset one past it skips that record and nothing else."""
    from confluent_kafka import Producer

    client = worker.client
    topic = create_topic(kafka_admin, unique_name("poison"))
    values = [b'{"n": 0}', b'{"n": 1}', b'{"n": 2}', b"not json", b'{"n": 4}', b'{"n": 5}']
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    for value in values:  # one batch: the poison record sits in the middle of a poll
        producer.produce(topic, value, partition=0)
    assert producer.flush(30) == 0

    out = tmp_path / "sink.txt"
    response = client.put("/connectors/poisoned/config", json={
        "connector.class": "FileStreamSink", "topics": topic, "file": str(out),
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "false"})
    assert response.status_code == 201, response.text
    status = wait_for_connector_state(client, "poisoned", "RUNNING", tasks_state="FAILED")
    trace = status["tasks"][0]["trace"]
    assert f"Tolerance exceeded in error handler: converting or transforming the record at " \
           f"offset 3 of {topic}-0 failed" in trace
    assert out.read_text().splitlines() == ["{'n': 0}", "{'n': 1}", "{'n': 2}"]
    partition = {"kafka_topic": topic, "kafka_partition": 0}
    assert client.get("/connectors/poisoned/offsets").json() == {
        "offsets": [{"partition": partition, "offset": {"kafka_offset": 3}}]}

    # Skip it: stop, move the offset one past it, resume.
    assert client.put("/connectors/poisoned/stop").status_code == 204
    wait_for_connector_state(client, "poisoned", "STOPPED")
    response = client.patch("/connectors/poisoned/offsets", json={
        "offsets": [{"partition": partition, "offset": {"kafka_offset": 4}}]})
    assert response.status_code == 200, response.text
    assert client.put("/connectors/poisoned/resume").status_code == 202
    wait_for_connector_state(client, "poisoned", "RUNNING", tasks_state="RUNNING")
    wait_until(lambda: len(out.read_text().splitlines()) == 5, timeout=60,
               message=lambda: f"the sink to write the records after the poison one: "
                               f"{out.read_text()!r}")
    assert out.read_text().splitlines()[3:] == ["{'n': 4}", "{'n': 5}"]
