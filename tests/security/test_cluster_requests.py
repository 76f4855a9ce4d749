"""Requests in a two-worker cluster act on what their path names, and internal requests are
verified before their body is read or parsed.

* A follower forwards a write to the leader with the path as it received it: ``DELETE
  /connectors/%2e/offsets`` names the connector ``.``, and must never become ``DELETE
  /connectors/offsets`` (which deleted the connector named ``offsets`` in the probe of
  issue #41), whether the dots come percent-encoded or literal.
* A connector name no URL path can carry (``a/b``, ``.``, ``..``) is refused at create, on
  either worker, naming the rule; so is a control character (Kafka's own rule).
* ``POST /connectors/{c}/tasks`` (let through authentication as in Kafka): unsigned, it is
  answered 400 before its body is sent; signed with a wrong key, 403 without its body being
  parsed (a body that is not JSON still gets the 403).
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from urllib.parse import quote

import httpx
import pytest

from tests.integration._cluster_helpers import leader_of
from tests.security._raw_http import exchange, head, trickle
from tests.support import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

FILE_SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"


def port_of(url: str) -> int:
    port = httpx.URL(url).port
    assert port is not None
    return port


def test_forwarding_names_and_internal_requests(distributed_cluster: Callable[..., object],
                                                unique_topic: Callable[[], str]) -> None:
    cluster = distributed_cluster(2)
    workers = cluster.workers  # type: ignore[attr-defined]
    leader = leader_of(workers)
    follower = next(w for w in workers if w is not leader)

    # A connector named "offsets", STOPPED: its deletion is what a collapsed path would do.
    victim = "offsets"
    created = follower.client.post("/connectors", json={
        "name": victim, "initial_state": "STOPPED",
        "config": {"connector.class": FILE_SOURCE, "topic": unique_topic(),
                   "file": "/dev/null"}})
    assert created.status_code == 201, created.text
    wait_until(lambda: victim in leader.client.get("/connectors").json(), timeout=30,
               message="the leader lists the connector")

    # Percent-encoded dots, through httpx (which keeps them as sent) ...
    encoded = follower.client.delete("/connectors/%2e/offsets")
    assert encoded.status_code == 404, encoded.text
    assert encoded.json() == {"error_code": 404, "message": "Connector . not found"}
    # ... and literal ones, on a raw socket (httpx would resolve them before sending).
    literal = exchange(port_of(follower.url), head("DELETE", "/connectors/./offsets",
                                                   [("Connection", "close")]))
    assert literal.status == 404, literal
    assert literal.json()["message"] == "Connector . not found"
    for worker in (leader, follower):
        assert victim in worker.client.get("/connectors").json()
        assert worker.client.get(f"/connectors/{victim}").status_code == 200

    # Names a path cannot carry, refused at create on either worker.
    for worker in (leader, follower):
        for name in ("a/b", ".", "..", "tab\tname"):
            refused = worker.client.post("/connectors", json={
                "name": name, "config": {"connector.class": FILE_SOURCE,
                                         "topic": unique_topic(), "file": "/dev/null"}})
            assert refused.status_code == 400, (name, refused.text)
            message = refused.json()["message"]
            assert "name" in message, message
            if "\t" not in name:
                assert "may not contain '/' nor be '.' or '..'" in message, message
    names = leader.client.get("/connectors").json()
    assert names == [victim], names
    # The rule is in validation too: the answer names the key.
    validated = leader.client.put(
        "/connector-plugins/FileStreamSource/config/validate",
        json={"connector.class": FILE_SOURCE, "name": "x/y", "topic": "t",
              "file": "/dev/null"})
    assert validated.status_code == 200, validated.text
    errors = {c["value"]["name"]: c["value"]["errors"] for c in validated.json()["configs"]}
    assert any("may not contain '/'" in e for e in errors["name"]), errors["name"]

    # The internal route, unsigned: answered before any of its 5 MiB body is sent.
    target = f"/connectors/{quote(victim)}/tasks"
    unsigned_head = head("POST", target, [("Content-Type", "application/json"),
                                          ("Content-Length", str(5 * 1024 * 1024))])
    unsigned = trickle(port_of(leader.url), [unsigned_head, b"[" * 1024], pace_s=5.0,
                       timeout_s=20)
    assert unsigned.status == 400, unsigned
    assert unsigned.json()["message"] == "Internal request missing required signature"
    assert unsigned.elapsed_s < 5.0, unsigned.elapsed_s  # before the second piece went

    # Signed with a key no worker has: 403, and the body (not JSON) was never parsed.
    forged = b"this is not JSON"
    signature = [("X-Connect-Authorization", base64.b64encode(b"\x01" * 32).decode()),
                 ("X-Connect-Request-Signature-Algorithm", "HmacSHA256"),
                 ("Content-Type", "application/json")]
    for worker in (leader, follower):
        answer = worker.client.post(target, content=forged, headers=dict(signature))
        assert answer.status_code == 403, answer.text
        assert answer.json()["message"] == "Internal request contained invalid signature."
    assert leader.client.get(f"/connectors/{victim}/tasks").json() == []
