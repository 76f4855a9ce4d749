"""The rotation's building blocks: the PATCH body, the worker URLs (given or discovered
from the cluster) and fingerprints."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from airflow_provider.certificates import rotation
from airflow_provider.exceptions import KafkaConnectConfigError, UntrustedWorkerUrlError
from airflow_provider.hooks.admin_results import ClusterMembers, WorkerReport
from airflow_provider.hooks.credential_scope import CredentialScope
from tests.unit.airflow_provider.hooks._fakes import CERTIFICATE, WORKER_REPORT

ADMIN = "admin.listeners.https.ssl."


class Cluster:
    """``get_cluster`` and each member's ``get_worker`` from canned reports."""

    def __init__(self, reports: dict[str, dict[str, Any]],
                 allowed: tuple[str, ...] = ("http://w2:8083",)) -> None:
        self.reports = reports
        self.asked: list[str | None] = []
        # w1 is the connection's worker; its allow-list admits w2 (by default).
        self.credential_scope = CredentialScope("http://w1:8083", allowed)

    def get_cluster(self) -> ClusterMembers:
        return ClusterMembers.from_json({"leader_url": None, "members": [
            {"worker_id": url, "url": url} for url in self.reports]})

    def get_worker(self, worker_url: str | None = None) -> WorkerReport:
        self.asked.append(worker_url)
        assert worker_url is not None
        return WorkerReport.from_json(self.reports[worker_url])


def report(*listeners: tuple[str, str, bool]) -> dict[str, Any]:
    body = copy.deepcopy(WORKER_REPORT)
    body["listeners"] = [{"url": url, "protocol": protocol, "admin": admin,
                          "certificate": CERTIFICATE if protocol == "https" else None}
                         for url, protocol, admin in listeners]
    return body


def test_discovery_asks_every_member_for_its_own_listeners() -> None:
    cluster = Cluster({
        "http://w1:8083": report(("http://w1:8083", "http", False),
                                 ("https://w1:8443/", "https", False),
                                 ("https://w1:9443", "https", True)),
        "http://w2:8083": report(("https://w2:8443", "https", False)),
    })
    assert rotation.discover_urls(cluster, admin=False) == ["https://w1:8443",
                                                            "https://w2:8443"]
    assert rotation.discover_urls(cluster, admin=True) == ["https://w1:9443"]
    assert cluster.asked == ["http://w1:8083", "http://w2:8083"] * 2


def test_discovery_refuses_members_outside_the_scope_before_asking_any() -> None:
    cluster = Cluster({"http://w1:8083": report(("https://w1:8443", "https", False)),
                       "http://rogue:8083": report(("https://rogue:8443", "https", False)),
                       "https://w1:8083": report(("https://w1:8443", "https", False))},
                      allowed=())
    with pytest.raises(UntrustedWorkerUrlError) as caught:
        rotation.discover_urls(cluster, admin=False)
    assert caught.value.urls == ["http://rogue:8083/", "https://w1:8083/"]
    assert "from GET /admin/cluster" in str(caught.value)
    assert cluster.asked == []  # not even the members in scope were asked


def test_discovery_without_https_listeners_fails_before_any_change() -> None:
    cluster = Cluster({"http://w1:8083": report(("http://w1:8083", "http", False))})
    with pytest.raises(KafkaConnectConfigError, match="no https listener.*http://w1:8083"):
        rotation.discover_urls(cluster, admin=False)
    with pytest.raises(KafkaConnectConfigError, match="no admin https listener"):
        rotation.discover_urls(cluster, admin=True)


@pytest.mark.parametrize(("given", "urls"), [
    (["https://w1:8443/", "https://w2:8443", "https://w1:8443"],
     ["https://w1:8443", "https://w2:8443"]),
    ('["https://w1:8443"]', ["https://w1:8443"]),
    ("https://w1:8443, https://w2:8443", ["https://w1:8443", "https://w2:8443"]),
])
def test_given_urls(given: Any, urls: list[str]) -> None:
    assert rotation.given_urls(given) == urls


def test_admin_listener_changes() -> None:
    changes = rotation.build_changes("admin.listeners", {f"{ADMIN}cipher.suites": None},
                                     {"keystore_location": "/ks.p12", "key_password": ""})
    assert changes == {f"{ADMIN}cipher.suites": None, f"{ADMIN}keystore.location": "/ks.p12"}
    with pytest.raises(ValueError, match="not TLS settings of admin.listeners"):
        rotation.build_changes("admin.listeners",
                               {"listeners.https.ssl.keystore.location": "/ks.p12"}, {})


def test_fingerprints_and_placeholders() -> None:
    colon = ":".join(["AB"] * 32)
    assert rotation.normalize_fingerprint(colon) == "ab" * 32
    with pytest.raises(ValueError, match="not a SHA-256 fingerprint"):
        rotation.normalize_fingerprint("ab" * 31)
    assert rotation.is_placeholder("${file:/x.properties:pw}")
    assert not rotation.is_placeholder("pw${x}") and not rotation.is_placeholder(None)
    assert rotation.restore_body({"a": "1", "c": "3"}, ["b", "a"]) == {"a": "1", "b": None}


def test_a_hidden_override_of_a_changed_key_stops_the_rotation_before_it_starts() -> None:
    # A worker hides a clear password from a user who is no admin principal: the restore
    # of a failed rotation could not put it back.
    snapshot = {"listeners.https.ssl.keystore.password": rotation.HIDDEN,
                "listeners.https.ssl.keystore.location": "/etc/tls/old.p12"}
    with pytest.raises(KafkaConnectConfigError, match="ssl.keystore.password") as refused:
        rotation.check_restorable(snapshot, ["listeners.https.ssl.keystore.location",
                                             "listeners.https.ssl.keystore.password"])
    assert "rest.admin.principals" in str(refused.value)
    # Keys the rotation does not change, and placeholders (shown as written), are fine.
    rotation.check_restorable(snapshot, ["listeners.https.ssl.keystore.location"])
    rotation.check_restorable({"listeners.https.ssl.keystore.password": "${file:/s:ks}"},
                              ["listeners.https.ssl.keystore.password"])
