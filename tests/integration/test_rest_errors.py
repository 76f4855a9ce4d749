"""Bad input to ``/connectors`` on a real worker: Kafka Connect 4.x status codes, the
``{"error_code", "message"}`` body with a message naming the problem, and no trace of the
rejected request in storage (docs/architecture.md §8).

One worker serves the module. It holds one healthy connector, ``baseline``; every test
snapshots all stored configs and task configs before the bad request and compares after.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.integration._rest_helpers import (
    VALIDATE_HINT,
    error_body,
    path,
    shared_worker,
    storage_snapshot,
)
from tests.support import WorkerProcess, unique_name, wait_for_connector_state

pytestmark = pytest.mark.integration

BASELINE = "baseline"
UNKNOWN = "no-such-connector"
JSON = {"Content-Type": "application/json"}


@pytest.fixture(scope="module")
def worker(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
           kafka_bootstrap: str) -> Iterator[WorkerProcess]:
    with shared_worker(request, tmp_path_factory, kafka_bootstrap) as started:
        client = started.client
        config = {"connector.class": "SequenceGenerator", "topic": unique_name("baseline"),
                  "tasks.max": "2", "rate": "2", "count": "10"}
        response = client.put(f"{path(BASELINE)}/config", json=config)
        assert response.status_code == 201, response.text
        wait_for_connector_state(client, BASELINE, "RUNNING", tasks_state="RUNNING",
                                 task_count=2)
        yield started


@pytest.fixture
def client(worker: WorkerProcess) -> Iterator[httpx.Client]:
    """The worker's client; the test fails if the stored state changed meanwhile."""
    before = storage_snapshot(worker.client)
    assert BASELINE in before
    yield worker.client
    assert storage_snapshot(worker.client) == before
    status = worker.client.get(f"{path(BASELINE)}/status").json()
    assert status["connector"]["state"] == "RUNNING"


def _source(**extra: Any) -> dict[str, Any]:
    return {"connector.class": "FileStreamSource", "topic": "t", "file": "/tmp/in.txt",
            **extra}


def _invalid_config_message(message: str, errors: list[str]) -> None:
    """Kafka's wording for a config that failed validation, listing ``errors``."""
    header = (f"Connector configuration is invalid and contains the following "
              f"{len(errors)} error(s):\n")
    assert message.startswith(header), message
    assert message.endswith(VALIDATE_HINT), message
    for error in errors:
        assert error in message, message


# ---------------------------------------------------------------------------- bodies


@pytest.mark.parametrize(("method", "url"), [
    ("POST", "/connectors"),
    ("PUT", f"/connectors/{UNKNOWN}/config"),
    ("PUT", f"/connectors/{BASELINE}/config"),
    ("PATCH", f"/connectors/{BASELINE}/config"),
])
def test_malformed_json_is_rejected(client: httpx.Client, method: str, url: str) -> None:
    response = client.request(method, url, content=b'{"name": "x", "config": {',
                              headers=JSON)
    # Kafka's Jackson parse errors reach ConnectExceptionMapper's catch-all: 500. The
    # client sent the bad body, so we answer 400 (docs/limitations.md).
    message = error_body(response, 400)
    assert "JSON" in message


def test_body_that_is_not_a_config_map_is_rejected(client: httpx.Client) -> None:
    response = client.put(f"{path(UNKNOWN)}/config", json=["connector.class", "x"])
    message = error_body(response, 400)
    assert "deserialize" in message


@pytest.mark.parametrize("method", ["POST", "PUT"])
def test_unknown_connector_class_is_400(client: httpx.Client, method: str) -> None:
    name = unique_name("unknown-class")
    config = _source(**{"connector.class": "com.example.DoesNotExistConnector"})
    if method == "POST":
        response = client.post("/connectors", json={"name": name, "config": config})
    else:
        response = client.put(f"{path(name)}/config", json=config)
    message = error_body(response, 400)
    assert message.startswith("Failed to find any class that implements Connector and which "
                              "name matches com.example.DoesNotExistConnector")


def test_missing_connector_class_is_400(client: httpx.Client) -> None:
    response = client.post("/connectors", json={"name": unique_name("no-class"),
                                                "config": {"topic": "t"}})
    message = error_body(response, 400)
    assert message.startswith("Connector config {")
    assert message.endswith("} contains no connector type")


@pytest.mark.parametrize("method", ["POST", "PUT"])
def test_missing_required_config_is_400(client: httpx.Client, method: str) -> None:
    name = unique_name("no-topic")
    config = {"connector.class": "FileStreamSource", "file": "/tmp/in.txt"}
    if method == "POST":
        response = client.post("/connectors", json={"name": name, "config": config})
    else:
        response = client.put(f"{path(name)}/config", json=config)
    message = error_body(response, 400)
    _invalid_config_message(message,
                            ['Missing required configuration "topic" which has no default '
                             'value.'])


def test_missing_required_config_message_is_exactly_kafkas(client: httpx.Client) -> None:
    response = client.put(f"{path(unique_name('no-topic'))}/config",
                          json={"connector.class": "FileStreamSource"})
    assert error_body(response, 400) == (
        "Connector configuration is invalid and contains the following 1 error(s):\n"
        'Missing required configuration "topic" which has no default value.\n'
        + VALIDATE_HINT)


@pytest.mark.parametrize("tasks_max", ["0", "-1"])
def test_tasks_max_below_one_is_400(client: httpx.Client, tasks_max: str) -> None:
    response = client.post("/connectors", json={"name": unique_name("tasks-max"),
                                                "config": _source(**{"tasks.max": tasks_max})})
    message = error_body(response, 400)
    _invalid_config_message(
        message, [f"Invalid value {tasks_max} for configuration tasks.max: "
                  "Value must be at least 1"])


def test_several_errors_are_all_listed(client: httpx.Client) -> None:
    response = client.post("/connectors", json={
        "name": unique_name("many-errors"),
        "config": {"connector.class": "FileStreamSource", "tasks.max": "0",
                   "batch.size": "0"}})
    message = error_body(response, 400)
    _invalid_config_message(message, [
        "Invalid value 0 for configuration tasks.max: Value must be at least 1",
        "Missing required configuration \"topic\" which has no default value.",
        "Invalid value 0 for configuration batch.size: Value must be at least 1"])


def test_put_with_name_not_matching_the_url_is_400(client: httpx.Client) -> None:
    response = client.put(f"{path(BASELINE)}/config",
                          json=_source(name="someone-else"))
    assert error_body(response, 400) == ("Connector name configuration (someone-else) "
                                         f"doesn't match connector name in the URL "
                                         f"({BASELINE})")


def test_post_with_config_name_not_matching_is_400(client: httpx.Client) -> None:
    name = unique_name("post-mismatch")
    response = client.post("/connectors", json={"name": name,
                                                "config": _source(name="other")})
    assert error_body(response, 400) == ("Connector name configuration (other) doesn't match "
                                         f"connector name in the URL ({name})")


def test_duplicate_create_is_409(client: httpx.Client) -> None:
    response = client.post("/connectors", json={"name": BASELINE, "config": _source()})
    assert error_body(response, 409) == f"Connector {BASELINE} already exists"


def test_invalid_update_leaves_the_existing_connector_alone(client: httpx.Client) -> None:
    current = client.get(f"{path(BASELINE)}/config").json()
    response = client.put(f"{path(BASELINE)}/config", json={**current, "tasks.max": "0"})
    _invalid_config_message(error_body(response, 400),
                            ["Invalid value 0 for configuration tasks.max"])
    response = client.put(f"{path(BASELINE)}/config",
                          json={**current, "connector.class": "com.example.Nope"})
    assert "com.example.Nope" in error_body(response, 400)


def test_invalid_patch_leaves_the_existing_connector_alone(client: httpx.Client) -> None:
    # Removing a required key and breaking another: both reported, nothing stored.
    response = client.patch(f"{path(BASELINE)}/config",
                            json={"topic": None, "rate": "-5"})
    _invalid_config_message(error_body(response, 400), [
        'Missing required configuration "topic" which has no default value.',
        "Invalid value -5.0 for configuration rate: Value must be at least 0"])
    response = client.patch(f"{path(BASELINE)}/config", json={"connector.class": None})
    assert "contains no connector type" in error_body(response, 400)


# ---------------------------------------------------------------------------- 404s


@pytest.mark.parametrize(("method", "suffix", "body"), [
    ("GET", "", None),
    ("GET", "/config", None),
    ("GET", "/status", None),
    ("GET", "/tasks", None),
    ("GET", "/tasks/0/status", None),
    ("PATCH", "/config", {"tasks.max": "2"}),
    ("DELETE", "", None),
    ("PUT", "/pause", None),
    ("PUT", "/resume", None),
    ("PUT", "/stop", None),
    ("POST", "/restart", None),
    ("POST", "/restart?includeTasks=true&onlyFailed=true", None),
    ("POST", "/tasks/0/restart", None),
])
def test_unknown_connector_is_404_on_every_endpoint(client: httpx.Client, method: str,
                                                    suffix: str, body: Any) -> None:
    response = client.request(method, f"{path(UNKNOWN)}{suffix}", json=body)
    message = error_body(response, 404)
    assert UNKNOWN in message
    assert UNKNOWN not in client.get("/connectors").json()


def test_unknown_task_is_404(client: httpx.Client) -> None:
    response = client.get(f"{path(BASELINE)}/tasks/7/status")
    assert error_body(response, 404) == f"No status found for task {BASELINE}-7"
    response = client.post(f"{path(BASELINE)}/tasks/7/restart")
    assert error_body(response, 404) == f"Task {BASELINE}-7 not found"


@pytest.mark.parametrize(("method", "suffix"), [
    ("GET", "/tasks/abc/status"),
    ("POST", "/tasks/abc/restart"),
    ("GET", "/tasks/1.5/status"),
])
def test_non_integer_task_id_is_404(client: httpx.Client, method: str, suffix: str) -> None:
    # JAX-RS answers a @PathParam that does not convert with a bare 404.
    response = client.request(method, f"{path(BASELINE)}{suffix}")
    assert error_body(response, 404) == "HTTP 404 Not Found"
