"""Distributed workers over HTTPS: a write sent to a follower is forwarded to the leader
over verified TLS; a leader whose certificate the follower does not trust answers 409."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import DistributedClusterFactory
from tests.integration._cluster_helpers import generator_config, leader_of
from tests.support import unique_name, wait_until
from worker.testing.tls import TestCA, client_context, served_fingerprint

pytestmark = [pytest.mark.integration, pytest.mark.slow]

PASSWORD = "Cluster-Keystore-Pw-42"
P = "listeners.https."


def _tls_props(tmp_path: Path, ca: TestCA, trusted: TestCA) -> dict[str, object]:
    issued = ca.issue_server()
    return {f"{P}ssl.keystore.location": issued.write_pkcs12(tmp_path / "k.p12", PASSWORD),
            f"{P}ssl.keystore.password": PASSWORD,
            f"{P}ssl.truststore.location": trusted.write_pem_truststore(tmp_path / "t.pem"),
            f"{P}ssl.truststore.type": "PEM"}


def test_follower_forwards_to_the_leader_over_verified_https(
        distributed_cluster: DistributedClusterFactory, tmp_path: Path,
        unique_topic: Callable[..., str]) -> None:
    ca = TestCA()
    cluster = distributed_cluster(3, _tls_props(tmp_path, ca, ca), scheme="https",
                                  ssl_context=client_context(ca))
    leader = leader_of(cluster.workers)
    follower = next(w for w in cluster.workers if w is not leader)
    for worker in cluster.workers:
        served_fingerprint(worker.url, ca=ca)  # every worker serves a verified certificate
    name = unique_name("https-gen")
    created = follower.client.post("/connectors", json={
        "name": name, "config": generator_config(unique_topic(), 1)})
    assert created.status_code == 201, created.text
    for worker in cluster.workers:
        wait_until(lambda w=worker: w.client.get(f"/connectors/{name}/config").status_code
                   == 200, timeout=30, message=f"{name} known to {worker.url}")
    # Another forwarded write on the same (kept) inter-worker client.
    assert follower.client.put(f"/connectors/{name}/pause").status_code == 202
    for worker in cluster.workers:
        assert PASSWORD not in worker.log_tail(100000)


def test_untrusted_leader_certificate_is_a_409_naming_the_tls_failure(
        distributed_cluster: DistributedClusterFactory, tmp_path: Path,
        unique_topic: Callable[..., str]) -> None:
    ca, stranger = TestCA(), TestCA("a CA nobody uses")
    # Served certificates come from `ca`; the workers trust only `stranger`.
    cluster = distributed_cluster(2, _tls_props(tmp_path, ca, stranger), scheme="https",
                                  ssl_context=client_context(ca))
    leader = leader_of(cluster.workers)
    follower = next(w for w in cluster.workers if w is not leader)
    refused = follower.client.post("/connectors", json={
        "name": unique_name("refused"), "config": generator_config(unique_topic(), 1)})
    assert refused.status_code == 409, refused.text
    message = refused.json()["message"]
    assert "TLS handshake failed" in message and "certificate verify failed" in message
    assert leader.url.removeprefix("https://") in message
    assert PASSWORD not in message
    log = follower.log_tail(100000)
    assert "TLS handshake failed" in log and PASSWORD not in log
    assert leader.client.get("/connectors").json() == []
