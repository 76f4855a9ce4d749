"""Distributed mode with the default ``scheduled.rebalance.max.delay.ms`` (5 minutes): work
is never stranded for the delay, and work that is held is said so.

Two real ``connect-distributed`` workers on one broker (issue #42: on the embedded broker a
member that missed a SyncGroup used to have its work held for the whole delay, silently,
and the second of two quick creates waited 10 s and got 409):

* two back-to-back ``POST /connectors`` both answer 201, and every task runs well before
  the delay;
* a SIGKILLed follower's work is held by the leader, which logs which connectors and tasks,
  for which worker, until when, and lists it in ``GET /admin/cluster``;
* restarted on the same URL (a new member id), that worker gets its work back at once.

A distributed worker whose internal topics would need more replicas than there are
brokers refuses to start with Kafka's message (Tansu would create them).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import DistributedClusterFactory
from tests.integration._cluster_helpers import (
    generator_config,
    leader_of,
    status_of,
    wait_agreed_status,
)
from tests.support import WorkerProcess, unique_name, wait_until
from worker.testing.process import WorkerStartError

pytestmark = [pytest.mark.integration, pytest.mark.slow]

#: Kafka's default: nothing below may take anywhere near it.
DELAY_MS = 300_000
#: Bound for what must happen "at once": a few rebalances (each up to session/2 on Tansu).
PROMPT_S = 45.0
_HOLD = re.compile(r"Worker (\S+) left the group: holding its (.+) until (\S+) "
                   r"\(scheduled\.rebalance\.max\.delay\.ms=300000 ms\)")


def _work_of(worker_id: str, statuses: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    """(connectors, tasks as ``c-n``) that ``worker_id`` runs, sorted, as the logs name them."""
    connectors = sorted(s["name"] for s in statuses if s["connector"]["worker_id"] == worker_id)
    tasks = sorted(f"{s['name']}-{t['id']}" for s in statuses for t in s["tasks"]
                   if t["worker_id"] == worker_id)
    return connectors, tasks


def _described(connectors: list[str], tasks: list[str]) -> str:
    parts = [f"{kind} [{', '.join(names)}]"
             for kind, names in (("connectors", connectors), ("tasks", tasks)) if names]
    return " and ".join(parts)


def _cluster_holding(worker: WorkerProcess) -> dict[str, Any] | None:
    """``GET /admin/cluster`` once it lists held work."""
    body: dict[str, Any] = worker.client.get("/admin/cluster").json()
    return body if body["held"] else None


def _runs(worker: WorkerProcess) -> tuple[int, int]:
    """(connectors, tasks) the worker process runs, from its own ``/metrics``."""
    families = {f.name: f for f in text_string_to_metric_families(
        worker.client.get("/metrics").text)}

    def count(kind: str) -> int:
        return int(families[f"kafka_connect_connect_worker_metrics_{kind}_count"]
                   .samples[0].value)
    return count("connector"), count("task")


def _all_running(workers: list[WorkerProcess], names: list[str], tasks: dict[str, int]
                 ) -> list[dict[str, Any]]:
    return [wait_agreed_status(workers, name, "RUNNING", task_count=tasks[name],
                               timeout=PROMPT_S) for name in names]


def test_back_to_back_creates_and_held_work_going_back_to_its_worker(
        distributed_cluster: DistributedClusterFactory, unique_topic: Callable[..., str],
        tmp_path: Path) -> None:
    cluster = distributed_cluster(2, {"scheduled.rebalance.max.delay.ms": DELAY_MS})
    leader = leader_of(cluster.workers)
    [follower] = [w for w in cluster.workers if w is not leader]
    topic = unique_topic()
    source, sink = unique_name("source"), unique_name("sink")
    configs = {
        source: generator_config(topic, 2),
        sink: {"connector.class": "FileStreamSink", "topics": topic, "tasks.max": "1",
               "file": str(tmp_path / "sink.txt"),
               "key.converter": "org.apache.kafka.connect.storage.StringConverter",
               "value.converter": "org.apache.kafka.connect.storage.StringConverter"}}
    tasks = {source: 2, sink: 1}
    started = time.monotonic()

    # Back to back, through the follower (forwarded to the leader): both 201, no 409.
    for name, config in configs.items():
        created = follower.client.post("/connectors", json={"name": name, "config": config},
                                       timeout=120)
        assert created.status_code == 201, created.text
    statuses = _all_running(cluster.workers, [source, sink], tasks)
    assert time.monotonic() - started < PROMPT_S < DELAY_MS / 1000
    follower_id = follower.url.removeprefix("http://")
    connectors, task_names = _work_of(follower_id, statuses)
    assert task_names, f"the follower runs no task: {statuses}"

    # The follower crashes: the leader holds its work, says so, and lists it.
    follower.kill()
    killed_at = datetime.now(UTC)
    hold = wait_until(lambda: _HOLD.search(leader.log_tail(100000)), timeout=PROMPT_S,
                      message=lambda: f"the held work logged:\n{leader.log_tail(30)}")
    assert hold is not None
    assert hold.group(1) == follower.url
    assert hold.group(2) == _described(connectors, task_names)
    until = datetime.fromisoformat(hold.group(3))
    delay = timedelta(milliseconds=DELAY_MS)
    assert killed_at + delay <= until <= datetime.now(UTC) + delay
    # Logged while the leader computes the round; listed once that round is applied.
    cluster_body = wait_until(lambda: _cluster_holding(leader), timeout=PROMPT_S,
                              message="held work listed")
    assert cluster_body is not None
    assert cluster_body["members"] == [{"worker_id": leader.url.removeprefix("http://"),
                                        "url": leader.url}]
    [held] = cluster_body["held"]
    assert (held["worker_id"], held["url"], held["connectors"]) == (
        follower_id, follower.url, connectors)
    assert sorted(f"{t['connector']}-{t['task']}" for t in held["tasks"]) == task_names
    assert abs(datetime.fromisoformat(held["until"]) - until) < timedelta(milliseconds=2)
    for name in (source, sink):  # nothing held runs on the leader meanwhile
        body = status_of(leader, name)
        assert body is not None
        assert all(t["worker_id"] != leader.url.removeprefix("http://") for t in body["tasks"]
                   if f"{name}-{t['id']}" in task_names)

    # Back on the same URL, under a new member id: its work is given back at once.
    # (Its old RUNNING statuses are still in the status topic: what the new process runs
    # is read from its own /metrics.)
    restarted_at = time.monotonic()
    follower.start()
    wait_until(lambda: _runs(follower) == (len(connectors), len(task_names)),
               timeout=PROMPT_S, message=lambda: f"the work back: {_runs(follower)}")
    statuses = _all_running(cluster.workers, [source, sink], tasks)
    assert time.monotonic() - restarted_at < PROMPT_S
    assert _work_of(follower_id, statuses) == (connectors, task_names)
    assert (f"Worker {follower.url} rejoined the group: giving back its held "
            f"{_described(connectors, task_names)}") in leader.log_tail(100000)
    assert wait_until(lambda: leader.client.get("/admin/cluster").json()["held"] == [],
                      timeout=PROMPT_S, message="nothing held any more")


def test_more_replicas_than_brokers_refuses_to_start(
        distributed_cluster: DistributedClusterFactory, kafka_bootstrap: str) -> None:
    brokers = len(AdminClient({"bootstrap.servers": kafka_bootstrap}
                              ).list_topics(timeout=10).brokers)
    wanted = brokers + 1
    with pytest.raises(WorkerStartError) as refused:
        distributed_cluster(1, {"config.storage.replication.factor": wanted},
                            startup_timeout=60)
    message = str(refused.value)
    assert (f"The target replication factor of {wanted} cannot be reached because only "
            f"{brokers} broker(s) are registered. Set config.storage.replication.factor to "
            f"at most {brokers} (the number of brokers)") in message
    assert "Failed to start the worker" in message
