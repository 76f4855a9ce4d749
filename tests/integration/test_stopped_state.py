"""KIP-875's STOPPED target state on a real standalone worker (KIP-875 test plan, plus
KIP-980's ``initial_state``).

Stopping shuts the connector and its tasks down and removes its task configs (status
``STOPPED`` with ``tasks: []``, ``GET .../tasks`` is ``[]``); stop is idempotent; a FAILED
connector or one with a FAILED task can be stopped; a stopped connector can be deleted,
paused (no tasks while not STARTED) and resumed (task configs generated anew); STOPPED
survives a worker restart, and a connector can be created STOPPED.

Most tests share one worker (own connector names); the restart test has its own.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.integration._rest_helpers import (
    STRING_CONVERTER,
    error_body,
    path,
    read_values,
)
from tests.support import (
    WorkerProcess,
    create_topic,
    unique_name,
    wait_for_connector_state,
    wait_until,
)
from tests.support.plugins import PREFIX

pytestmark = pytest.mark.integration


WORKER_OVERRIDES = {"key.converter": STRING_CONVERTER, "value.converter": STRING_CONVERTER}


def generator(topic: str, tasks: int = 2) -> dict[str, str]:
    return {"connector.class": "SequenceGenerator", "topic": topic, "tasks.max": str(tasks),
            "rate": "5", "message.size": "16"}


def put(client: httpx.Client, name: str, config: dict[str, str]) -> None:
    response = client.put(f"{path(name)}/config", json=config)
    assert response.status_code == 201, response.text


def stop(client: httpx.Client, name: str) -> dict[str, Any]:
    assert client.put(f"{path(name)}/stop").status_code == 204
    return assert_stopped(client, name)


def assert_stopped(client: httpx.Client, name: str) -> dict[str, Any]:
    status = wait_for_connector_state(client, name, "STOPPED", task_count=0)
    assert status["tasks"] == []
    assert client.get(f"{path(name)}/tasks").json() == []
    assert client.get(path(name)).json()["tasks"] == []
    return status


def test_stop_removes_tasks_and_is_idempotent(client: httpx.Client, kafka_admin: Any,
                                              kafka_bootstrap: str) -> None:
    name, topic = unique_name("stop-gen"), create_topic(kafka_admin, unique_name("stop-gen"))
    put(client, name, generator(topic))
    wait_for_connector_state(client, name, "RUNNING", tasks_state="RUNNING", task_count=2)
    assert len(client.get(f"{path(name)}/tasks").json()) == 2

    status = stop(client, name)
    assert status["connector"]["state"] == "STOPPED"
    assert status["type"] == "source"
    assert error_body(client.get(f"{path(name)}/tasks/0/status"), 404)
    assert stop(client, name) == status  # twice: 204 both times, nothing changes

    # No task runs while stopped: nothing more reaches the topic.
    produced = read_values(kafka_bootstrap, topic, 1, timeout=5, settle=0.5)
    assert read_values(kafka_bootstrap, topic, len(produced), timeout=1,
                       settle=2.5) == produced


def test_a_connector_with_a_failed_task_can_be_stopped(client: httpx.Client,
                                                       tmp_path: Path) -> None:
    name = unique_name("stop-failed-task")
    put(client, name, {"connector.class": "FileStreamSink", "topics": unique_name("t"),
                       "file": str(tmp_path / "missing-dir" / "out.txt")})
    wait_for_connector_state(client, name, "RUNNING", tasks_state="FAILED", task_count=1)
    stop(client, name)


def test_a_failed_connector_can_be_stopped(client: httpx.Client) -> None:
    name = unique_name("stop-failed")
    put(client, name, {"connector.class": f"{PREFIX}.FailingStartConnector"})
    status = wait_for_connector_state(client, name, "FAILED")
    assert "injected start failure" in status["connector"]["trace"]
    status = stop(client, name)
    assert "trace" not in status["connector"]


def test_a_stopped_connector_can_be_deleted(client: httpx.Client) -> None:
    name = unique_name("stop-delete")
    put(client, name, generator(unique_name("t"), tasks=1))
    wait_for_connector_state(client, name, "RUNNING", tasks_state="RUNNING", task_count=1)
    stop(client, name)
    assert client.delete(path(name)).status_code == 204
    assert error_body(client.get(f"{path(name)}/status"), 404)
    assert error_body(client.get(f"{path(name)}/offsets"), 404)
    assert name not in client.get("/connectors").json()


def test_pause_then_resume_from_stopped(client: httpx.Client, kafka_admin: Any) -> None:
    name = unique_name("stop-pause")
    put(client, name, generator(create_topic(kafka_admin, unique_name("stop-pause"))))
    wait_for_connector_state(client, name, "RUNNING", tasks_state="RUNNING", task_count=2)
    stop(client, name)

    # As in Kafka, task configs are generated only for a STARTED connector.
    assert client.put(f"{path(name)}/pause").status_code == 202
    status = wait_for_connector_state(client, name, "PAUSED", task_count=0)
    assert status["tasks"] == [] and client.get(f"{path(name)}/tasks").json() == []

    assert client.put(f"{path(name)}/resume").status_code == 202
    wait_for_connector_state(client, name, "RUNNING", tasks_state="RUNNING", task_count=2)
    tasks = client.get(f"{path(name)}/tasks").json()
    assert [t["id"] for t in tasks] == [{"connector": name, "task": n} for n in range(2)]
    assert [t["config"]["task.id"] for t in tasks] == ["0", "1"]


def test_stopped_survives_a_restart_and_can_be_the_initial_state(
        standalone_worker: Callable[..., WorkerProcess], kafka_admin: Any,
        kafka_bootstrap: str, tmp_path: Path) -> None:
    worker = standalone_worker({"key.converter": STRING_CONVERTER,
                                "value.converter": STRING_CONVERTER})
    client = worker.client
    topic = create_topic(kafka_admin, unique_name("stop-initial"))
    created, stopped = unique_name("stop-initial"), unique_name("stop-restart")

    response = client.post("/connectors", json={"name": created, "config": generator(topic),
                                                "initial_state": "STOPPED"})
    assert response.status_code == 201, response.text
    assert response.json()["tasks"] == []
    assert_stopped(client, created)

    source = tmp_path / "in.txt"
    source.write_text("a\nb\n", encoding="utf-8")
    put(client, stopped, {"connector.class": "FileStreamSource", "file": str(source),
                          "topic": unique_name("t")})
    wait_for_connector_state(client, stopped, "RUNNING", tasks_state="RUNNING", task_count=1)
    stop(client, stopped)
    altered = [{"partition": {"filename": str(source)}, "offset": {"position": 2}}]
    response = client.patch(f"{path(stopped)}/offsets", json={"offsets": altered})
    assert response.status_code == 200, response.text

    worker.restart()
    # KIP-1017: REST answers before the herder has started; /health says when it is ready
    # (until then other requests may fail with "SQL storage is not started").
    wait_until(lambda: client.get("/health").status_code == 200, timeout=30,
               message="worker healthy after the restart")

    for name in (created, stopped):
        assert_stopped(client, name)
    assert client.get(f"{path(stopped)}/offsets").json() == {"offsets": altered}
    assert read_values(kafka_bootstrap, topic, 1, timeout=3, settle=0.5) == []

    assert client.put(f"{path(created)}/resume").status_code == 202
    wait_for_connector_state(client, created, "RUNNING", tasks_state="RUNNING", task_count=2)
    assert len(client.get(f"{path(created)}/tasks").json()) == 2
    assert read_values(kafka_bootstrap, topic, 2)
