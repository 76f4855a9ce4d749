"""A worker's resources follow what it runs (issue #19): stopped connectors leave no thread
and no Kafka client behind, and a worker short of file descriptors refuses task starts with
a trace that names the limit, logs it once, reports ``unhealthy`` while the shortage lasts,
and keeps answering REST requests."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.support import unique_name, wait_for_connector_state, wait_until

pytestmark = pytest.mark.integration


def threads(pid: int) -> list[str]:
    """The names of a process's threads (librdkafka's are ``rdk:...``)."""
    names = []
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            names.append(Path(f"/proc/{pid}/task/{task}/comm").read_text().strip())
        except OSError:
            pass  # ended meanwhile
    return names


#: The SQL store's SQLite files: its connection pool opens up to 5 connections (2
#: descriptors each) as concurrent requests and status writes need them, and keeps them.
SQLITE_FILES = (".db", ".db-wal", ".db-shm", ".db-journal")


def fds(pid: int) -> int:
    """Open descriptors other than the pooled SQLite connections' (a stopped task's client
    sockets, pipes and files must be gone; the pool's size depends on load)."""
    count = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue  # closed meanwhile
        count += not target.endswith(SQLITE_FILES)
    return count


def client_threads(pid: int) -> int:
    return sum(name.startswith("rdk:") for name in threads(pid))


def test_stopped_connectors_leave_no_thread_and_no_client(
        standalone_worker: Any, tmp_path: Path) -> None:
    worker = standalone_worker()
    pid = worker.pid
    base_threads, base_clients, base_fds = len(threads(pid)), client_threads(pid), fds(pid)
    names = []
    for i in range(3):
        topic = unique_name("limits")
        for name, config in (
                (unique_name(f"src-{i}"), {"connector.class": "SequenceGenerator",
                                           "topic": topic, "rate": "5"}),
                (unique_name(f"sink-{i}"), {"connector.class": "FileStreamSink",
                                            "topics": topic,
                                            "file": str(tmp_path / f"sink-{i}.txt")})):
            assert worker.client.put(f"/connectors/{name}/config",
                                     json=config).status_code == 201
            names.append(name)
    for name in names:
        wait_for_connector_state(worker.client, name, "RUNNING", tasks_state="RUNNING")
    assert client_threads(pid) > base_clients  # each task's client runs its threads
    # Task threads carry their names for the operating system (top -H, ps -L), 15 bytes.
    running_names = set(threads(pid))
    for name in names:
        kind = "src" if name.startswith("src-") else "sink"
        assert f"{kind}0-{name}"[:15] in running_names, (name, sorted(running_names))
    running_threads = len(threads(pid))

    for name in names:
        assert worker.client.put(f"/connectors/{name}/stop").status_code == 204
    for name in names:
        wait_for_connector_state(worker.client, name, "STOPPED", tasks_state=None)
    # Within 5 s of the stop: no client of any task, no task or connector thread.
    wait_until(lambda: client_threads(pid) == base_clients and len(threads(pid)) <= base_threads
               and fds(pid) <= base_fds + 2, timeout=5, interval=0.1,
               message=lambda: f"threads {len(threads(pid))} (idle {base_threads}, running "
                               f"{running_threads}), librdkafka threads {client_threads(pid)} "
                               f"(idle {base_clients}), fds {fds(pid)} (idle {base_fds})")


def test_a_worker_short_of_file_descriptors_refuses_tasks_and_says_why(
        standalone_worker: Any) -> None:
    worker = standalone_worker(nofile=200)
    client = worker.client
    names = [unique_name(f"fd-{i}") for i in range(24)]
    for name in names:
        response = client.put(f"/connectors/{name}/config", json={
            "connector.class": "SequenceGenerator", "topic": unique_name("fd"), "rate": "2"})
        assert response.status_code == 201, response.text

    def task_states() -> dict[str, dict[str, Any]]:
        body = client.get("/connectors?expand=status").json()
        return {name: body[name]["status"]["tasks"][0] for name in names
                if name in body and body[name]["status"]["tasks"]}

    wait_until(lambda: len(task_states()) == len(names) and all(
        t["state"] in ("RUNNING", "FAILED") for t in task_states().values()),
        timeout=60, message=lambda: f"every task RUNNING or FAILED: {task_states()}")
    states = task_states()
    running = [n for n, t in states.items() if t["state"] == "RUNNING"]
    failed = [t for t in states.values() if t["state"] == "FAILED"]
    assert running and failed, states
    assert all("RLIMIT_NOFILE" in t["trace"] and "ulimit -n" in t["trace"] for t in failed)

    health = client.get("/health")
    assert health.status_code == 500
    assert health.json()["status"] == "unhealthy"
    assert "Not enough file descriptors" in health.json()["message"]
    # The REST API keeps answering: the reserve is for it.
    answers = [client.get(f"/connectors/{names[0]}/status").status_code for _ in range(50)]
    assert answers == [200] * 50
    log = worker.log_path.read_text()
    assert log.count("Further task starts are refused while the shortage lasts") == 1

    for name in running[: len(running) // 2 + 1]:  # free descriptors: the shortage ends
        assert client.delete(f"/connectors/{name}").status_code == 204
    wait_until(lambda: client.get("/health").status_code == 200, timeout=30,
               message=lambda: f"healthy again: {client.get('/health').text}")
