"""A real ``connect-standalone`` worker over HTTPS: keystores, client auth, bad startup
configurations, ``admin.listeners``.

Certificates come from a test CA made here (``worker.testing.tls``); every check is a real
TLS handshake with the worker subprocess.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.conftest import StandaloneWorkerFactory
from tests.support import WorkerProcess, wait_until
from worker.testing import free_port
from worker.testing.tls import Issued, TestCA, client_context, served_fingerprint

pytestmark = pytest.mark.integration

PASSWORD = "Worker-Keystore-Pw-77"
P = "listeners.https."


@pytest.fixture(scope="module")
def ca() -> TestCA:
    return TestCA()


def pkcs12_props(path: Path, issued: Issued, prefix: str = P) -> dict[str, object]:
    return {f"{prefix}ssl.keystore.location": issued.write_pkcs12(path, PASSWORD),
            f"{prefix}ssl.keystore.password": PASSWORD}


def test_https_listener_with_pkcs12_next_to_http(
        standalone_worker: StandaloneWorkerFactory, tmp_path: Path, ca: TestCA) -> None:
    issued = ca.issue_server()
    http_port = free_port()
    worker = standalone_worker(pkcs12_props(tmp_path / "k.p12", issued), scheme="https",
                               ssl_context=client_context(ca),
                               extra_listeners=[f"http://127.0.0.1:{http_port}"])
    assert served_fingerprint(worker.url, ca=ca) == issued.sha256
    assert worker.client.get("/connectors").json() == []
    assert httpx.get(f"http://127.0.0.1:{http_port}/connectors", timeout=5).json() == []
    with pytest.raises(httpx.ConnectError):  # an untrusting client refuses the worker
        httpx.get(f"{worker.url}/", timeout=5)
    assert PASSWORD not in worker.log_tail(100000)


def test_https_listener_with_pem_keystore(standalone_worker: StandaloneWorkerFactory,
                                          tmp_path: Path, ca: TestCA) -> None:
    issued = ca.issue_server()
    worker = standalone_worker({
        "ssl.keystore.type": "PEM",  # the unprefixed fallback, as in Kafka
        "ssl.keystore.location": issued.write_pem(tmp_path / "k.pem", PASSWORD),
        "ssl.key.password": PASSWORD}, scheme="https", ssl_context=client_context(ca))
    assert served_fingerprint(worker.url, ca=ca) == issued.sha256
    assert worker.client.get("/").status_code == 200


@pytest.mark.parametrize("mode", ["required", "requested"])
def test_client_auth(standalone_worker: StandaloneWorkerFactory, tmp_path: Path, ca: TestCA,
                     mode: str) -> None:
    trusted = ca.issue_client("alice")
    worker = standalone_worker({
        **pkcs12_props(tmp_path / "k.p12", ca.issue_server()),
        f"{P}ssl.client.auth": mode,
        f"{P}ssl.truststore.location": ca.write_pem_truststore(tmp_path / "ca.pem"),
        f"{P}ssl.truststore.type": "PEM"}, scheme="https",
        ssl_context=client_context(ca, trusted))
    assert worker.client.get("/").status_code == 200  # trusted client certificate
    anonymous = httpx.Client(verify=client_context(ca), timeout=5)
    if mode == "required":
        with pytest.raises(httpx.TransportError):
            anonymous.get(f"{worker.url}/")
    else:
        assert anonymous.get(f"{worker.url}/").status_code == 200
    anonymous.close()


def _bad_configs(tmp_path: Path, ca: TestCA) -> dict[str, tuple[dict[str, object], str, str]]:
    """name -> (properties, key the error names, words of the error)."""
    issued = ca.issue_server()
    good = issued.write_pkcs12(tmp_path / "good.p12", PASSWORD)
    no_key = issued.write_pkcs12(tmp_path / "nokey.p12", PASSWORD, include_key=False)
    mismatched = Issued(issued.certificate, ca.issue_server().key, issued.chain).write_pem(
        tmp_path / "mixed.pem")
    jks = tmp_path / "k.jks"
    jks.write_bytes(b"\xfe\xed\xfe\xed" + bytes(60))
    location, password = f"{P}ssl.keystore.location", f"{P}ssl.keystore.password"
    return {
        "missing": ({location: tmp_path / "absent.p12", password: PASSWORD}, location,
                    "does not exist"),
        "wrong password": ({location: good, password: PASSWORD + "-wrong"}, password,
                           "wrong password"),
        "no key": ({location: no_key, password: PASSWORD}, location, "no private key"),
        "mismatch": ({location: mismatched, f"{P}ssl.keystore.type": "PEM",
                      password: PASSWORD}, location, "does not match"),
        "jks": ({location: jks, password: PASSWORD}, location, "keytool -importkeystore"),
        "cipher": ({location: good, password: PASSWORD,
                    f"{P}ssl.cipher.suites": "TLS_NO_SUCH_SUITE"}, f"{P}ssl.cipher.suites",
                   "unknown or unsupported cipher suite"),
    }


def test_bad_tls_configs_fail_startup_naming_the_key(
        standalone_worker: StandaloneWorkerFactory, tmp_path: Path, ca: TestCA) -> None:
    cases = _bad_configs(tmp_path, ca)
    workers: dict[str, WorkerProcess] = {}
    for name, (props, _, _) in cases.items():  # launched together: one wait for all
        workers[name] = standalone_worker(props, scheme="https", start=False).launch()
    wait_until(lambda: not any(w.is_running for w in workers.values()), timeout=90,
               message="every worker with a bad TLS config exits")
    for name, worker in workers.items():
        _, key, words = cases[name]
        assert worker.returncode == 1, f"{name}: {worker.log_tail()}"
        log = worker.log_tail(100000)
        assert f"Failed to start the worker: Invalid value for configuration {key}" in log, \
            f"{name}: {log[-2000:]}"
        assert words in log, name
        assert PASSWORD not in log, f"{name}: the password reached the log"
        assert "PRIVATE KEY" not in log


def test_admin_listeners(standalone_worker: StandaloneWorkerFactory) -> None:
    admin_port = free_port()
    # Also proves admin.listeners no longer reaches the Kafka admin client (startup crash).
    worker = standalone_worker({"admin.listeners": f"http://127.0.0.1:{admin_port}"})
    admin = f"http://127.0.0.1:{admin_port}"
    assert httpx.get(f"{admin}/admin/loggers", timeout=5).status_code == 200
    regular = worker.client.get("/admin/loggers")
    assert regular.status_code == 404
    assert regular.json() == {"error_code": 404, "message": "HTTP 404 Not Found"}
    assert worker.client.get("/connectors").status_code == 200
    assert httpx.get(f"{admin}/connectors", timeout=5).status_code == 404

    disabled = standalone_worker({"admin.listeners": ""})
    assert disabled.client.get("/admin/loggers").status_code == 404
    assert disabled.client.get("/connectors").status_code == 200
