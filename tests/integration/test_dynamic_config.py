"""The dynamic worker configuration on a real standalone worker over real HTTPS.

A ``connect-standalone`` subprocess serves an https listener with a keystore from a test CA
(``worker.testing.tls``); every check of the served certificate is a real TLS handshake.
Rotations go through ``PATCH /admin/dynamic-worker-config`` and must change the served
fingerprint with the same PID; bad keystores must be refused naming the problem while the
old certificate keeps serving; ``DELETE`` restores the static certificate; a restarted
worker serves what was stored. Passwords, including one resolved from a
``${file:...}`` placeholder, never reach the worker's log or an answer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support import WorkerProcess
from worker.testing.tls import Issued, TestCA, client_context, served_fingerprint

pytestmark = pytest.mark.integration

BASE = "/admin/dynamic-worker-config"
KEYSTORE = "listeners.https.ssl.keystore.location"
PASSWORD = "listeners.https.ssl.keystore.password"
TYPE = "listeners.https.ssl.keystore.type"
STATIC_PW = "static-Secret-4711"
ROTATED_PW = "rotated-Secret-0815"
WRONG_PW = "wrong-Secret-1234"
SECRETS = (STATIC_PW, ROTATED_PW, WRONG_PW)


@dataclass
class Tls:
    """The CA, the static keystore and where the test writes more."""

    ca: TestCA
    directory: Path
    static: Issued
    secrets_file: Path

    def keystore(self, name: str, password: str = STATIC_PW) -> tuple[Issued, Path]:
        issued = self.ca.issue_server(common_name=name)
        return issued, issued.write_pkcs12(self.directory / f"{name}.p12", password)


@pytest.fixture
def tls(tmp_path: Path) -> Tls:
    ca = TestCA()
    directory = tmp_path / "tls"
    static = ca.issue_server(common_name="static")
    static.write_pkcs12(directory / "static.p12", STATIC_PW)
    secrets_file = directory / "secrets.properties"
    secrets_file.write_text(f"rotated={ROTATED_PW}\n", encoding="utf-8")
    return Tls(ca, directory, static, secrets_file)


@pytest.fixture
def worker(standalone_worker: Callable[..., WorkerProcess], tls: Tls) -> WorkerProcess:
    return standalone_worker({
        KEYSTORE: tls.directory / "static.p12", PASSWORD: STATIC_PW, TYPE: "PKCS12",
        "config.providers": "file",
        "config.providers.file.class": "org.apache.kafka.common.config.provider."
                                       "FileConfigProvider",
    }, scheme="https", ssl_context=client_context(tls.ca))


def served(worker: WorkerProcess, tls: Tls) -> str:
    return served_fingerprint(worker.url, ca=tls.ca)


def admin_worker(worker: WorkerProcess) -> dict[str, Any]:
    response = worker.client.get("/admin/worker")
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def https_certificate(body: dict[str, Any]) -> dict[str, Any]:
    [listener] = [lst for lst in body["listeners"] if lst["protocol"] == "https"]
    certificate: dict[str, Any] = listener["certificate"]
    return certificate


def assert_no_secret(worker: WorkerProcess, *texts: str) -> None:
    logged = worker.log_path.read_text(encoding="utf-8", errors="replace")
    for secret in SECRETS:
        assert secret not in logged, f"{secret} in {worker.log_path}"
        for text in texts:
            assert secret not in text


def test_patch_rotates_the_certificate_in_place_and_delete_restores_it(
        worker: WorkerProcess, tls: Tls) -> None:
    pid = worker.pid
    assert served(worker, tls) == tls.static.sha256
    before = admin_worker(worker)
    assert before["dynamic_config"] == {"version": 0, "overrides": {}, "last_validation": {
        "status": "none", "message": None, "timestamp": None}}
    assert https_certificate(before)["sha256"] == tls.static.sha256
    assert worker.client.get(BASE).json() == {}

    rotated, location = tls.keystore("rotated", ROTATED_PW)
    change = {KEYSTORE: str(location),
              PASSWORD: f"${{file:{tls.secrets_file}:rotated}}"}  # resolved on the worker
    validation = worker.client.post(f"{BASE}/validate", json=change)
    assert validation.status_code == 200
    assert validation.json() == {"error_count": 0, "errors": {}}
    assert served(worker, tls) == tls.static.sha256  # validation changed nothing

    patched = worker.client.patch(BASE, json=change)
    assert patched.status_code == 200, patched.text
    assert patched.json() == change
    # PATCH answers once applied: the very next handshake gets the new certificate.
    assert served(worker, tls) == rotated.sha256
    assert worker.client.get(BASE).json() == change  # raw: the placeholder as written
    after = admin_worker(worker)
    assert after["dynamic_config"]["version"] == 1
    assert after["dynamic_config"]["overrides"] == change
    assert after["dynamic_config"]["last_validation"]["status"] == "ok"
    certificate = https_certificate(after)
    assert certificate["sha256"] == rotated.sha256
    assert certificate["subject"] == rotated.subject
    assert certificate["issuer"] == tls.ca.certificate.subject.rfc4514_string()

    # Removing one override: the location alone would meet the static password. Refused.
    refused = worker.client.delete(f"{BASE}/{PASSWORD}")
    assert refused.status_code == 400
    assert PASSWORD in refused.json()["message"]
    assert "wrong password" in refused.json()["message"]
    assert served(worker, tls) == rotated.sha256

    # A keystore with the static password: one override, and DELETE brings static back.
    second, second_location = tls.keystore("second")
    assert worker.client.patch(BASE, json={KEYSTORE: str(second_location),
                                           PASSWORD: None}).status_code == 200
    assert served(worker, tls) == second.sha256
    assert worker.client.delete(f"{BASE}/{KEYSTORE}").status_code == 204
    assert served(worker, tls) == tls.static.sha256
    assert worker.client.get(BASE).json() == {}
    final = admin_worker(worker)
    assert final["dynamic_config"]["version"] == 3
    assert https_certificate(final)["sha256"] == tls.static.sha256
    missing = worker.client.delete(f"{BASE}/{KEYSTORE}")
    assert missing.status_code == 404
    assert worker.pid == pid  # no restart, ever
    assert_no_secret(worker, patched.text, refused.text, final.__repr__())


def mismatched_pem(tls: Tls) -> tuple[Path, dict[str, str]]:
    """A PEM keystore whose key belongs to another certificate."""
    one, other = tls.ca.issue_server(common_name="one"), tls.ca.issue_server(common_name="other")
    path = tls.directory / "mismatched.pem"
    path.write_text(one.key_pem() + other.chain_pem(), encoding="utf-8")
    return path, {TYPE: "PEM"}


def without_key(tls: Tls) -> tuple[Path, dict[str, str]]:
    issued = tls.ca.issue_server(common_name="keyless")
    return issued.write_pkcs12(tls.directory / "keyless.p12", STATIC_PW,
                               include_key=False), {}


def wrong_password(tls: Tls) -> tuple[Path, dict[str, str]]:
    _, path = tls.keystore("other-password", WRONG_PW)
    return path, {}


def missing_file(tls: Tls) -> tuple[Path, dict[str, str]]:
    return tls.directory / "nowhere.p12", {}


@pytest.mark.parametrize(("make", "key", "problem"), [
    (missing_file, KEYSTORE, "does not exist"),
    (wrong_password, PASSWORD, "wrong password"),
    (without_key, KEYSTORE, "holds no private key"),
    (mismatched_pem, KEYSTORE, "does not match its certificate"),
], ids=["missing-file", "wrong-password", "no-key", "mismatched-key"])
def test_a_bad_keystore_is_refused_and_the_old_certificate_keeps_serving(
        worker: WorkerProcess, tls: Tls,
        make: Callable[[Tls], tuple[Path, dict[str, str]]], key: str, problem: str) -> None:
    location, extra = make(tls)
    change = {KEYSTORE: str(location), **extra}
    validation = worker.client.post(f"{BASE}/validate", json=change)
    assert validation.status_code == 200
    body = validation.json()
    assert body["error_count"] == 1 and list(body["errors"]) == [key]
    assert problem in body["errors"][key][0]

    patched = worker.client.patch(BASE, json=change)
    assert patched.status_code == 400
    message = patched.json()["message"]
    assert key in message and problem in message
    assert served(worker, tls) == tls.static.sha256
    assert worker.client.get(BASE).json() == {}
    assert admin_worker(worker)["dynamic_config"]["version"] == 0
    assert_no_secret(worker, validation.text, patched.text)


def test_keys_outside_the_whitelist_and_bad_bodies_are_400(worker: WorkerProcess,
                                                           tls: Tls) -> None:
    refused = worker.client.patch(BASE, json={"offset.flush.interval.ms": "10"})
    assert refused.status_code == 400
    assert "offset.flush.interval.ms" in refused.json()["message"]
    assert KEYSTORE in refused.json()["message"]  # what may be changed is listed
    for body in (b"[]", b'{"listeners.https.ssl.client.auth": 1}', b"{"):
        answer = worker.client.patch(BASE, content=body,
                                     headers={"content-type": "application/json"})
        assert answer.status_code == 400, body
    assert worker.client.get(BASE).json() == {}


def test_a_restarted_worker_serves_the_stored_overrides(worker: WorkerProcess,
                                                        tls: Tls) -> None:
    rotated, location = tls.keystore("rotated")
    assert worker.client.patch(BASE, json={KEYSTORE: str(location)}).status_code == 200
    assert worker.client.patch(BASE, json={
        "listeners.https.ssl.client.auth": "none"}).status_code == 200
    worker.restart()
    # Applied before REST serves: the first handshake already gets the stored certificate.
    assert served(worker, tls) == rotated.sha256
    state = admin_worker(worker)["dynamic_config"]
    assert state["version"] == 2
    assert state["overrides"] == {KEYSTORE: str(location),
                                  "listeners.https.ssl.client.auth": "none"}
    assert state["last_validation"]["status"] == "ok"
    assert_no_secret(worker)
