"""The dynamic worker configuration on a 3-worker HTTPS cluster (distributed mode).

A PATCH sent to a follower is forwarded to the leader over HTTPS (its certificate checked
against the truststore), written once to the config topic, and applied by every worker as
it reads the record: all three serve the new certificate within 2 s, with no rebalance
(no worker joins a new generation) and no task restart (no status record of the running
connector or its task is written meanwhile, and the task's offsets keep advancing).
Every check of a served certificate is a real TLS handshake.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient

from tests.conftest import DistributedClusterFactory
from tests.integration._cluster_helpers import (
    GENERATOR,
    latest_generation,
    leader_of,
    wait_agreed_status,
)
from tests.integration.test_kafka_log import started
from tests.support import WorkerProcess, create_topic, wait_until
from worker.config.worker_config import DistributedConfig
from worker.storage.kafka import KafkaStatusBackingStore, StatusUpdate
from worker.testing.tls import TestCA, client_context, served_fingerprint

pytestmark = pytest.mark.integration

BASE = "/admin/dynamic-worker-config"
KEYSTORE = "listeners.https.ssl.keystore.location"
PASSWORD = "Cluster-Keystore-Pw-31"
PROPAGATION_S = 2.0


def fingerprints(workers: list[WorkerProcess], ca: TestCA) -> list[str]:
    return [served_fingerprint(w.url, ca=ca) for w in workers]


def committed_seq(worker: WorkerProcess, name: str) -> int:
    offsets = worker.client.get(f"/connectors/{name}/offsets").json()["offsets"]
    return max((o["offset"]["seq"] for o in offsets), default=-1)


def log_count(worker: WorkerProcess, text: str) -> int:
    return worker.log_tail(1_000_000).count(text)


def test_a_patch_on_a_follower_rotates_every_worker_without_rebalance_or_restart(
        distributed_cluster: DistributedClusterFactory, kafka_admin: AdminClient,
        kafka_bootstrap: str, unique_topic: Callable[..., str], tmp_path: Path,
        request: pytest.FixtureRequest) -> None:
    ca = TestCA()
    static = ca.issue_server(common_name="static")
    cluster = distributed_cluster(3, {
        KEYSTORE: static.write_pkcs12(tmp_path / "static.p12", PASSWORD),
        "listeners.https.ssl.keystore.password": PASSWORD,
        "listeners.https.ssl.truststore.location": ca.write_pem_truststore(tmp_path / "ca.pem"),
        "listeners.https.ssl.truststore.type": "PEM",
    }, scheme="https", ssl_context=client_context(ca))
    workers = cluster.workers
    assert fingerprints(workers, ca) == [static.sha256] * 3

    # A running source task, so that a restart or a rebalance would show.
    name, topic = unique_topic("rotating"), unique_topic("rotating-out")
    create_topic(kafka_admin, topic)
    created = leader_of(workers).client.put(f"/connectors/{name}/config", json={
        "connector.class": GENERATOR, "topic": topic, "tasks.max": "1", "rate": "20"})
    assert created.status_code == 201, created.text
    status = wait_agreed_status(workers, name, "RUNNING", task_count=1)
    wait_until(lambda: committed_seq(workers[0], name) >= 0, timeout=30,
               message="the task's first offset commit")
    leader = leader_of(workers)
    generations = {w.url: latest_generation(w) for w in workers}
    rebalances = {w.url: log_count(w, "Rebalance started") for w in workers}
    # Every status write from now on is seen (our own status-topic reader).
    group = cluster.group_id
    statuses = started(request, KafkaStatusBackingStore(DistributedConfig({
        "bootstrap.servers": kafka_bootstrap, "group.id": f"{group}-reader",
        "config.storage.topic": f"{group}-configs", "offset.storage.topic": f"{group}-offsets",
        "status.storage.topic": f"{group}-status"})))
    written: list[StatusUpdate] = []
    statuses.set_listener(written.append)

    rotated = ca.issue_server(common_name="rotated")
    location = str(rotated.write_pkcs12(tmp_path / "rotated.p12", PASSWORD))
    follower, other = [w for w in workers if w is not leader]
    seq_before = committed_seq(follower, name)
    sent = time.monotonic()
    answer = follower.client.patch(BASE, json={KEYSTORE: location})
    assert answer.status_code == 200, answer.text
    assert answer.json() == {KEYSTORE: location}
    wait_until(lambda: fingerprints(workers, ca) == [rotated.sha256] * 3,
               timeout=max(0.0, PROPAGATION_S - (time.monotonic() - sent)), interval=0.05,
               message=lambda: f"every worker serving {rotated.sha256}: "
                               f"{fingerprints(workers, ca)}")
    assert time.monotonic() - sent < PROPAGATION_S

    reports = [w.client.get("/admin/worker").json() for w in workers]
    versions = {r["dynamic_config"]["version"] for r in reports}
    assert len(versions) == 1 and versions.pop() >= 0  # one config-topic offset
    for report in reports:
        assert report["dynamic_config"]["overrides"] == {KEYSTORE: location}
        assert report["dynamic_config"]["last_validation"]["status"] == "ok"
        assert [lst["certificate"]["sha256"] for lst in report["listeners"]] == [
            rotated.sha256]
    for worker in workers:
        assert worker.client.get(BASE).json() == {KEYSTORE: location}
        cluster_view: dict[str, Any] = worker.client.get("/admin/cluster").json()
        assert cluster_view["leader_url"] == leader.url
        assert sorted(m["url"] for m in cluster_view["members"]) == sorted(
            w.url for w in workers)

    # The task kept running throughout: its offsets advance, nothing was rewritten.
    wait_until(lambda: committed_seq(follower, name) >= seq_before + 40, timeout=30,
               message="the task producing on")
    assert {w.url: latest_generation(w) for w in workers} == generations
    assert {w.url: log_count(w, "Rebalance started") for w in workers} == rebalances
    statuses.refresh(30)  # every status written until now has been seen
    assert [u for u in written if u.connector == name] == []
    after = wait_agreed_status(workers, name, "RUNNING", task_count=1)
    assert after["tasks"][0]["worker_id"] == status["tasks"][0]["worker_id"]

    # DELETE through the other follower: the static certificate is back everywhere.
    sent = time.monotonic()
    assert other.client.delete(f"{BASE}/{KEYSTORE}").status_code == 204
    wait_until(lambda: fingerprints(workers, ca) == [static.sha256] * 3,
               timeout=max(0.0, PROPAGATION_S - (time.monotonic() - sent)), interval=0.05,
               message=lambda: f"every worker serving {static.sha256} again")
    later = {w.client.get("/admin/worker").json()["dynamic_config"]["version"]
             for w in workers}
    assert len(later) == 1 and later.pop() > max(r["dynamic_config"]["version"]
                                                 for r in reports)
    assert {w.url: latest_generation(w) for w in workers} == generations
    for worker in workers:
        assert PASSWORD not in worker.log_tail(1_000_000)
