"""Automatic restart of FAILED tasks (our extension, ``auto.restart.*``) on real workers.

A FileStreamSink whose output directory does not exist yet fails at start (it cannot
create its file); with ``auto.restart.enable=true`` the worker restarts it by itself, with
backoff, until the directory exists, then the task runs and writes the topic's records.
With ``auto.restart.max.attempts=1`` it stays FAILED once its attempt is used up, until a
manual restart (which starts the count again). The ``auto_restart`` object of
``GET /connectors/{c}/status`` shows the attempts. The standalone cases share one worker;
the distributed case runs a one-worker cluster.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from confluent_kafka import Producer

from tests.integration._rest_helpers import STRING_CONVERTER, path
from tests.support import (
    create_topic,
    unique_name,
    wait_for_connector_state,
    wait_until,
)

pytestmark = pytest.mark.integration

WORKER_OVERRIDES = {"key.converter": STRING_CONVERTER, "value.converter": STRING_CONVERTER}
#: Short backoffs: a restart every 0.2 s, then 0.4 s, then every 0.5 s at most.
FAST = {"auto.restart.enable": "true", "auto.restart.backoff.ms": "200",
        "auto.restart.backoff.max.ms": "500"}


def sink(topic: str, file: Path, **extra: str) -> dict[str, str]:
    return {"connector.class": "FileStreamSink", "topics": topic, "file": str(file),
            "tasks.max": "1", "key.converter": STRING_CONVERTER,
            "value.converter": STRING_CONVERTER, **extra}


def produce(bootstrap: str, topic: str, values: list[str]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for value in values:
        producer.produce(topic, value.encode())
    assert producer.flush(30) == 0


def put(client: httpx.Client, name: str, config: dict[str, str]) -> None:
    response = client.put(f"{path(name)}/config", json=config)
    assert response.status_code == 201, response.text


def task_status(client: httpx.Client, name: str) -> dict[str, Any] | None:
    response = client.get(f"{path(name)}/status")
    if response.status_code != 200 or not response.json()["tasks"]:
        return None
    task: dict[str, Any] = response.json()["tasks"][0]
    return task


def failed_after_restarts(client: httpx.Client, name: str, attempts: int) -> dict[str, Any]:
    """The task's status once it is FAILED after at least ``attempts`` automatic restarts."""
    def check() -> dict[str, Any] | None:
        task = task_status(client, name)
        restarts = (task or {}).get("auto_restart") or {}
        if task is not None and task["state"] == "FAILED" \
                and restarts.get("attempts", 0) >= attempts:
            return task
        return None
    result = wait_until(
        check, timeout=20, interval=0.1, message=lambda: f"{name}'s task FAILED after "
        f"{attempts} automatic restart(s); last: {task_status(client, name)}")
    assert result is not None
    return result


def lines(file: Path) -> list[str]:
    return file.read_text(encoding="utf-8").splitlines() if file.exists() else []


def test_failed_task_recovers_by_itself_once_its_resource_exists(
        client: httpx.Client, kafka_admin: Any, kafka_bootstrap: str, tmp_path: Path
        ) -> None:
    topic = create_topic(kafka_admin, unique_name("auto-restart"))
    produce(kafka_bootstrap, topic, ["one", "two"])
    out_dir = tmp_path / "not-yet"
    name = unique_name("auto-restart-sink")
    put(client, name, sink(topic, out_dir / "out.txt", **FAST))

    task = failed_after_restarts(client, name, attempts=2)
    assert "out.txt" in task["trace"]  # the sink's own reason: its file cannot be created
    status = client.get(f"{path(name)}/status").json()
    assert status["connector"]["auto_restart"] == {
        "attempts": 0, "max_attempts": -1, "next_attempt_ms": None, "exhausted": False}
    assert task["auto_restart"]["max_attempts"] == -1 and not task["auto_restart"]["exhausted"]

    out_dir.mkdir()
    status = wait_for_connector_state(client, name, "RUNNING", tasks_state="RUNNING",
                                      timeout=20, task_count=1)
    assert status["tasks"][0]["auto_restart"]["attempts"] >= 2
    assert status["tasks"][0]["auto_restart"]["next_attempt_ms"] is None
    wait_until(lambda: lines(out_dir / "out.txt") == ["one", "two"], timeout=20,
               message=lambda: f"the records in the file; got {lines(out_dir / 'out.txt')}")


def test_max_attempts_reached_stays_failed_until_restarted_by_hand(
        client: httpx.Client, kafka_admin: Any, tmp_path: Path) -> None:
    topic = create_topic(kafka_admin, unique_name("auto-restart-max"))
    out_dir = tmp_path / "not-yet"
    name = unique_name("auto-restart-max")
    put(client, name, sink(topic, out_dir / "out.txt", **FAST,
                           **{"auto.restart.max.attempts": "1"}))

    def exhausted() -> dict[str, Any] | None:
        task = task_status(client, name)
        return task if task and (task.get("auto_restart") or {}).get("exhausted") else None
    task = wait_until(exhausted, timeout=20, interval=0.1, message="the attempt used up")
    assert task is not None and task["state"] == "FAILED"
    assert task["auto_restart"] == {"attempts": 1, "max_attempts": 1,
                                    "next_attempt_ms": None, "exhausted": True}

    # A manual restart starts the count again; the directory exists now, so it runs.
    out_dir.mkdir()
    assert client.post(f"{path(name)}/tasks/0/restart").status_code == 204
    status = wait_for_connector_state(client, name, "RUNNING", tasks_state="RUNNING",
                                      timeout=20, task_count=1)
    assert status["tasks"][0]["auto_restart"]["attempts"] == 0


def test_without_auto_restart_the_status_is_kafkas(client: httpx.Client, kafka_admin: Any,
                                                   tmp_path: Path) -> None:
    topic = create_topic(kafka_admin, unique_name("no-auto-restart"))
    name = unique_name("no-auto-restart")
    put(client, name, sink(topic, tmp_path / "missing" / "out.txt"))
    status = wait_for_connector_state(client, name, "RUNNING", tasks_state="FAILED",
                                      timeout=20, task_count=1)
    assert set(status["connector"]) == {"state", "worker_id"}
    assert set(status["tasks"][0]) == {"id", "state", "worker_id", "trace"}
    bad = client.put(f"{path(name)}/config",
                     json=sink(topic, tmp_path / "out.txt", **{"auto.restart.backoff.ms": "0"}))
    assert bad.status_code == 400 and "auto.restart.backoff.ms" in bad.json()["message"]
    assert client.get(f"{path(name)}/config").json()["file"].endswith("missing/out.txt")


def test_distributed_worker_restarts_the_task_it_runs(distributed_cluster: Any,
                                                      kafka_admin: Any, kafka_bootstrap: str,
                                                      tmp_path: Path) -> None:
    cluster = distributed_cluster(size=1, overrides={"key.converter": STRING_CONVERTER,
                                                     "value.converter": STRING_CONVERTER})
    client = cluster.workers[0].client
    topic = create_topic(kafka_admin, unique_name("auto-restart-dist"))
    produce(kafka_bootstrap, topic, ["a"])
    out_dir = tmp_path / "not-yet"
    name = unique_name("auto-restart-dist")
    # 409 while the group still forms; 200 if an earlier attempt created it after all.
    wait_until(lambda: client.put(f"{path(name)}/config", json=sink(
        topic, out_dir / "out.txt", **FAST)).status_code in (200, 201), timeout=30,
        message="the connector created")

    failed_after_restarts(client, name, attempts=1)
    out_dir.mkdir()
    wait_for_connector_state(client, name, "RUNNING", tasks_state="RUNNING", timeout=20,
                             task_count=1)
    wait_until(lambda: lines(out_dir / "out.txt") == ["a"], timeout=20,
               message=lambda: f"the record in the file; got {lines(out_dir / 'out.txt')}")
