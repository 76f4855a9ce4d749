"""``RestServer`` over real TLS: https listeners, client auth, hot reload, admin listeners.

Every check is a real handshake with certificates of a test CA made here; the server runs
in this process (uvloop, uvicorn) over the in-memory ``FakeHerder``.
"""

from __future__ import annotations

import hashlib
import logging
import socket
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from tests.support import wait_until
from tests.unit.worker.rest.conftest import FakeHerder
from worker.errors import ConfigError, NotLeaderError
from worker.herder.distributed.task_config_sender import TaskConfigSender
from worker.rest.app import create_app
from worker.rest.server import RestServer
from worker.testing.tls import Issued, TestCA, client_context, served_fingerprint

PASSWORD = "rotate-me-pw-123"
P = "listeners.https."


@pytest.fixture(scope="module")
def ca() -> TestCA:
    return TestCA()


def keystore(tmp_path: Path, issued: Issued, name: str, prefix: str = P,
             password: str = PASSWORD) -> dict[str, str]:
    path = issued.write_pkcs12(tmp_path / f"{name}.p12", password)
    return {f"{prefix}ssl.keystore.location": str(path),
            f"{prefix}ssl.keystore.password": password}


@contextmanager
def serving(herder: FakeHerder, config: dict[str, str], listeners: list[str] | None = None,
            admin_listeners: list[str] | None = None) -> Iterator[RestServer]:
    server = RestServer(create_app(herder), listeners or ["https://127.0.0.1:0"],
                        admin_listeners=admin_listeners, tls_config=config)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def _get(tls: ssl.SSLSocket, path: str = "/") -> int:
    """One HTTP/1.1 keep-alive request on an open TLS socket; the status code."""
    tls.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = tls.recv(4096)
        assert chunk, "connection closed"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                  if line.lower().startswith(b"content-length:"))
    while len(body) < length:
        body += tls.recv(4096)
    return int(head.split(b" ")[1])


def test_https_listener_serves_the_keystore(tmp_path: Path, ca: TestCA,
                                            herder: FakeHerder) -> None:
    issued = ca.issue_server()
    with serving(herder, keystore(tmp_path, issued, "a"),
                 ["https://127.0.0.1:0", "http://127.0.0.1:0"]) as server:
        https_url, http_url = server.urls
        assert https_url.startswith("https://") and http_url.startswith("http://")
        # 127.0.0.1 as host: the client sends no SNI, the certificate is served anyway.
        assert served_fingerprint(https_url, ca=ca) == issued.sha256
        answer = httpx.get(f"{https_url}/", verify=client_context(ca), timeout=5)
        assert answer.status_code == 200 and answer.json()["version"]
        assert httpx.get(f"{http_url}/", timeout=5).status_code == 200
        served = server.served_listeners()
        assert [(s.url, s.protocol, s.admin) for s in served] == [
            (https_url, "https", False), (http_url, "http", False)]
        assert served[0].certificate is not None
        assert served[0].certificate.sha256 == issued.sha256 and served[1].certificate is None
        assert server.reconfigurable_configs() == {
            f"{P}ssl.{k}" for k in ("keystore.location", "keystore.password", "keystore.type",
                                    "key.password", "truststore.location",
                                    "truststore.password", "truststore.type",
                                    "enabled.protocols", "cipher.suites", "client.auth")}


def test_stop_drops_idle_tls_connections_instead_of_waiting_for_them(
        tmp_path: Path, ca: TestCA, herder: FakeHerder) -> None:
    """A graceful close of an idle TLS connection waits for the client's close_notify,
    which an idle keep-alive client never sends: stop() used to take the whole graceful
    timeout whenever a client kept a connection open."""
    server = RestServer(create_app(herder), ["https://127.0.0.1:0"], shutdown_timeout=10.0,
                        tls_config=keystore(tmp_path, ca.issue_server(), "idle"))
    server.start()
    host, port = server.urls[0].removeprefix("https://").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5) as raw, \
            client_context(ca).wrap_socket(raw, server_hostname=host) as tls:
        assert _get(tls) == 200  # the connection stays open (keep-alive), idle
        stopping = threading.Thread(target=server.stop)
        stopping.start()
        stopping.join(5.0)  # well within the 10 s graceful timeout
        assert not stopping.is_alive(), "stop() waited for an idle keep-alive connection"
        assert _dropped(tls)


def _dropped(tls: ssl.SSLSocket) -> bool:
    """Whether the server closed the connection (an end of stream or a reset)."""
    try:
        return tls.recv(1) == b""
    except OSError:  # ssl.SSLError included: reset or truncated
        return True


def test_http_only_server_has_nothing_to_reconfigure(herder: FakeHerder) -> None:
    server = RestServer(create_app(herder), ["http://127.0.0.1:0"], tls_config={})
    assert server.reconfigurable_configs() == frozenset()


def test_bad_keystore_fails_construction(tmp_path: Path, herder: FakeHerder) -> None:
    with pytest.raises(ConfigError) as info:
        RestServer(create_app(herder), ["https://127.0.0.1:0"],
                   tls_config={f"{P}ssl.keystore.location": str(tmp_path / "missing.p12"),
                               f"{P}ssl.keystore.password": PASSWORD})
    assert info.value.key == f"{P}ssl.keystore.location" and PASSWORD not in str(info.value)


@pytest.mark.parametrize("mode", ["required", "requested"])
def test_client_auth(tmp_path: Path, ca: TestCA, herder: FakeHerder, mode: str) -> None:
    config = {**keystore(tmp_path, ca.issue_server(), "a"), f"{P}ssl.client.auth": mode,
              f"{P}ssl.truststore.location": str(ca.write_pem_truststore(tmp_path / "ca.pem")),
              f"{P}ssl.truststore.type": "PEM"}
    trusted = ca.issue_client("alice")
    stranger = TestCA("another CA").issue_client("mallory")
    with serving(herder, config) as server:
        with_cert = httpx.get(f"{server.url}/", verify=client_context(ca, trusted), timeout=5)
        assert with_cert.status_code == 200
        if mode == "required":
            with pytest.raises(httpx.TransportError):
                httpx.get(f"{server.url}/", verify=client_context(ca), timeout=5)
        else:
            assert httpx.get(f"{server.url}/", verify=client_context(ca),
                             timeout=5).status_code == 200
        with pytest.raises(httpx.TransportError):  # presented but not trusted
            httpx.get(f"{server.url}/", verify=client_context(ca, stranger), timeout=5)


def test_hot_reload_swaps_new_handshakes_only(
        tmp_path: Path, ca: TestCA, herder: FakeHerder, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    old, new = ca.issue_server(), ca.issue_server()
    config = keystore(tmp_path, old, "old")
    entered, release = threading.Event(), threading.Event()
    original = herder.connectors

    def slow() -> list[str]:
        entered.set()
        release.wait(10)
        return original()

    with serving(herder, config) as server:
        context = client_context(ca, check_hostname=False)
        raw = socket.create_connection(("127.0.0.1", int(server.url.rsplit(":", 1)[1])), 5)
        kept = context.wrap_socket(raw, server_hostname="127.0.0.1")
        assert _get(kept) == 200
        monkeypatch.setattr(herder, "connectors", slow)
        in_flight: list[int] = []
        caller = threading.Thread(target=lambda: in_flight.append(httpx.get(
            f"{server.url}/connectors", verify=client_context(ca), timeout=10).status_code))
        caller.start()
        assert entered.wait(5)

        with caplog.at_level(logging.INFO, logger="worker.rest"):
            server.reconfigure(keystore(tmp_path, new, "new"))
        # At once: the very next handshake gets the new certificate.
        assert served_fingerprint(server.url, ca=ca) == new.sha256
        certificate = server.served_listeners()[0].certificate
        assert certificate is not None and certificate.sha256 == new.sha256
        release.set()
        caller.join(10)
        assert in_flight == [200]  # the request in flight during the swap finished
        # The connection made before the swap still answers, with its old certificate.
        assert _get(kept) == 200
        der = kept.getpeercert(binary_form=True)
        assert der is not None and hashlib.sha256(der).hexdigest() == old.sha256
        kept.close()
    assert any(new.sha256 in r.getMessage() for r in caplog.records)
    assert all(PASSWORD not in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("problem", ["missing", "wrong password", "no key", "mismatch"])
def test_bad_keystore_is_rejected_and_old_certificate_keeps_serving(
        tmp_path: Path, ca: TestCA, herder: FakeHerder, caplog: pytest.LogCaptureFixture,
        problem: str) -> None:
    old, other = ca.issue_server(), ca.issue_server()
    bad = keystore(tmp_path, other, "bad")
    location = bad[f"{P}ssl.keystore.location"]
    if problem == "missing":
        bad[f"{P}ssl.keystore.location"] = str(tmp_path / "nowhere.p12")
    elif problem == "wrong password":
        bad[f"{P}ssl.keystore.password"] = "Not-The-Password-1"
    elif problem == "no key":
        other.write_pkcs12(Path(location), PASSWORD, include_key=False)
    else:  # cryptography refuses to write such a PKCS12 file; PEM holds anything
        mixed = Issued(other.certificate, old.key, other.chain)
        bad[f"{P}ssl.keystore.location"] = str(mixed.write_pem(tmp_path / "mixed.pem"))
        bad[f"{P}ssl.keystore.type"] = "PEM"
    with serving(herder, keystore(tmp_path, old, "old")) as server, \
            caplog.at_level(logging.DEBUG):
        with pytest.raises(ConfigError) as validated:
            server.validate_reconfiguration(bad)
        with pytest.raises(ConfigError) as applied:
            server.reconfigure(bad)
        assert str(validated.value) == str(applied.value)
        assert validated.value.key.startswith(P)
        assert served_fingerprint(server.url, ca=ca) == old.sha256
        certificate = server.served_listeners()[0].certificate
        assert certificate is not None and certificate.sha256 == old.sha256
    for secret in (PASSWORD, "Not-The-Password-1"):
        assert secret not in str(validated.value)
        assert all(secret not in r.getMessage() for r in caplog.records)


def test_reconfigured_client_auth_applies_to_new_handshakes(tmp_path: Path, ca: TestCA,
                                                            herder: FakeHerder) -> None:
    config = keystore(tmp_path, ca.issue_server(), "a")
    with serving(herder, config) as server:
        assert httpx.get(f"{server.url}/", verify=client_context(ca), timeout=5).is_success
        server.reconfigure({**config, f"{P}ssl.client.auth": "required",
                            f"{P}ssl.truststore.location":
                                str(ca.write_pem_truststore(tmp_path / "ca.pem")),
                            f"{P}ssl.truststore.type": "PEM"})
        with pytest.raises(httpx.TransportError):
            httpx.get(f"{server.url}/", verify=client_context(ca), timeout=5)
        assert httpx.get(f"{server.url}/", verify=client_context(ca, ca.issue_client()),
                         timeout=5).is_success


def test_admin_listeners_scope_admin_endpoints(tmp_path: Path, ca: TestCA,
                                               herder: FakeHerder) -> None:
    admin_cert = ca.issue_server(common_name="admin")
    config = {**keystore(tmp_path, ca.issue_server(), "api"),
              **keystore(tmp_path, admin_cert, "admin", prefix="admin.listeners.https.")}
    with serving(herder, config, ["https://127.0.0.1:0"],
                 admin_listeners=["https://127.0.0.1:0"]) as server:
        verify = client_context(ca)
        [admin_url] = server.admin_urls
        assert httpx.get(f"{admin_url}/admin/loggers", verify=verify, timeout=5).status_code == 200
        assert httpx.get(f"{server.url}/admin/loggers", verify=verify,
                         timeout=5).json() == {"error_code": 404, "message": "HTTP 404 Not Found"}
        assert httpx.get(f"{admin_url}/connectors", verify=verify, timeout=5).status_code == 404
        assert httpx.get(f"{server.url}/connectors", verify=verify, timeout=5).status_code == 200
        # The admin listener has its own certificate and its own reconfigurable keys.
        assert served_fingerprint(admin_url, ca=ca) == admin_cert.sha256
        assert [s.admin for s in server.served_listeners()] == [False, True]
        assert "admin.listeners.https.ssl.keystore.location" in server.reconfigurable_configs()
    with serving(herder, {}, ["http://127.0.0.1:0"], admin_listeners=[]) as disabled:
        assert httpx.get(f"{disabled.url}/admin/loggers", timeout=5).status_code == 404
        assert httpx.get(f"{disabled.url}/connectors", timeout=5).status_code == 200
    with serving(herder, {}, ["http://127.0.0.1:0"]) as default:
        assert httpx.get(f"{default.url}/admin/loggers", timeout=5).status_code == 200


def test_forwarding_verifies_the_target_over_https(
        tmp_path: Path, ca: TestCA, herder: FakeHerder, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:

    leader_herder = FakeHerder()
    leader_herder.add("c")
    trusting = {**keystore(tmp_path, ca.issue_server(), "follower"),
                f"{P}ssl.truststore.location": str(ca.write_pem_truststore(tmp_path / "ca.pem")),
                f"{P}ssl.truststore.type": "PEM"}
    stranger = TestCA("unrelated CA")
    distrusting = {**trusting, f"{P}ssl.truststore.location":
                   str(stranger.write_pem_truststore(tmp_path / "other.pem"))}
    with serving(leader_herder, keystore(tmp_path, ca.issue_server(), "leader")) as leader:
        def not_leader(name: str) -> None:
            raise NotLeaderError("not the leader", leader.url)

        monkeypatch.setattr(herder, "pause_connector", not_leader)
        with serving(herder, trusting) as follower:
            verify = client_context(ca)
            for _ in range(2):
                answer = httpx.put(f"{follower.url}/connectors/c/pause", verify=verify, timeout=10)
                assert answer.status_code == 202, answer.text
            assert leader_herder.targets["c"].name == "PAUSED"
            # One client for the process, reused across requests.
            assert follower.forwarder.client(leader.url) is follower.forwarder.client(leader.url)
        with serving(herder, distrusting) as follower, \
                caplog.at_level(logging.ERROR, logger="worker.rest"):
            refused = httpx.put(f"{follower.url}/connectors/c/pause", verify=verify, timeout=10)
        assert refused.status_code == 409
        message = refused.json()["message"]
        assert leader.url in message and "TLS handshake failed" in message
        assert "certificate verify failed" in message and PASSWORD not in message
        assert any("TLS handshake failed" in r.getMessage() for r in caplog.records)


def test_task_config_sender_reaches_an_https_leader(
        tmp_path: Path, ca: TestCA, herder: FakeHerder, monkeypatch: pytest.MonkeyPatch) -> None:
    received: list[tuple[str, list[dict[str, str]]]] = []
    monkeypatch.setattr(herder, "put_task_configs",
                        lambda name, configs: received.append((name, configs)), raising=False)
    follower = RestServer(create_app(herder), ["https://127.0.0.1:0"], tls_config={
        **keystore(tmp_path, ca.issue_server(), "follower"),
        f"{P}ssl.truststore.location": str(ca.write_pem_truststore(tmp_path / "ca.pem")),
        f"{P}ssl.truststore.type": "PEM"})
    with serving(herder, {**keystore(tmp_path, ca.issue_server(), "leader"),
                          f"{P}ssl.client.auth": "required",
                          f"{P}ssl.truststore.location": str(tmp_path / "ca.pem"),
                          f"{P}ssl.truststore.type": "PEM"}) as leader:
        sender = TaskConfigSender(lambda: leader.url, tls_context=follower.client_ssl_context)
        try:
            sender.send("c", [{"task.class": "x"}])
            wait_until(lambda: received, timeout=15, message="task configs at the leader")
        finally:
            sender.stop()
    assert received == [("c", [{"task.class": "x"}])]
