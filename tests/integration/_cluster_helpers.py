"""Helpers for the distributed-mode tests (clusters of ``connect-distributed`` workers).

* :func:`leader_of` reads which worker leads from the workers' logs (Kafka's REST API does
  not expose the leader, so neither does ours);
* :func:`wait_agreed_status` waits until every given worker reports the same status;
* :func:`tasks_per_worker` counts RUNNING tasks per worker id in a status body.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Sequence
from typing import Any

import httpx

from tests.support import WorkerProcess, wait_until

GENERATOR = "worker.connectors.generator.SequenceGeneratorConnector"
_JOINED = re.compile(r"Joined generation (\d+) as (leader|follower)")


def latest_generation(worker: WorkerProcess) -> tuple[int, str] | None:
    """(generation, role) of the last join in the worker's current log."""
    found = _JOINED.findall(worker.log_tail(100000))
    return (int(found[-1][0]), found[-1][1]) if found else None


def leader_of(workers: Sequence[WorkerProcess], timeout: float = 60.0) -> WorkerProcess:
    """The running worker that joined the latest generation as leader, once all running
    workers have joined that generation."""
    def find() -> WorkerProcess | None:
        joins = {w: latest_generation(w) for w in workers if w.is_running}
        if not joins or any(j is None for j in joins.values()):
            return None
        generations = {j[0] for j in joins.values() if j is not None}
        if len(generations) != 1:
            return None
        leaders = [w for w, j in joins.items() if j is not None and j[1] == "leader"]
        return leaders[0] if len(leaders) == 1 else None
    found: WorkerProcess = wait_until(find, timeout=timeout, message="one agreed leader")
    return found


def status_of(worker: WorkerProcess, name: str) -> dict[str, Any] | None:
    response = worker.client.get(f"/connectors/{name}/status")
    if response.status_code != 200:
        return None
    body: dict[str, Any] = response.json()
    return body


def tasks_per_worker(status: dict[str, Any], state: str = "RUNNING") -> Counter[str]:
    return Counter(t["worker_id"] for t in status["tasks"] if t["state"] == state)


def wait_agreed_status(workers: Sequence[WorkerProcess], name: str, state: str, *,
                       task_count: int | None = None, tasks_state: str | None = "RUNNING",
                       timeout: float = 60.0) -> dict[str, Any]:
    """Every worker answers the same status for ``name``: connector in ``state`` and (when
    ``task_count`` is given) exactly that many tasks, all in ``tasks_state``."""
    def agreed() -> dict[str, Any] | None:
        bodies = [status_of(w, name) for w in workers]
        first = bodies[0]
        if first is None or any(b != first for b in bodies):
            return None
        if first["connector"]["state"] != state:
            return None
        if task_count is not None:
            if len(first["tasks"]) != task_count:
                return None
            if tasks_state is not None and any(t["state"] != tasks_state
                                               for t in first["tasks"]):
                return None
        return first
    result: dict[str, Any] = wait_until(
        agreed, timeout=timeout, interval=0.3,
        message=lambda: f"agreed status {state} of {name}: "
                        f"{[status_of(w, name) for w in workers]}")
    return result


def generator_config(topic: str, tasks: int, **extra: object) -> dict[str, str]:
    config = {"connector.class": GENERATOR, "topic": topic, "tasks.max": str(tasks),
              "rate": "50", "format": "string", "message.size": "32",
              "key.converter": "org.apache.kafka.connect.storage.StringConverter",
              "value.converter": "org.apache.kafka.connect.storage.StringConverter"}
    config.update({k: str(v) for k, v in extra.items()})
    return config


def post_retrying_conflicts(api: httpx.Client, path: str, *, timeout: float = 30.0,
                            **kwargs: Any) -> httpx.Response:
    """POST as Kafka Connect's clients do: a 409 ("Cannot complete request momentarily
    due to stale configuration": a rebalance is under way) is retried, for ``timeout``
    seconds at most; any other answer is returned."""
    deadline = time.monotonic() + timeout
    while True:
        response = api.post(path, **kwargs)
        if response.status_code != 409 or time.monotonic() > deadline:
            return response
        time.sleep(0.5)  # the rebalance's pace, not a condition: bounded by the deadline
