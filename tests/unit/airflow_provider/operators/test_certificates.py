"""The rotation operator's sequence, its checks before any change, and its restore path,
against an in-memory stand-in for the dynamic-config API whose https listeners are real
local TLS servers (the real worker: tests/integration/test_certificate_rotation.py)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from airflow.sdk.exceptions import TaskDeferralError, TaskDeferred
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12

from airflow_provider.certificates.keystores import issue_keystore, resolve_locally
from airflow_provider.exceptions import (
    BadRequestError,
    CertificateNotServedError,
    InvalidWorkerConfigError,
    KafkaConnectConfigError,
    ServerError,
    UntrustedWorkerUrlError,
)
from airflow_provider.hooks.admin_results import (
    ClusterMembers,
    DynamicConfigValidation,
    WorkerConfigOverrides,
    WorkerReport,
)
from airflow_provider.hooks.connection import ConnectionSettings
from airflow_provider.hooks.credential_scope import CredentialScope
from airflow_provider.operators.certificates import KafkaConnectRotateCertificateOperator
from airflow_provider.triggers.certificates import ServedCertificateTrigger
from tests.unit.airflow_provider._fakes import FakeTI
from tests.unit.airflow_provider._tls_server import (
    Ca,
    ServerCert,
    TlsServer,
    make_ca,
    tls_server,
)

SSL = "listeners.https.ssl."
LOC, PW, TYPE = f"{SSL}keystore.location", f"{SSL}keystore.password", f"{SSL}keystore.type"
CLEAR_PASSWORD = "clear-keystore-pw-never-logged"


class FakeCluster:
    """Workers whose https listeners are ``servers``: a PATCH makes every server serve the
    certificate of the keystore location now in force (``certs``; an unknown location is
    one the workers could not load: they keep the old certificate)."""

    def __init__(self, ca: Ca, servers: list[TlsServer], certs: dict[str, ServerCert], *,
                 overrides: dict[str, str] | None = None, errors: dict[str, list[str]] | None
                 = None, patch_failures: list[Exception] | None = None) -> None:
        self.ca, self.servers, self.certs = ca, servers, certs
        self.overrides = dict(overrides or {})
        self.errors = errors or {}
        self.patch_failures = list(patch_failures or [])
        self.version = 0
        self.calls: list[str] = []
        self.patches: list[dict[str, Any]] = []
        # w1 is the connection's worker; its allow-list admits the other member, w0.
        self.settings = ConnectionSettings(base_url="http://w1", ca_bundle=str(ca.cert_path),
                                           allowed_worker_urls=("http://w0",))
        self.credential_scope = CredentialScope.of(self.settings)

    def validate_dynamic_worker_config(self, changes: dict) -> DynamicConfigValidation:
        self.calls.append("validate")
        return DynamicConfigValidation.from_json(
            {"error_count": sum(map(len, self.errors.values())), "errors": self.errors})

    def get_dynamic_worker_config(self) -> WorkerConfigOverrides:
        self.calls.append("get_config")
        return WorkerConfigOverrides.from_json(dict(self.overrides))

    def patch_dynamic_worker_config(self, changes: dict) -> WorkerConfigOverrides:
        self.calls.append("patch")
        self.patches.append(dict(changes))
        if self.patch_failures:
            raise self.patch_failures.pop(0)
        for key, value in changes.items():
            if value is None:
                self.overrides.pop(key, None)
            else:
                self.overrides[key] = value
        self.version += 1
        cert = self.certs.get(self.overrides.get(LOC, "static"))
        for server in self.servers if cert else ():
            server.serve(cert)
        return WorkerConfigOverrides.from_json(dict(self.overrides))

    def get_cluster(self) -> ClusterMembers:
        self.calls.append("cluster")
        return ClusterMembers.from_json({"leader_url": "http://w1", "members": [
            {"worker_id": f"w{n}", "url": f"http://w{n}"} for n in range(len(self.servers))]})

    def get_worker(self, worker_url: str | None = None) -> WorkerReport:
        self.calls.append(f"worker {worker_url}")
        index = 0 if worker_url is None else int(worker_url.removeprefix("http://w"))
        server = self.servers[index]
        cert = self.certs.get(self.overrides.get(LOC, "static")) or self.certs["static"]
        listener = {"url": server.url, "protocol": "https", "admin": False, "certificate": {
            "sha256": cert.sha256, "subject": "CN=x", "issuer": "CN=test-ca", "serial": "1",
            "not_before": "2026-01-01T00:00:00+00:00",
            "not_after": "2027-01-01T00:00:00+00:00"}}
        return WorkerReport.from_json({
            "worker_id": f"w{index}", "url": f"http://w{index}", "listeners": [listener],
            "dynamic_config": {"version": self.version, "overrides": dict(self.overrides),
                               "last_validation": {"status": "ok", "message": None,
                                                   "timestamp": None}}})

    def served(self) -> set[str]:
        from airflow_provider.hooks.tls import TlsClientOptions, served_certificate

        options = TlsClientOptions(ca_bundle=str(self.ca.cert_path))
        return {served_certificate(s.url, options).sha256 for s in self.servers}


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> tuple[Ca, ServerCert, ServerCert]:
    directory = tmp_path_factory.mktemp("tls")
    ca = make_ca(directory)
    return ca, ca.issue(directory, "old"), ca.issue(directory, "new")


@pytest.fixture
def cluster(pki):
    """Two workers serving the old certificate; /ks/new.p12 holds the new one."""
    ca, old, new = pki
    with tls_server(old) as first, tls_server(old) as second:
        yield FakeCluster(ca, [first, second], {"static": old, "/ks/new.p12": new})


def rotate(fake: FakeCluster, **kwargs: Any) -> KafkaConnectRotateCertificateOperator:
    kwargs.setdefault("verify_timeout", 3.0)
    op = KafkaConnectRotateCertificateOperator(task_id="rotate", poll_interval=0.05,
                                               deferrable=kwargs.pop("deferrable", False),
                                               **kwargs)
    op.__dict__["hook"] = fake  # the cached_property's slot
    return op


def test_rotation_patches_and_verifies_every_worker(cluster: FakeCluster, pki) -> None:
    _, old, new = pki
    ti = FakeTI()
    result = rotate(cluster, keystore_location="/ks/new.p12", keystore_type="PKCS12",
                    keystore_password="${file:/ks/new.properties:password}",
                    expected_fingerprint=new.sha256.upper()).execute({"ti": ti})
    assert cluster.calls == ["validate", "cluster", "worker http://w0", "worker http://w1",
                             "get_config", "patch"]
    assert cluster.patches == [{LOC: "/ks/new.p12", TYPE: "PKCS12",
                                PW: "${file:/ks/new.properties:password}"}]
    assert cluster.served() == {new.sha256}
    urls = [server.url for server in cluster.servers]
    assert result["workers"] == urls
    assert result["fingerprint_before"] == {url: old.sha256 for url in urls}
    assert result["fingerprint_after"] == new.sha256
    assert result["keys"] == sorted([LOC, PW, TYPE])
    assert result["not_after"] == new.cert.not_valid_after_utc.isoformat()
    assert 0 <= result["served_within_s"] <= result["duration_s"]
    assert ti.pushed["overrides_snapshot"] == {}
    assert ti.pushed["rotation_state"]["expected"] == new.sha256


def _pem_files(directory: Path, keystore: Path, password: str) -> ServerCert:
    loaded = pkcs12.load_pkcs12(keystore.read_bytes(), password.encode())
    assert loaded.key is not None and loaded.cert is not None
    cert_path, key_path = directory / f"{keystore.stem}.pem", directory / f"{keystore.stem}.key"
    cert_path.write_bytes(loaded.cert.certificate.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(loaded.key.private_bytes(serialization.Encoding.PEM,
                                                  serialization.PrivateFormat.PKCS8,
                                                  serialization.NoEncryption()))
    return ServerCert(loaded.cert.certificate, cert_path, key_path)


def test_expected_fingerprint_from_the_new_keystore(cluster: FakeCluster, pki,
                                                    tmp_path: Path) -> None:
    ca = pki[0]
    issued = issue_keystore(tmp_path, ca_cert=ca.cert_path, ca_key=ca.key_path,
                            names=["127.0.0.1"])
    password = resolve_locally(issued.password_placeholder)
    assert password is not None
    cluster.certs[str(issued.path)] = _pem_files(tmp_path, issued.path, password)
    result = rotate(cluster, keystore_location=str(issued.path),
                    keystore_password=issued.password_placeholder).execute({"ti": FakeTI()})
    assert result["fingerprint_after"] == issued.certificate.sha256
    assert cluster.served() == {issued.certificate.sha256}
    assert "worker None" not in cluster.calls  # not needed: the keystore was readable


def test_expected_fingerprint_from_the_worker_report(cluster: FakeCluster, pki) -> None:
    new = pki[2]
    result = rotate(cluster, keystore_location="/ks/new.p12",
                    keystore_password="${vault:connect:ks}").execute({"ti": FakeTI()})
    assert result["fingerprint_after"] == new.sha256
    assert cluster.calls.count("worker None") == 2  # version before, then the new cert


@pytest.mark.parametrize(("kwargs", "error", "message"), [
    ({}, ValueError, "nothing to change"),
    ({"overrides": {LOC: "/a"}, "keystore_location": "/b"}, ValueError, "given twice"),
    ({"overrides": {"admin.listeners.https.ssl.keystore.location": "/a"}}, ValueError,
     "rotate one listener kind per task"),
    ({"overrides": "{not json"}, ValueError, "not valid JSON"),
    ({"overrides": {LOC: 3}}, ValueError, "must be a string or None"),
    ({"keystore_location": "/ks/new.p12", "expected_fingerprint": "abc"}, ValueError,
     "not a SHA-256 fingerprint"),
    ({"keystore_location": "/ks/new.p12", "worker_urls": ["http://w1:8083"]},
     KafkaConnectConfigError, "not an https:// URL"),
])
def test_bad_requests_change_nothing(cluster: FakeCluster, pki, kwargs, error,
                                     message: str) -> None:
    ti = FakeTI()
    with pytest.raises(error, match=message):
        rotate(cluster, **kwargs).execute({"ti": ti})
    assert "patch" not in cluster.calls and ti.pushed == {}
    assert cluster.served() == {pki[1].sha256}


def test_listener_is_checked_when_the_dag_is_parsed() -> None:
    with pytest.raises(ValueError, match="listener must be one of"):
        KafkaConnectRotateCertificateOperator(task_id="t", listener="rest")


def test_a_member_outside_the_credential_scope_fails_before_any_change(
        cluster: FakeCluster) -> None:
    # Without the allow-list, the other member w0 may not receive the credentials.
    cluster.credential_scope = CredentialScope.of(ConnectionSettings(base_url="http://w1"))
    ti = FakeTI()
    with pytest.raises(UntrustedWorkerUrlError, match="http://w0/ .from GET /admin/cluster"):
        rotate(cluster, keystore_location="/ks/new.p12").execute({"ti": ti})
    assert cluster.calls == ["validate", "cluster"] and ti.pushed == {}


def rotate_hook(**kwargs: Any) -> Any:
    return KafkaConnectRotateCertificateOperator(task_id="t", kafka_connect_conn_id="kc",
                                                 **kwargs).hook


def test_the_operator_hands_its_knowing_flag_to_the_hook() -> None:
    assert rotate_hook().allow_discovered_workers is False
    assert rotate_hook(allow_discovered_workers=True).allow_discovered_workers is True


def test_validation_errors_fail_before_any_change(cluster: FakeCluster) -> None:
    cluster.errors = {LOC: ["file /ks/x.p12 does not exist"], PW: ["wrong password"]}
    ti = FakeTI()
    with pytest.raises(InvalidWorkerConfigError) as caught:
        rotate(cluster, keystore_location="/ks/x.p12",
               keystore_password=CLEAR_PASSWORD).execute({"ti": ti})
    assert caught.value.errors == [f"{LOC}: file /ks/x.p12 does not exist",
                                   f"{PW}: wrong password"]
    assert cluster.calls == ["validate"] and ti.pushed == {}


def test_a_certificate_never_served_is_rolled_back(cluster: FakeCluster, pki,
                                                   caplog: pytest.LogCaptureFixture) -> None:
    _, old, new = pki
    cluster.overrides = {LOC: "static", PW: "${file:/ks/old.properties:password}"}
    caplog.set_level(logging.DEBUG)
    ti = FakeTI()
    with pytest.raises(CertificateNotServedError) as caught:
        # The workers cannot load /ks/broken.p12 and keep the old certificate.
        rotate(cluster, keystore_location="/ks/broken.p12", keystore_password=CLEAR_PASSWORD,
               expected_fingerprint=new.sha256, verify_timeout=0.5).execute({"ti": ti})
    assert cluster.patches[-1] == {LOC: "static", PW: "${file:/ks/old.properties:password}"}
    assert cluster.overrides == {LOC: "static", PW: "${file:/ks/old.properties:password}"}
    assert cluster.served() == {old.sha256}
    assert ti.pushed["overrides_snapshot"] == cluster.overrides
    (note,) = caught.value.__notes__
    assert "were restored" in note and "serves its previous certificate again" in note
    assert CLEAR_PASSWORD not in caplog.text + str(caught.value) + note


def test_a_failure_after_the_patch_restores_the_static_settings(cluster: FakeCluster,
                                                                pki) -> None:
    _, old, new = pki

    class Failing(KafkaConnectRotateCertificateOperator):
        def on_patched(self, context: Any, overrides: dict[str, str]) -> None:
            assert overrides[LOC] == "/ks/new.p12"
            raise RuntimeError("injected after the PATCH")

    op = Failing(task_id="rotate", keystore_location="/ks/new.p12", poll_interval=0.05,
                 expected_fingerprint=new.sha256, verify_timeout=3, deferrable=False)
    op.__dict__["hook"] = cluster
    with pytest.raises(RuntimeError, match="injected") as caught:
        op.execute({"ti": FakeTI()})
    assert cluster.patches == [{LOC: "/ks/new.p12"}, {LOC: None}]
    assert cluster.overrides == {} and cluster.served() == {old.sha256}
    assert "back to the static value: ['listeners.https.ssl.keystore.location']" in \
        caught.value.__notes__[0]


def test_a_refused_patch_needs_no_restore(cluster: FakeCluster, pki) -> None:
    cluster.patch_failures = [BadRequestError(400, f"{LOC}: cannot load")]
    with pytest.raises(BadRequestError):
        rotate(cluster, keystore_location="/ks/new.p12",
               expected_fingerprint=pki[2].sha256).execute({"ti": FakeTI()})
    assert cluster.calls.count("patch") == 1


def test_a_failed_restore_is_reported_on_the_original_error(cluster: FakeCluster, pki) -> None:
    cluster.patch_failures = [ServerError(500, "the store write failed"),
                              ServerError(500, "still failing")]
    with pytest.raises(ServerError, match="the store write failed") as caught:
        rotate(cluster, keystore_location="/ks/new.p12",
               expected_fingerprint=pki[2].sha256).execute({"ti": FakeTI()})
    (note,) = caught.value.__notes__
    assert "failed too" in note and "still failing" in note and "overrides_snapshot" in note


def test_deferred_rotation_resumes_with_the_summary(cluster: FakeCluster, pki) -> None:
    _, old, new = pki
    ti = FakeTI()
    op = rotate(cluster, keystore_location="/ks/new.p12", expected_fingerprint=new.sha256,
                deferrable=True)
    with pytest.raises(TaskDeferred) as deferred:
        op.execute({"ti": ti})
    trigger = deferred.value.trigger
    assert isinstance(trigger, ServedCertificateTrigger)
    urls = [server.url for server in cluster.servers]
    assert trigger.expected == {url: new.sha256 for url in urls}
    assert deferred.value.method_name == "execute_complete"
    event = {"status": "success", "served": {url: {"sha256": new.sha256,
                                                   "not_after": "2027-01-01"} for url in urls}}
    result = op.execute_complete({"ti": ti}, event)
    assert result["fingerprint_after"] == new.sha256 and result["workers"] == urls
    assert result["not_after"] == "2027-01-01"


def test_deferred_timeout_restores_the_snapshot(cluster: FakeCluster, pki) -> None:
    _, old, new = pki
    ti = FakeTI()
    op = rotate(cluster, keystore_location="/ks/new.p12", expected_fingerprint=new.sha256,
                deferrable=True)
    with pytest.raises(TaskDeferred):
        op.execute({"ti": ti})
    assert cluster.served() == {new.sha256}
    with pytest.raises(CertificateNotServedError, match="did not serve") as caught:
        op.execute_complete({"ti": ti}, {"status": "timeout", "message": "did not serve",
                                         "served": {}})
    assert cluster.served() == {old.sha256} and cluster.overrides == {}
    assert "were restored" in caught.value.__notes__[0]


def test_a_trigger_that_failed_in_the_triggerer_restores_too(cluster: FakeCluster,
                                                             pki) -> None:
    _, old, new = pki
    ti = FakeTI()
    op = rotate(cluster, keystore_location="/ks/new.p12", expected_fingerprint=new.sha256,
                deferrable=True)
    with pytest.raises(TaskDeferred):
        op.execute({"ti": ti})
    with pytest.raises(TaskDeferralError):
        op.resume_execution("__fail__", {"error": "Trigger failure"}, {"ti": ti})
    assert cluster.served() == {old.sha256} and cluster.overrides == {}
