"""REST authentication and admin authorization on distributed clusters (subprocesses).

Basic auth on a 3-worker cluster: a connector create and an admin ``PATCH`` sent to a
follower are forwarded to the leader with the client's credentials and succeed for an
admin; they are refused (401, 403) for a client without credentials or a non-admin, at the
follower, with nothing written. Task configs computed on followers still reach the leader
(the internal ``POST /connectors/{c}/tasks`` needs no user credentials): every connector's
tasks run, including those of connectors whose instance runs on a follower.

Mutual TLS: the follower authorizes the client's certificate, then forwards presenting its
own worker certificate, which the leader accepts only if the workers' subject is an admin
principal (the trust model of docs/security.md).
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from tests.conftest import DistributedClusterFactory
from tests.integration._cluster_helpers import (
    generator_config,
    leader_of,
    post_retrying_conflicts,
    wait_agreed_status,
)
from tests.support import WorkerProcess, unique_name, wait_until
from worker.testing.tls import TestCA, client_context, served_fingerprint

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ADMIN_PW = "Cluster-Admin-Pw-2718"
VIEWER_PW = "Cluster-Viewer-Pw-3141"
KEYSTORE_PW = "Cluster-Auth-Keystore-Pw-1618"
SECRETS = (ADMIN_PW, VIEWER_PW, KEYSTORE_PW)
BASIC_AUTH = "org.apache.kafka.connect.rest.basic.auth.extension.BasicAuthSecurityRestExtension"
BASE = "/admin/dynamic-worker-config"
P = "listeners.https."


def auth(user: str, password: str) -> dict[str, str]:
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    return {"Authorization": f"Basic {token}"}


def bare_url(worker: WorkerProcess) -> str:
    url = httpx.URL(worker.url)
    return f"{url.scheme}://{url.host}:{url.port}"


def worker_id(worker: WorkerProcess) -> str:
    url = httpx.URL(worker.url)
    return f"{url.host}:{url.port}"


def https_fingerprint(worker: WorkerProcess, ca: TestCA) -> str:
    listeners = worker.client.get("/admin/worker").json()["listeners"]
    https = next(lst for lst in listeners if lst["protocol"] == "https")
    return served_fingerprint(https["url"], ca=ca)


def test_basic_auth_cluster_forwards_for_admins_and_refuses_the_others(
        distributed_cluster: DistributedClusterFactory, tmp_path: Path,
        unique_topic: Callable[..., str]) -> None:
    ca = TestCA()
    users = tmp_path / "users.properties"
    users.write_text(f"admin={ADMIN_PW}\nviewer={VIEWER_PW}\n", encoding="utf-8")
    # Besides the http listener (advertised, so forwarding goes over http), an https one
    # whose keystore is what the admin rotates through the dynamic worker configuration.
    cluster = distributed_cluster(3, {
        "rest.extension.classes": BASIC_AUTH,
        "rest.basic.auth.credentials.file": users,
        "rest.admin.principals": "admin",
        f"{P}ssl.keystore.location": ca.issue_server(common_name="static").write_pkcs12(
            tmp_path / "static.p12", KEYSTORE_PW),
        f"{P}ssl.keystore.password": KEYSTORE_PW,
    }, extra_listeners=["https://127.0.0.1:0"], credentials=("admin", ADMIN_PW))
    workers = cluster.workers
    leader = leader_of(workers)
    followers = [w for w in workers if w is not leader]
    viewer, admin = auth("viewer", VIEWER_PW), auth("admin", ADMIN_PW)

    # Refused at the follower, before any forwarding: nothing is created.
    refused_name = unique_name("refused")
    for headers in ({}, auth("admin", VIEWER_PW)):
        with httpx.Client(base_url=bare_url(followers[0]), timeout=30) as api:
            answer = api.post("/connectors", headers=headers, json={
                "name": refused_name, "config": generator_config(unique_topic(), 1)})
        assert answer.status_code == 401, answer.text
    assert leader.client.get("/connectors").json() == []

    # An admin's creates, through both followers: forwarded with the client's credentials.
    names = [unique_name("auth-gen") for _ in range(3)]
    for index, name in enumerate(names):
        with httpx.Client(base_url=bare_url(followers[index % 2]), timeout=30) as api:
            created = post_retrying_conflicts(api, "/connectors", headers=admin, json={
                "name": name, "config": generator_config(unique_topic(), 2)})
        assert created.status_code == 201, created.text
    # Task configs of connectors running on followers reach the leader: all tasks run.
    statuses = [wait_agreed_status(workers, name, "RUNNING", task_count=2, timeout=90)
                for name in names]
    owners = {status["connector"]["worker_id"] for status in statuses}
    assert owners - {worker_id(leader)}, f"no connector runs on a follower: {owners}"

    # The admin PATCH: refused for the viewer at the follower, forwarded for the admin.
    static = https_fingerprint(leader, ca)
    rotated = ca.issue_server(common_name="rotated")
    change = {f"{P}ssl.keystore.location": str(rotated.write_pkcs12(tmp_path / "r.p12",
                                                                     KEYSTORE_PW))}
    with httpx.Client(base_url=bare_url(followers[0]), timeout=30) as api:
        assert api.get(BASE, headers=viewer).json() == {}
        refused = api.patch(BASE, json=change, headers=viewer)
        assert refused.status_code == 403, refused.text
        assert refused.json()["message"].startswith(f"User 'viewer' may not PATCH {BASE}")
        assert api.patch(BASE, json=change).status_code == 401
        assert leader.client.get(BASE).json() == {}
        assert [https_fingerprint(w, ca) for w in workers] == [static] * 3
        applied = api.patch(BASE, json=change, headers=admin)
    assert applied.status_code == 200, applied.text
    assert applied.json() == change
    wait_until(lambda: [https_fingerprint(w, ca) for w in workers] == [rotated.sha256] * 3,
               timeout=10, message="every worker serving the rotated certificate")
    for worker in workers:
        assert worker.client.get(BASE).json() == change
        log = worker.log_tail(1_000_000)
        assert all(secret not in log for secret in SECRETS), worker


@pytest.mark.parametrize("workers_are_admins", [True, False])
def test_mutual_tls_forwarding_is_authorized_by_the_workers_certificate(
        distributed_cluster: DistributedClusterFactory, tmp_path: Path,
        unique_topic: Callable[..., str], workers_are_admins: bool) -> None:
    ca = TestCA()
    workers_cert = ca.issue_server(common_name="connect-worker")
    admin, viewer = ca.issue_client("admin"), ca.issue_client("viewer")
    principals = [admin.subject] + ([workers_cert.subject] if workers_are_admins else [])
    cluster = distributed_cluster(2, {
        f"{P}ssl.keystore.location": workers_cert.write_pkcs12(tmp_path / "w.p12",
                                                               KEYSTORE_PW),
        f"{P}ssl.keystore.password": KEYSTORE_PW,
        f"{P}ssl.truststore.location": ca.write_pem_truststore(tmp_path / "ca.pem"),
        f"{P}ssl.truststore.type": "PEM",
        f"{P}ssl.client.auth": "required",
        "rest.admin.principals": ";".join(principals),
    }, scheme="https", ssl_context=client_context(ca, admin))
    leader = leader_of(cluster.workers)
    follower = next(w for w in cluster.workers if w is not leader)
    rotated = ca.issue_server(common_name="rotated")
    change = {f"{P}ssl.keystore.location": str(rotated.write_pkcs12(tmp_path / "r.p12",
                                                                     KEYSTORE_PW))}

    with httpx.Client(base_url=follower.url, verify=client_context(ca, viewer),
                      timeout=30) as as_viewer:
        # Not an admin write: forwarded, and the leader accepts the forwarding worker.
        created = as_viewer.post("/connectors", json={
            "name": unique_name("mtls-gen"), "config": generator_config(unique_topic(), 1)})
        assert created.status_code == 201, created.text
        refused = as_viewer.patch(BASE, json=change)
        assert refused.status_code == 403
        assert refused.json()["message"].startswith(
            f"Certificate subject '{viewer.subject}' may not PATCH")
    answer = follower.client.patch(BASE, json=change)  # the admin's certificate
    if workers_are_admins:
        assert answer.status_code == 200, answer.text
        wait_until(lambda: all(served_fingerprint(w.url, ca=ca, client_cert=admin)
                               == rotated.sha256 for w in cluster.workers),
                   timeout=10, message="every worker serving the rotated certificate")
    else:
        # The follower let the admin through; the leader sees the follower's certificate.
        assert answer.status_code == 403, answer.text
        assert answer.json()["message"].startswith(
            f"Certificate subject '{workers_cert.subject}' may not PATCH")
        assert leader.client.get(BASE).json() == {}
        assert leader.client.patch(BASE, json=change).status_code == 200  # direct: fine
    for worker in cluster.workers:
        assert all(secret not in worker.log_tail(1_000_000) for secret in SECRETS)
