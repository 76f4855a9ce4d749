"""Signed internal requests (KIP-507) in a 2-worker cluster with a 4 s key TTL.

The leader's ``session-key`` record is in the config topic in Kafka's format; connectors
run on both workers, so the follower's task configs reach the leader signed; hand-made
requests that are unsigned, wrongly signed, or signed with the key from before a rotation
are refused with Kafka's statuses and messages and change nothing; the key is replaced on
schedule, without a rebalance, and the follower signs with the new one; no key reaches a
worker's log.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.conftest import DistributedClusterFactory
from tests.integration._cluster_helpers import (
    generator_config,
    latest_generation,
    leader_of,
    wait_agreed_status,
)
from tests.support import WorkerProcess, unique_name, wait_until
from worker.herder.request_signing import sign

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TTL_MS = 4000
ALGORITHM = "HmacSHA256"


def session_keys(bootstrap: str, topic: str) -> list[dict[str, Any]]:
    """Every ``session-key`` record of the config topic, oldest first, checked to be
    exactly what Kafka writes (compact JSON, Kafka's fields in Kafka's order)."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": unique_name("keys"),
                         "enable.auto.commit": False, "enable.partition.eof": True})
    found: list[dict[str, Any]] = []
    try:
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            for msg in consumer.consume(500, 0.5):
                error = msg.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:
                        return found
                    continue
                if msg.key() != b"session-key":
                    continue
                raw = msg.value()
                assert raw is not None, "a session-key tombstone"
                record = json.loads(raw)
                assert list(record) == ["key", "algorithm", "creation-timestamp"], raw
                assert raw == json.dumps(record, separators=(",", ":")).encode()
                found.append(record)
        raise AssertionError(f"{topic} was not read to its end")
    finally:
        consumer.close()


def post_tasks(worker: WorkerProcess, connector: str, body: bytes,
               headers: dict[str, str]) -> httpx.Response:
    return worker.client.post(f"/connectors/{connector}/tasks", content=body,
                              headers={"Content-Type": "application/json", **headers})


def task_configs(worker: WorkerProcess, connector: str) -> list[dict[str, str]]:
    response = worker.client.get(f"/connectors/{connector}/tasks")
    assert response.status_code == 200, response.text
    return [t["config"] for t in response.json()]


def test_signed_internal_requests(distributed_cluster: DistributedClusterFactory,
                                  kafka_bootstrap: str,
                                  unique_topic: Callable[[], str]) -> None:
    cluster = distributed_cluster(2, {"inter.worker.key.ttl.ms": TTL_MS})
    config_topic = f"{cluster.group_id}-configs"
    leader = leader_of(cluster.workers)
    follower = next(w for w in cluster.workers if w is not leader)

    # The leader distributed a key, in Kafka's record format.
    first = wait_until(lambda: session_keys(kafka_bootstrap, config_topic), timeout=20,
                       message="a session-key record")[-1]
    assert first["algorithm"] == ALGORITHM
    assert len(base64.b64decode(first["key"], validate=True)) == 32
    assert abs(first["creation-timestamp"] - time.time() * 1000) < 120_000

    # Two connectors, created through the follower: one runs on each worker, so the
    # follower's task configs can only have reached the leader signed.
    names = [unique_name("signed"), unique_name("signed")]
    for name in names:
        created = follower.client.post("/connectors", json={
            "name": name, "config": generator_config(unique_topic(), 2)})
        assert created.status_code == 201, created.text
    statuses = [wait_agreed_status(cluster.workers, n, "RUNNING", task_count=2) for n in names]
    owners = {s["connector"]["worker_id"] for s in statuses}
    assert len(owners) == 2, statuses
    on_follower = next(n for n, s in zip(names, statuses, strict=True)
                       if s["connector"]["worker_id"] == follower.url.removeprefix("http://"))
    before = task_configs(leader, on_follower)
    generation = latest_generation(leader)
    forged = json.dumps([{**before[0], "topic": "hijacked"}]).encode()

    # Unsigned and wrongly signed: Kafka's statuses and messages, on either worker.
    for worker in (leader, follower):
        unsigned = post_tasks(worker, on_follower, forged, {})
        assert unsigned.status_code == 400, unsigned.text
        assert unsigned.json() == {"error_code": 400, "message":
                                   "Internal request missing required signature"}
        wrong = post_tasks(worker, on_follower, forged, sign(b"x" * 32, ALGORITHM, forged))
        assert wrong.status_code == 403, wrong.text
        assert wrong.json()["message"] == "Internal request contained invalid signature."
    assert task_configs(leader, on_follower) == before

    # Signed with the current key, a request is accepted; once the key is rotated, the
    # same request is refused.
    same = json.dumps(before).encode()

    def accepted_with_current_key() -> bytes | None:
        key = base64.b64decode(session_keys(kafka_bootstrap, config_topic)[-1]["key"])
        answer = post_tasks(leader, on_follower, same, sign(key, ALGORITHM, same))
        return key if answer.status_code == 204 else None  # 403: rotated meanwhile
    old_key: bytes = wait_until(accepted_with_current_key, timeout=15, interval=0.1,
                         message="a request signed with the current key accepted")

    def rotated() -> dict[str, Any] | None:
        latest = session_keys(kafka_bootstrap, config_topic)[-1]
        return latest if base64.b64decode(latest["key"]) != old_key else None
    newer: dict[str, Any] = wait_until(rotated, timeout=TTL_MS / 1000 + 10, interval=0.3,
                       message="the session key rotated")
    # Never early; on time when no rebalance holds it up (as here, once all is running).
    keys = session_keys(kafka_bootstrap, config_topic)
    stamps = [k["creation-timestamp"] for k in keys]
    assert all(b - a >= TTL_MS for a, b in zip(stamps, stamps[1:], strict=False)), stamps
    old_index = next(i for i, k in enumerate(keys) if base64.b64decode(k["key"]) == old_key)
    assert stamps[old_index + 1] - stamps[old_index] < TTL_MS + 2000, stamps
    assert newer["key"] != first["key"]
    stale = post_tasks(leader, on_follower, same, sign(old_key, ALGORITHM, same))
    assert stale.status_code == 403, stale.text
    assert stale.json()["message"] == "Internal request contained invalid signature."
    assert task_configs(leader, on_follower) == before
    assert latest_generation(leader) == generation  # rotations needed no rebalance

    # The follower signs with the newest key: a reconfiguration of its connector gets
    # through after rotations.
    changed = follower.client.put(f"/connectors/{on_follower}/config",
                                  json=generator_config(unique_topic(), 1))
    assert changed.status_code == 200, changed.text
    wait_agreed_status(cluster.workers, on_follower, "RUNNING", task_count=1)

    # The keys never reach the workers' logs.
    logs = [w.log_tail(1_000_000) for w in cluster.workers]
    assert all("Distributing a new session key" in text or "Session key updated" in text
               for text in logs)
    for record in session_keys(kafka_bootstrap, config_topic):
        assert not any(record["key"] in text for text in logs)
