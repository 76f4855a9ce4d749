"""The Airflow hooks send the connection's credentials only where they belong (issue #41,
item 5), shown with real HTTP servers on loopback:

* a *rogue* server (``http.server`` in a thread) stands in for a group member collecting
  passwords: it records every request and the ``Authorization`` header it carried;
* a real ``connect-standalone`` worker with basic auth, an http and an https listener,
  which advertises the rogue's URL as its own (``rest.advertised.*``) — what any member
  of a group can do — so its real ``GET /admin/cluster`` names the rogue.

The hook reaches the connection's own worker with the credentials (the worker, which
requires them, answers); a discovered URL on another port, or http under an https
connection, is refused with a clear error by the hooks and by the certificate-rotation and
plugin-manifest-sync operators in discover mode, and the rogue receives no request at all;
the connection's ``allowed_worker_urls``, a ``worker_urls`` given explicitly, or
``allow_discovered_workers=True`` let them through, knowingly. Redirects are not followed.
"""

from __future__ import annotations

import asyncio
import base64
import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from airflow_provider.exceptions import (
    KafkaConnectApiError,
    KafkaConnectConfigError,
    UntrustedWorkerUrlError,
)
from airflow_provider.hooks.kafka_connect import KafkaConnectHook
from airflow_provider.hooks.kafka_connect_async import KafkaConnectAsyncHook
from airflow_provider.operators.certificates import KafkaConnectRotateCertificateOperator
from airflow_provider.operators.plugins import KafkaConnectSyncPluginManifestsOperator
from tests.support import WorkerProcess
from tests.unit.airflow_provider._fakes import FakeTI
from worker.testing.tls import TestCA

ADMIN_PW = "Hook-Admin-Pw-41c5"
KEYSTORE_PW = "Hook-Keystore-Pw-9e07"
BASIC = "Basic " + base64.b64encode(f"admin:{ADMIN_PW}".encode()).decode()
PROBE = "acme_probe.ProbeConnector"
PROBE_SOURCE = '''"""A connector without a manifest: the sync declares it, the wait asks for it."""

from worker.api import SourceConnector, SourceTask


class ProbeTask(SourceTask):
    def start(self, props): pass
    def poll(self): return None
    def stop(self): pass


class ProbeConnector(SourceConnector):
    def version(self): return "0.1"
    def start(self, props): pass
    def task_class(self): return ProbeTask
    def task_configs(self, max_tasks): return []
    def stop(self): pass
'''


@dataclass
class Rogue:
    """A plain-http server recording ``(method, path, Authorization)`` of each request;
    ``answers`` maps a path to the JSON it answers (``redirect`` paths answer 307)."""

    answers: dict[str, Any] = field(default_factory=dict)
    redirect: dict[str, str] = field(default_factory=dict)
    seen: list[tuple[str, str, str | None]] = field(default_factory=list)
    url: str = ""

    @property
    def credentials_seen(self) -> list[str]:
        return [auth for _, _, auth in self.seen if auth]


def serve(rogue: Rogue) -> Iterator[Rogue]:
    """Run ``rogue`` on a free loopback port until the generator is closed."""

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            path = self.path.partition("?")[0]
            rogue.seen.append((self.command, path, self.headers.get("Authorization")))
            if path in rogue.redirect:
                self.send_response(307)
                self.send_header("Location", rogue.redirect[path])
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            found = path in rogue.answers
            data = json.dumps(rogue.answers[path] if found else
                              {"error_code": 404, "message": "HTTP 404 Not Found"}).encode()
            self.send_response(200 if found else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_PUT = do_POST = do_PATCH = do_DELETE = _answer  # noqa: N815

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    rogue.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield rogue
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def report(url: str) -> dict[str, Any]:
    """A worker report with no https listener (the rotation then stops, changing nothing)."""
    return {"worker_id": url.removeprefix("http://"), "url": url, "listeners": [],
            "dynamic_config": {"version": 0, "overrides": {}, "last_validation": {
                "status": "ok", "message": None, "timestamp": None}}}


@pytest.fixture
def rogue() -> Iterator[Rogue]:
    yield from serve(Rogue())


@pytest.fixture
def own() -> Iterator[Rogue]:
    """The connection's own "worker": the same recording server, at the connection's
    origin."""
    yield from serve(Rogue())


def hook(conn_id: str, **kwargs: Any) -> KafkaConnectHook:
    return KafkaConnectHook(conn_id, retry_limit=0, **kwargs)


# --- the hooks, against recording servers ---------------------------------------------------


def test_the_connections_worker_gets_them_another_port_does_not(
        own: Rogue, rogue: Rogue, kafka_connect_conn: Callable[..., str]) -> None:
    own.answers["/admin/worker"] = report(own.url)
    rogue.answers["/admin/worker"] = report(rogue.url)
    conn = kafka_connect_conn(host=own.url, login="admin", password=ADMIN_PW)
    with hook(conn) as sync:
        sync.get_worker()
        sync.get_worker(f"{own.url}/")  # its own origin, as an absolute URL
        with pytest.raises(UntrustedWorkerUrlError) as caught:
            sync.get_worker(rogue.url)
    assert own.credentials_seen == [BASIC, BASIC]
    assert rogue.seen == []  # refused before a byte was sent
    message = str(caught.value)
    assert f"{rogue.url}/admin/worker" in message and f"origin {own.url}" in message
    assert "allowed_worker_urls" in message and "allow_discovered_workers" in message
    assert ADMIN_PW not in message


def test_http_under_an_https_connection_is_a_downgrade(
        rogue: Rogue, kafka_connect_conn: Callable[..., str]) -> None:
    # Same host and port as the connection, but http: the password would travel in clear.
    rogue.answers["/admin/worker"] = report(rogue.url)
    https = rogue.url.replace("http://", "https://")
    conn = kafka_connect_conn(host=https, login="admin", password=ADMIN_PW)
    with hook(conn) as sync, pytest.raises(UntrustedWorkerUrlError, match="travel in clear"):
        sync.get_worker(rogue.url)
    assert rogue.seen == []
    # Listed in the connection's allow-list, knowingly: now it goes.
    listed = kafka_connect_conn(host=https, login="admin", password=ADMIN_PW,
                                extra={"allowed_worker_urls": rogue.url})
    with hook(listed) as sync:
        sync.get_worker(rogue.url)
    assert rogue.credentials_seen == [BASIC]


@pytest.mark.parametrize("how", ["allow-list", "pattern", "given", "flag"])
def test_allowed_given_or_knowing(how: str, own: Rogue, rogue: Rogue,
                                  kafka_connect_conn: Callable[..., str]) -> None:
    rogue.answers["/connector-plugins"] = []
    extra = {"allow-list": {"allowed_worker_urls": [rogue.url]},
             "pattern": {"allowed_worker_urls": "http://127.0.0.1:*"}}.get(how, {})
    kwargs = {"given": {"trusted_worker_urls": [rogue.url]},
              "flag": {"allow_discovered_workers": True}}.get(how, {})
    conn = kafka_connect_conn(host=own.url, login="admin", password=ADMIN_PW, extra=extra)
    with hook(conn, **kwargs) as sync:
        assert sync.list_connector_plugins(worker_url=rogue.url) == []
    assert rogue.credentials_seen == [BASIC]


def test_the_async_hook_refuses_alike(own: Rogue, rogue: Rogue,
                                      kafka_connect_conn: Callable[..., str]) -> None:
    conn = kafka_connect_conn(host=own.url, login="admin", password=ADMIN_PW)

    async def ask() -> None:
        async with KafkaConnectAsyncHook(conn, retry_limit=0) as refusing:
            await refusing.list_connector_plugins(worker_url=rogue.url)

    with pytest.raises(UntrustedWorkerUrlError, match=rogue.url):
        asyncio.run(ask())
    assert rogue.seen == [] and own.seen == []


def test_a_redirect_to_another_origin_is_not_followed(
        own: Rogue, rogue: Rogue, kafka_connect_conn: Callable[..., str]) -> None:
    own.redirect["/connectors"] = f"{rogue.url}/connectors"
    conn = kafka_connect_conn(host=own.url, login="admin", password=ADMIN_PW)
    with hook(conn) as sync, pytest.raises(KafkaConnectApiError) as caught:
        sync.list_connectors()
    assert caught.value.status_code == 307
    assert own.credentials_seen == [BASIC] and rogue.seen == []


def test_discovery_from_a_fake_cluster_is_vetted_before_any_member_is_asked(
        own: Rogue, rogue: Rogue, kafka_connect_conn: Callable[..., str],
        tmp_path: Path) -> None:
    own.answers["/admin/cluster"] = {"leader_url": own.url, "members": [
        {"worker_id": "own", "url": own.url}, {"worker_id": "rogue", "url": rogue.url}]}
    kafka_connect_conn(host=own.url, login="admin", password=ADMIN_PW)
    plugins = plugin_path(tmp_path)
    with pytest.raises(UntrustedWorkerUrlError, match=f"{rogue.url}/ .from GET /admin/cluster"):
        sync_plugins(plugins).execute({"ti": FakeTI()})
    assert rogue.seen == [] and not list(plugins.rglob("entry_points.txt"))


# --- the operators in discover mode, against a real worker advertising the rogue ------------


@dataclass
class AdvertisingWorker:
    worker: WorkerProcess
    http_url: str
    https_url: str
    ca_bundle: Path
    keystore: Path


@pytest.fixture
def advertising_worker(standalone_worker: Callable[..., WorkerProcess], rogue: Rogue,
                       tmp_path: Path) -> AdvertisingWorker:
    """A worker with basic auth (user admin) and an https listener beside its http one,
    advertising the rogue's http URL as its own: its ``GET /admin/cluster`` names the
    rogue, as a group member's advertisement would."""
    ca = TestCA()
    users = tmp_path / "users.properties"
    users.write_text(f"admin={ADMIN_PW}\n", encoding="utf-8")
    keystore = ca.issue_server().write_pkcs12(tmp_path / "server.p12", KEYSTORE_PW)
    port = int(rogue.url.rsplit(":", 1)[1])
    worker = standalone_worker({
        "rest.extension.classes": "BasicAuthSecurityRestExtension",
        "rest.basic.auth.credentials.file": users, "rest.admin.principals": "admin",
        "listeners.https.ssl.keystore.location": keystore,
        "listeners.https.ssl.keystore.password": KEYSTORE_PW,
        "rest.advertised.listener": "http", "rest.advertised.host.name": "127.0.0.1",
        "rest.advertised.port": port,
    }, extra_listeners=["https://127.0.0.1:0"], credentials=("admin", ADMIN_PW))
    listeners = worker.client.get("/admin/worker").json()["listeners"]
    https = next(lst["url"] for lst in listeners if lst["protocol"] == "https")
    http = next(lst["url"] for lst in listeners if lst["protocol"] == "http")
    assert worker.client.get("/admin/cluster").json()["members"][0]["url"] == rogue.url
    return AdvertisingWorker(worker, http.rstrip("/"), https.rstrip("/"),
                             ca.write_pem_truststore(tmp_path / "ca.pem"), keystore)


def plugin_path(tmp_path: Path) -> Path:
    location = tmp_path / "plugins" / "acme-probe"
    location.mkdir(parents=True)
    (location / "acme_probe.py").write_text(PROBE_SOURCE, encoding="utf-8")
    return location.parent


def sync_plugins(plugins: Path, **kwargs: Any) -> KafkaConnectSyncPluginManifestsOperator:
    return KafkaConnectSyncPluginManifestsOperator(
        task_id="plugins", plugin_path=[str(plugins)], wait_for_workers=True,
        wait_timeout=10, poll_interval=0.1, deferrable=False, **kwargs)


def rotate(worker: AdvertisingWorker, **kwargs: Any) -> KafkaConnectRotateCertificateOperator:
    """A rotation to the keystore the worker already serves (valid: it reaches discovery)."""
    return KafkaConnectRotateCertificateOperator(
        task_id="rotate", keystore_location=str(worker.keystore),
        keystore_password=KEYSTORE_PW, keystore_type="PKCS12", verify_timeout=5,
        deferrable=False, **kwargs)


def connection(define: Callable[..., str], worker: AdvertisingWorker, scheme: str,
               **extra: Any) -> str:
    url = worker.https_url if scheme == "https" else worker.http_url
    return define(host=url, login="admin", password=ADMIN_PW,
                  extra={"ca_bundle": str(worker.ca_bundle), **extra})


@pytest.mark.integration
@pytest.mark.parametrize("scheme", ["http", "https"])
def test_operators_in_discover_mode_refuse_the_advertised_rogue(
        scheme: str, advertising_worker: AdvertisingWorker, rogue: Rogue, tmp_path: Path,
        kafka_connect_conn: Callable[..., str], caplog: pytest.LogCaptureFixture) -> None:
    worker = advertising_worker
    connection(kafka_connect_conn, worker, scheme)
    # The connection's own worker, which refuses a request without credentials, answers.
    with hook("kafka_connect_default") as sync:
        assert sync.get_worker().listeners
    assert httpx.get(f"{worker.http_url}/admin/worker", timeout=10).status_code == 401

    with pytest.raises(UntrustedWorkerUrlError) as rotation:
        rotate(worker).execute({"ti": FakeTI()})
    plugins = plugin_path(tmp_path)
    with pytest.raises(UntrustedWorkerUrlError) as sync:
        sync_plugins(plugins).execute({"ti": FakeTI()})

    assert rogue.seen == []  # not one request, with or without credentials
    for error in (rotation.value, sync.value):
        assert error.urls == [f"{rogue.url}/"]
        assert "from GET /admin/cluster" in str(error)
        assert ("travel in clear" in str(error)) is (scheme == "https")
    assert worker.worker.client.get("/admin/dynamic-worker-config").json() == {}
    assert not list(plugins.rglob("entry_points.txt"))  # the tool never ran
    assert ADMIN_PW not in caplog.text + str(rotation.value) + str(sync.value)


@pytest.mark.integration
def test_operators_send_them_when_told_knowingly(
        advertising_worker: AdvertisingWorker, rogue: Rogue, tmp_path: Path,
        kafka_connect_conn: Callable[..., str]) -> None:
    worker = advertising_worker
    rogue.answers["/admin/worker"] = report(rogue.url)
    rogue.answers["/connector-plugins"] = [{"class": PROBE, "type": "source",
                                            "version": "0.1"}]
    # The flag on the rotation: the rogue is asked (and has no https listener to rotate).
    connection(kafka_connect_conn, worker, "https")
    with pytest.raises(KafkaConnectConfigError, match="no https listener"):
        rotate(worker, allow_discovered_workers=True).execute({"ti": FakeTI()})
    assert rogue.seen == [("GET", "/admin/worker", BASIC)]
    # The connection's allow-list on the plugin sync: the wait asks the rogue.
    connection(kafka_connect_conn, worker, "http", allowed_worker_urls=rogue.url)
    result = sync_plugins(plugin_path(tmp_path)).execute({"ti": FakeTI()})
    assert result["workers"] == {rogue.url: {PROBE: "0.1"}}
    assert rogue.seen[-1] == ("GET", "/connector-plugins", BASIC)
    assert worker.worker.client.get("/admin/dynamic-worker-config").json() == {}
