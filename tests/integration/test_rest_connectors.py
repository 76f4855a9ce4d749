"""``/`` and ``/connectors``: a real worker subprocess over real HTTP, Kafka Connect 4.x
status codes and JSON bodies (``ConnectorsResource``, standalone herder).

One worker serves the whole module (tests use their own connector names). Its converters
are ``StringConverter`` so FileStream lines travel unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from confluent_kafka import Producer

from tests.integration._rest_helpers import (
    STRING_CONVERTER,
    path,
    read_values,
    worker_id,
)
from tests.support import (
    WorkerProcess,
    create_topic,
    unique_name,
    wait_for_connector_state,
    wait_until,
)

pytestmark = pytest.mark.integration

FILE_SOURCE_TASK = "FileStreamSourceTask"


WORKER_OVERRIDES = {"key.converter": STRING_CONVERTER, "value.converter": STRING_CONVERTER}


def _info(name: str, config: dict[str, str], tasks: int, kind: str) -> dict[str, Any]:
    return {"name": name, "config": config, "type": kind,
            "tasks": [{"connector": name, "task": n} for n in range(tasks)]}


def _status(worker: WorkerProcess, name: str, state: str, task_states: list[str],
            kind: str) -> dict[str, Any]:
    wid = worker_id(worker)
    return {"name": name, "type": kind,
            "connector": {"state": state, "worker_id": wid},
            "tasks": [{"id": n, "state": s, "worker_id": wid}
                      for n, s in enumerate(task_states)]}


def _generator(topic: str, tasks: int = 1, **extra: str) -> dict[str, str]:
    # Slow and bounded: these connectors exist to be inspected, not to move data.
    return {"connector.class": "SequenceGenerator", "topic": topic, "tasks.max": str(tasks),
            "rate": "5", "count": "20", **extra}


def _lines(file: Path) -> list[str]:
    return file.read_text(encoding="utf-8").splitlines() if file.exists() else []


# ---------------------------------------------------------------------------- root


def test_root_reports_version_commit_and_kafka_cluster_id(client: httpx.Client,
                                                         kafka_admin: Any) -> None:
    response = client.get("/")
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"version", "commit", "kafka_cluster_id"}
    assert all(isinstance(body[k], str) and body[k] for k in body), body
    assert body["kafka_cluster_id"] == kafka_admin.list_topics(timeout=10).cluster_id


# ---------------------------------------------------------------------------- create/read


def test_post_creates_a_running_connector_readable_on_every_endpoint(
        worker: WorkerProcess, client: httpx.Client, kafka_admin: Any, kafka_bootstrap: str,
        unique_topic: Callable[..., str], tmp_path: Path) -> None:
    name = unique_name("post-source")
    topic = create_topic(kafka_admin, unique_topic("post"))
    source = tmp_path / "in.txt"
    source.write_text("alpha\nbeta\n", encoding="utf-8")
    config = {"connector.class": "FileStreamSource", "file": str(source), "topic": topic,
              "tasks.max": "1"}
    stored = {**config, "name": name}

    response = client.post("/connectors", json={"name": name, "config": config})

    assert response.status_code == 201, response.text
    assert response.headers["location"] == f"{worker.url}/connectors/{name}"
    assert response.json() == _info(name, stored, tasks=1, kind="source")
    wait_for_connector_state(client, name, "RUNNING", tasks_state="RUNNING", task_count=1)

    assert name in client.get("/connectors").json()
    response = client.get(path(name))
    assert response.status_code == 200
    assert response.json() == _info(name, stored, tasks=1, kind="source")
    response = client.get(f"{path(name)}/config")
    assert response.status_code == 200
    assert response.json() == stored
    response = client.get(f"{path(name)}/status")
    assert response.status_code == 200
    assert response.json() == _status(worker, name, "RUNNING", ["RUNNING"], "source")
    response = client.get(f"{path(name)}/tasks/0/status")
    assert response.status_code == 200
    assert response.json() == {"id": 0, "state": "RUNNING", "worker_id": worker_id(worker)}

    response = client.get(f"{path(name)}/tasks")
    assert response.status_code == 200
    tasks = response.json()
    assert [t["id"] for t in tasks] == [{"connector": name, "task": 0}]
    assert set(tasks[0]) == {"id", "config"}
    task_config = dict(tasks[0]["config"])
    assert task_config.pop("task.class").endswith(FILE_SOURCE_TASK)
    assert task_config == stored

    # And it really runs: the file's lines are in the topic.
    assert read_values(kafka_bootstrap, topic, 2) == ["alpha", "beta"]


def test_list_connectors_with_expansions(worker: WorkerProcess, client: httpx.Client,
                                         unique_topic: Callable[..., str]) -> None:
    names = [unique_name("expand-a"), unique_name("expand-b")]
    configs = {names[0]: _generator(unique_topic("a"), tasks=2),
               names[1]: _generator(unique_topic("b"), tasks=1)}
    for name, config in configs.items():
        assert client.put(f"{path(name)}/config", json=config).status_code == 201
    task_counts = {names[0]: 2, names[1]: 1}
    for name, count in task_counts.items():
        wait_for_connector_state(client, name, "RUNNING", tasks_state="RUNNING",
                                 task_count=count)
    infos = {n: _info(n, {**configs[n], "name": n}, task_counts[n], "source") for n in names}
    statuses = {n: _status(worker, n, "RUNNING", ["RUNNING"] * task_counts[n], "source")
                for n in names}

    listed = client.get("/connectors")
    assert listed.status_code == 200
    assert isinstance(listed.json(), list) and set(names) <= set(listed.json())

    for query, expected in [
        ("expand=status", {n: {"status": statuses[n]} for n in names}),
        ("expand=info", {n: {"info": infos[n]} for n in names}),
        ("expand=status&expand=info",
         {n: {"status": statuses[n], "info": infos[n]} for n in names}),
        ("expand=bogus", {n: {} for n in names}),  # unknown expansions are ignored
    ]:
        response = client.get(f"/connectors?{query}")
        assert response.status_code == 200, query
        body = response.json()
        assert set(body) == set(listed.json()), query
        assert {n: body[n] for n in names} == expected, query


# ---------------------------------------------------------------------------- PUT/PATCH


def test_put_creates_then_updates_and_patch_merges(worker: WorkerProcess,
                                                   client: httpx.Client,
                                                   unique_topic: Callable[..., str]) -> None:
    name = unique_name("put-gen")
    config = _generator(unique_topic("put"), tasks=2, **{"message.size": "30"})

    created = client.put(f"{path(name)}/config", json=config)
    assert created.status_code == 201, created.text
    assert created.headers["location"] == f"{worker.url}/connectors/{name}"
    assert created.json() == _info(name, {**config, "name": name}, 2, "source")
    wait_for_connector_state(client, name, "RUNNING", tasks_state="RUNNING", task_count=2)

    # Same name in the body is accepted; JSON numbers are taken as strings, as Jackson does.
    updated_config = {**config, "tasks.max": 1, "name": name}
    updated = client.put(f"{path(name)}/config", json=updated_config)
    assert updated.status_code == 200, updated.text
    assert "location" not in updated.headers
    expected = {**config, "tasks.max": "1", "name": name}
    assert updated.json() == _info(name, expected, 1, "source")
    assert client.get(f"{path(name)}/config").json() == expected
    wait_for_connector_state(client, name, "RUNNING", tasks_state="RUNNING", task_count=1)

    # PATCH: new keys are added, changed ones replaced, null removes a key.
    patched = client.patch(f"{path(name)}/config",
                           json={"message.size": "40", "batch.size": "7", "rate": None})
    assert patched.status_code == 200, patched.text
    expected = {k: v for k, v in expected.items() if k != "rate"}
    expected.update({"message.size": "40", "batch.size": "7"})
    assert patched.json() == _info(name, expected, 1, "source")
    assert client.get(f"{path(name)}/config").json() == expected
    status = wait_for_connector_state(client, name, "RUNNING", tasks_state="RUNNING",
                                      task_count=1)
    assert status == _status(worker, name, "RUNNING", ["RUNNING"], "source")
    task_config = client.get(f"{path(name)}/tasks").json()[0]["config"]
    assert task_config["message.size"] == "40" and "rate" not in task_config


def test_config_update_restarts_tasks_with_the_new_config(
        client: httpx.Client, kafka_admin: Any, kafka_bootstrap: str,
        unique_topic: Callable[..., str], tmp_path: Path) -> None:
    name = unique_name("sink-move")
    topic = create_topic(kafka_admin, unique_topic("sink"))
    first, second = tmp_path / "first.txt", tmp_path / "second.txt"
    producer = Producer({"bootstrap.servers": kafka_bootstrap})

    def produce(values: list[str]) -> None:
        for value in values:
            producer.produce(topic, value.encode())
        assert producer.flush(30) == 0

    config = {"connector.class": "FileStreamSink", "topics": topic, "file": str(first)}
    assert client.put(f"{path(name)}/config", json=config).status_code == 201
    wait_for_connector_state(client, name, "RUNNING", tasks_state="RUNNING", task_count=1)
    before = [f"before-{n}" for n in range(5)]
    produce(before)
    wait_until(lambda: _lines(first) == before, timeout=60,
               message=lambda: f"{before} in {first}; got {_lines(first)}")

    response = client.put(f"{path(name)}/config", json={**config, "file": str(second)})
    assert response.status_code == 200, response.text
    assert client.get(f"{path(name)}/tasks").json()[0]["config"]["file"] == str(second)
    wait_for_connector_state(client, name, "RUNNING", tasks_state="RUNNING", task_count=1)
    after = [f"after-{n}" for n in range(5)]
    produce(after)

    # At-least-once allows replays of "before" lines, but every new line goes to the new
    # file and the old file is no longer written.
    wait_until(lambda: set(after) <= set(_lines(second)), timeout=60,
               message=lambda: f"{after} in {second}; got {_lines(second)}")
    assert _lines(first) == before
    assert [line for line in _lines(second) if line.startswith("after-")] == after


# ---------------------------------------------------------------------------- lifecycle


def test_pause_and_resume(worker: WorkerProcess, client: httpx.Client,
                          unique_topic: Callable[..., str]) -> None:
    name = unique_name("pausable")
    assert client.put(f"{path(name)}/config",
                      json=_generator(unique_topic("pause"), tasks=2)).status_code == 201
    wait_for_connector_state(client, name, "RUNNING", tasks_state="RUNNING", task_count=2)

    response = client.put(f"{path(name)}/pause")
    assert response.status_code == 202
    assert response.content == b""
    status = wait_for_connector_state(client, name, "PAUSED", tasks_state="PAUSED",
                                      task_count=2)
    assert status == _status(worker, name, "PAUSED", ["PAUSED", "PAUSED"], "source")
    # Pausing again is idempotent.
    assert client.put(f"{path(name)}/pause").status_code == 202

    response = client.put(f"{path(name)}/resume")
    assert response.status_code == 202
    assert response.content == b""
    status = wait_for_connector_state(client, name, "RUNNING", tasks_state="RUNNING",
                                      task_count=2)
    assert status == _status(worker, name, "RUNNING", ["RUNNING", "RUNNING"], "source")


def test_stop_and_resume(worker: WorkerProcess, client: httpx.Client,
                         unique_topic: Callable[..., str]) -> None:
    name = unique_name("stoppable")
    config = _generator(unique_topic("stop"), tasks=2)
    assert client.put(f"{path(name)}/config", json=config).status_code == 201
    wait_for_connector_state(client, name, "RUNNING", tasks_state="RUNNING", task_count=2)

    # KIP-875: 204; a stopped connector has no tasks and no task configs.
    response = client.put(f"{path(name)}/stop")
    assert response.status_code == 204
    assert response.content == b""
    status = wait_for_connector_state(client, name, "STOPPED", task_count=0)
    assert status == _status(worker, name, "STOPPED", [], "source")
    assert client.get(f"{path(name)}/tasks").json() == []
    assert client.get(path(name)).json() == _info(name, {**config, "name": name}, 0, "source")

    assert client.put(f"{path(name)}/resume").status_code == 202
    wait_for_connector_state(client, name, "RUNNING", tasks_state="RUNNING", task_count=2)
    assert len(client.get(f"{path(name)}/tasks").json()) == 2


@pytest.mark.parametrize(("initial_state", "state"), [("PAUSED", "PAUSED"),
                                                      ("STOPPED", "STOPPED"),
                                                      ("RUNNING", "RUNNING")])
def test_create_with_initial_state(client: httpx.Client, unique_topic: Callable[..., str],
                                   initial_state: str, state: str) -> None:
    name = unique_name(f"initial-{initial_state.lower()}")
    response = client.post("/connectors", json={
        "name": name, "config": _generator(unique_topic("initial")),
        "initial_state": initial_state})
    assert response.status_code == 201, response.text
    wait_for_connector_state(client, name, state)

    # Whatever it was created as, a resume runs it with its task.
    assert client.put(f"{path(name)}/resume").status_code == 202
    wait_for_connector_state(client, name, "RUNNING", tasks_state="RUNNING", task_count=1)


def test_restart_connector_and_tasks(worker: WorkerProcess, client: httpx.Client,
                                     unique_topic: Callable[..., str]) -> None:
    name = unique_name("restartable")
    assert client.put(f"{path(name)}/config",
                      json=_generator(unique_topic("restart"))).status_code == 201
    wait_for_connector_state(client, name, "RUNNING", tasks_state="RUNNING", task_count=1)

    # Plain restart: 204, no body.
    response = client.post(f"{path(name)}/restart")
    assert response.status_code == 204
    assert response.content == b""
    wait_for_connector_state(client, name, "RUNNING", tasks_state="RUNNING", task_count=1)

    # includeTasks: 202 with the state right after the request (everything RESTARTING).
    response = client.post(f"{path(name)}/restart", params={"includeTasks": "true"})
    assert response.status_code == 202
    assert response.json() == _status(worker, name, "RESTARTING", ["RESTARTING"], "source")
    wait_for_connector_state(client, name, "RUNNING", tasks_state="RUNNING", task_count=1)

    # onlyFailed on a healthy connector: 202, nothing restarts.
    running = _status(worker, name, "RUNNING", ["RUNNING"], "source")
    for params in ({"onlyFailed": "true"}, {"onlyFailed": "true", "includeTasks": "true"}):
        response = client.post(f"{path(name)}/restart", params=params)
        assert response.status_code == 202, params
        assert response.json() == running, params

    # Task restart: 204, no body.
    response = client.post(f"{path(name)}/tasks/0/restart")
    assert response.status_code == 204
    assert response.content == b""
    wait_for_connector_state(client, name, "RUNNING", tasks_state="RUNNING", task_count=1)


def test_delete_then_everything_is_404(client: httpx.Client,
                                       unique_topic: Callable[..., str]) -> None:
    name = unique_name("deletable")
    assert client.put(f"{path(name)}/config",
                      json=_generator(unique_topic("delete"))).status_code == 201
    wait_for_connector_state(client, name, "RUNNING", tasks_state="RUNNING", task_count=1)

    response = client.delete(path(name))
    assert response.status_code == 204
    assert response.content == b""

    assert name not in client.get("/connectors").json()
    for suffix in ("", "/config", "/status", "/tasks", "/tasks/0/status"):
        response = client.get(f"{path(name)}{suffix}")
        assert response.status_code == 404, suffix
        assert response.json()["error_code"] == 404
        assert name in response.json()["message"], suffix
    assert client.delete(path(name)).status_code == 404


@pytest.mark.parametrize("name", [
    "with spaces in it",
    "ünïcödé naïve 名前",
    "a+b=c&d;e,f!g'h(i)*j",
    "colon:at@dollar$",
    "query?hash#percent%25",
])
def test_names_with_special_characters_round_trip(worker: WorkerProcess, client: httpx.Client,
                                                  unique_topic: Callable[..., str],
                                                  name: str) -> None:
    name = f"{name} {unique_name('x')}"
    config = _generator(unique_topic("special"))

    response = client.post("/connectors", json={"name": name, "config": config})
    assert response.status_code == 201, response.text
    assert response.json()["name"] == name
    # The Location header is the encoded path of the new connector and leads to it.
    location = response.headers["location"]
    assert location.startswith(f"{worker.url}/connectors/")
    assert httpx.get(location, timeout=10).json()["name"] == name

    encoded = quote(name, safe="")
    wait_for_connector_state(client, encoded, "RUNNING", tasks_state="RUNNING", task_count=1)
    assert name in client.get("/connectors").json()
    assert client.get(path(name)).json() == _info(name, {**config, "name": name}, 1, "source")
    assert client.get(f"{path(name)}/status").json()["name"] == name
    assert client.get(f"{path(name)}/tasks").json()[0]["id"] == {"connector": name, "task": 0}
    assert name in client.get("/connectors?expand=info").json()

    response = client.patch(f"{path(name)}/config", json={"count": "3"})
    assert response.status_code == 200
    assert response.json()["config"]["name"] == name
    assert client.delete(path(name)).status_code == 204
    assert name not in client.get("/connectors").json()


# ---------------------------------------------------------------------------- failures


def test_failing_task_is_failed_with_trace_and_the_worker_carries_on(
        worker: WorkerProcess, client: httpx.Client, kafka_admin: Any,
        unique_topic: Callable[..., str], tmp_path: Path) -> None:
    name = unique_name("broken-sink")
    topic = create_topic(kafka_admin, unique_topic("broken"))
    bad_file = tmp_path / "no-such-dir" / "nested" / "out.txt"
    config = {"connector.class": "FileStreamSink", "topics": topic, "file": str(bad_file)}

    assert client.put(f"{path(name)}/config", json=config).status_code == 201
    status = wait_for_connector_state(client, name, "RUNNING", tasks_state="FAILED",
                                      task_count=1)
    task = status["tasks"][0]
    assert set(task) == {"id", "state", "worker_id", "trace"}
    assert "Traceback" in task["trace"] and str(bad_file) in task["trace"]
    assert "trace" not in status["connector"]
    response = client.get(f"{path(name)}/tasks/0/status")
    assert response.status_code == 200
    assert response.json() == task

    # The worker keeps serving, and other connectors still start.
    assert client.get("/").status_code == 200
    healthy = unique_name("healthy")
    assert client.put(f"{path(healthy)}/config",
                      json=_generator(unique_topic("healthy"))).status_code == 201
    wait_for_connector_state(client, healthy, "RUNNING", tasks_state="RUNNING", task_count=1)

    # Restarting only what failed: the task restarts, the connector does not.
    response = client.post(f"{path(name)}/restart",
                           params={"includeTasks": "true", "onlyFailed": "true"})
    assert response.status_code == 202
    assert response.json()["connector"]["state"] == "RUNNING"
    assert [t["state"] for t in response.json()["tasks"]] == ["RESTARTING"]
    wait_for_connector_state(client, name, "RUNNING", tasks_state="FAILED", task_count=1)

    # Fixing the config brings the task back.
    good_file = tmp_path / "out.txt"
    response = client.patch(f"{path(name)}/config", json={"file": str(good_file)})
    assert response.status_code == 200, response.text
    status = wait_for_connector_state(client, name, "RUNNING", tasks_state="RUNNING",
                                      task_count=1)
    assert "trace" not in status["tasks"][0]
