"""``/admin/dynamic-worker-config``, ``/admin/worker`` and ``/admin/cluster`` over the app.

``FakeHerder`` carries the dynamic configuration through the real manager over a fake TLS
listener (a keystore location containing ``missing`` does not exist). The storage-failure
test runs a real StandaloneHerder over a store whose write fails.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.unit.worker.rest.conftest import KEYSTORE, FakeHerder, FakeTlsListener
from worker.config.worker_config import StandaloneConfig, WorkerConfig
from worker.errors import StorageError
from worker.herder.standalone import StandaloneHerder
from worker.plugins.registry import builtin_registry
from worker.rest.app import create_app
from worker.rest.routes.admin import SERVED_LISTENERS
from worker.rest.security.extensions import rest_security
from worker.runtime.worker import Worker
from worker.storage.memory import (
    MemoryConfigBackingStore,
    MemoryOffsetBackingStore,
    MemoryStatusBackingStore,
)

BASE = "/admin/dynamic-worker-config"
CLIENT_AUTH = "listeners.https.ssl.client.auth"
PASSWORD = "listeners.https.ssl.keystore.password"


@pytest.fixture(autouse=True)
def ks_password(monkeypatch: pytest.MonkeyPatch) -> str:
    """``${env:KS_PW}``; autouse, so that it is set before the herder's env provider reads
    the environment (once, when it is built)."""
    monkeypatch.setenv("KS_PW", "env-secret")
    return "env-secret"


def error_of(response: Any, status: int) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["error_code"] == status
    message: str = body["message"]
    return message


# --- GET / PATCH / DELETE -----------------------------------------------------------------

def test_patch_get_and_delete(client: TestClient, herder: FakeHerder) -> None:
    assert client.get(BASE).json() == {}
    change = {KEYSTORE: "/tls/new.p12", PASSWORD: "${env:KS_PW}"}
    response = client.patch(BASE, json=change)
    assert response.status_code == 200 and response.json() == change
    assert client.get(BASE).json() == change  # raw: the placeholder as stored
    assert herder.listener.applied[-1][PASSWORD] == "env-secret"
    assert "env-secret" not in client.get("/admin/worker").text
    response = client.patch(BASE, json={PASSWORD: None, CLIENT_AUTH: "required"})
    assert response.json() == {KEYSTORE: "/tls/new.p12", CLIENT_AUTH: "required"}
    assert client.delete(f"{BASE}/{CLIENT_AUTH}").status_code == 204
    assert client.get(BASE).json() == {KEYSTORE: "/tls/new.p12"}
    assert herder.listener.applied[-1][KEYSTORE] == "/tls/new.p12"
    message = error_of(client.delete(f"{BASE}/{CLIENT_AUTH}"), 404)
    assert message == f"No dynamic worker configuration override named {CLIENT_AUTH}"


def test_keys_outside_the_whitelist_are_400_and_change_nothing(client: TestClient,
                                                               herder: FakeHerder) -> None:
    for method in ("PATCH", "POST"):
        path = BASE if method == "PATCH" else f"{BASE}/validate"
        message = error_of(client.request(method, path, json={
            "group.id": "x", KEYSTORE: "/tls/a.p12"}), 400)
        assert message.startswith("Not a dynamically reconfigurable worker configuration: "
                                  "group.id.")
    assert herder.worker_overrides == {} and herder.worker_config_version == 0


def test_a_change_that_fails_validation_is_400_naming_key_and_problem(
        client: TestClient, herder: FakeHerder) -> None:
    client.patch(BASE, json={KEYSTORE: "/tls/good.p12"})
    message = error_of(client.patch(BASE, json={KEYSTORE: "/tls/missing.p12"}), 400)
    assert message == ("Worker configuration is invalid and contains the following 1 "
                       f"error(s):\nInvalid value for configuration {KEYSTORE}: the keystore "
                       "file does not exist")
    # A placeholder that does not resolve here is named, as written.
    message = error_of(client.patch(BASE, json={PASSWORD: "${env:NO_SUCH_VARIABLE}"}), 400)
    assert f"{PASSWORD}: cannot resolve ${{env:NO_SUCH_VARIABLE}}" in message
    assert client.get(BASE).json() == {KEYSTORE: "/tls/good.p12"}


def test_validate_answers_the_errors_and_changes_nothing(client: TestClient,
                                                         herder: FakeHerder) -> None:
    response = client.post(f"{BASE}/validate", json={KEYSTORE: "/tls/missing.p12"})
    assert response.status_code == 200
    assert response.json() == {"error_count": 1, "errors": {KEYSTORE: [
        f"Invalid value for configuration {KEYSTORE}: the keystore file does not exist"]}}
    response = client.post(f"{BASE}/validate", json={KEYSTORE: "/tls/a.p12", PASSWORD: None})
    assert response.json() == {"error_count": 0, "errors": {}}
    assert herder.worker_overrides == {} and herder.listener.applied == []


@pytest.mark.parametrize(("content", "problem"), [
    (b'{"a": ', "Malformed JSON in the request body"),
    (b"", "Request body is missing"),
    (b'["listeners.https.ssl.client.auth"]', "must be a JSON object"),
    (b'{"listeners.https.ssl.keystore.password": 12345, "b": true, "c": "ok"}',
     "Values must be strings (or null to remove the override); not so for: b, "
     "listeners.https.ssl.keystore.password"),
])
@pytest.mark.parametrize("method", ["PATCH", "POST"])
def test_a_body_of_the_wrong_shape_is_400(client: TestClient, herder: FakeHerder,
                                          method: str, content: bytes, problem: str) -> None:
    path = BASE if method == "PATCH" else f"{BASE}/validate"
    message = error_of(client.request(method, path, content=content,
                                      headers={"content-type": "application/json"}), 400)
    assert problem in message
    assert "12345" not in message  # values are never quoted
    assert [c for c in herder.calls if "worker_config" in c[0]] == []


def test_a_body_not_sent_as_json_is_415(client: TestClient) -> None:
    response = client.patch(BASE, content=b'{"a": "b"}', headers={"content-type": "text/plain"})
    assert error_of(response, 415) == "HTTP 415 Unsupported Media Type"
    response = client.patch(BASE, content=b'{}',
                            headers={"content-type": "application/merge-patch+json"})
    assert response.status_code == 200


# --- /admin/worker, /admin/cluster -----------------------------------------------------------

@dataclass(frozen=True)
class Certificate:
    sha256: str
    subject: str
    issuer: str
    serial: str
    not_before: datetime
    not_after: datetime


@dataclass(frozen=True)
class Served:
    url: str
    protocol: str
    admin: bool
    certificate: Certificate | None


def test_worker_reports_what_it_applied_and_what_it_serves(client: TestClient,
                                                           herder: FakeHerder) -> None:
    body = client.get("/admin/worker").json()
    assert body == {"worker_id": "127.0.0.1:8083", "url": "http://127.0.0.1:8083",
                    "dynamic_config": {"version": -1, "overrides": {}, "last_validation": {
                        "status": "none", "message": None, "timestamp": None}},
                    "listeners": []}
    client.patch(BASE, json={CLIENT_AUTH: "required"})
    start = datetime(2030, 1, 2, 3, 4, 5, tzinfo=timezone(timedelta(hours=2)))
    certificate = Certificate("ab" * 32, "CN=worker", "CN=test CA", "1f", start,
                              start + timedelta(days=30))
    served = [Served("http://127.0.0.1:8083", "http", False, None),
              Served("https://127.0.0.1:8443", "https", True, certificate)]
    setattr(client.app.state, SERVED_LISTENERS, lambda: served)
    body = client.get("/admin/worker").json()
    assert body["dynamic_config"]["version"] == 1
    assert body["dynamic_config"]["overrides"] == {CLIENT_AUTH: "required"}
    assert body["dynamic_config"]["last_validation"]["status"] == "ok"
    assert isinstance(body["dynamic_config"]["last_validation"]["timestamp"], int)
    assert body["listeners"] == [
        {"url": "http://127.0.0.1:8083", "protocol": "http", "admin": False,
         "certificate": None},
        {"url": "https://127.0.0.1:8443", "protocol": "https", "admin": True,
         "certificate": {"sha256": "ab" * 32, "subject": "CN=worker", "issuer": "CN=test CA",
                         "serial": "1f", "not_before": "2030-01-02T01:04:05Z",
                         "not_after": "2030-02-01T01:04:05Z"}}]


def test_worker_reports_a_failed_validation(client: TestClient, herder: FakeHerder) -> None:
    herder.dynamic.apply(9, {KEYSTORE: "/tls/missing.p12"})  # as read from the topic
    last = client.get("/admin/worker").json()["dynamic_config"]["last_validation"]
    assert last["status"] == "failed"
    assert last["message"] == (f"Invalid value for configuration {KEYSTORE}: the keystore "
                               "file does not exist")


def test_cluster(client: TestClient) -> None:
    assert client.get("/admin/cluster").json() == {
        "leader_url": "http://127.0.0.1:8083",
        "members": [{"worker_id": "127.0.0.1:8083", "url": "http://127.0.0.1:8083"}],
        "held": []}


# --- a store that fails -------------------------------------------------------------------

class FailingStore(MemoryConfigBackingStore):
    def put_worker_config(self, properties: Mapping[str, str]) -> None:
        raise StorageError("Writing the worker config failed: database is locked")


@pytest.fixture
def failing_client() -> Iterator[TestClient]:
    config = WorkerConfig({"bootstrap.servers": "127.0.0.1:1"})
    offsets, statuses = MemoryOffsetBackingStore(), MemoryStatusBackingStore()
    registry = builtin_registry()
    worker = Worker("w:8083", config, registry, offsets, statuses)
    herder = StandaloneHerder(config, registry, worker, FailingStore(), offsets, statuses)
    herder.register_reconfigurable(FakeTlsListener())
    herder.start()
    try:
        with TestClient(create_app(herder)) as test_client:
            yield test_client
    finally:
        herder.stop()


def test_a_store_write_failure_is_500(failing_client: TestClient) -> None:
    message = error_of(failing_client.patch(BASE, json={CLIENT_AUTH: "required"}), 500)
    assert message == "Writing the worker config failed: database is locked"
    assert failing_client.get(BASE).json() == {}
    assert failing_client.get("/admin/worker").json()["dynamic_config"]["version"] == 0


def test_utc_is_kept_as_utc() -> None:
    # The wire model's rule for a certificate date, on its own.
    from worker.rest.datamodels.admin import CertificateResponse
    when = datetime(2030, 1, 1, tzinfo=UTC)
    model = CertificateResponse(sha256="0" * 64, subject="CN=a", issuer="CN=a", serial="1",
                                not_before=when, not_after=when.replace(tzinfo=None))
    assert model.not_before == model.not_after == "2030-01-01T00:00:00Z"


# --- issue #41: passwords in clear only for admin principals ---------------------------------

CLEAR = "Clear-Keystore-Pw-4417"
USERS = {"admin": "Admin-Pw-1", "viewer": "Viewer-Pw-2"}


def secured_client(tmp_path: Path, herder: FakeHerder, principals: str | None) -> TestClient:
    """The app behind real basic auth (users admin and viewer), ``rest.admin.principals``
    set to ``principals`` (None: not set)."""
    users = tmp_path / "users.properties"
    users.write_text("".join(f"{u}={p}\n" for u, p in USERS.items()), encoding="utf-8")
    props = {"listeners": "http://127.0.0.1:8083",
             "rest.extension.classes": "BasicAuthSecurityRestExtension",
             "rest.basic.auth.credentials.file": str(users)}
    if principals is not None:
        props["rest.admin.principals"] = principals
    security = rest_security(StandaloneConfig(props), builtin_registry(), herder, "w:1")
    return TestClient(create_app(herder, security))


def as_user(user: str) -> tuple[str, str]:
    return user, USERS[user]


def overrides_seen(client: TestClient, user: str) -> tuple[dict[str, str], dict[str, str]]:
    """What ``user`` reads in ``GET /admin/dynamic-worker-config`` and ``/admin/worker``."""
    read = client.get(BASE, auth=as_user(user))
    worker = client.get("/admin/worker", auth=as_user(user))
    assert read.status_code == 200 and worker.status_code == 200
    overrides: dict[str, str] = worker.json()["dynamic_config"]["overrides"]
    return read.json(), overrides


def test_a_password_in_clear_is_hidden_but_from_admin_principals(
        tmp_path: Path, herder: FakeHerder) -> None:
    client = secured_client(tmp_path, herder, "admin")
    change = {KEYSTORE: "/tls/new.p12", PASSWORD: CLEAR,
              "listeners.https.ssl.key.password": "${env:KS_PW}"}
    patched = client.patch(BASE, json=change, auth=as_user("admin"))
    assert patched.status_code == 200 and patched.json() == change  # the admin's own
    masked = {**change, PASSWORD: "[hidden]"}  # the placeholder is no secret: shown
    assert overrides_seen(client, "viewer") == (masked, masked)
    assert overrides_seen(client, "admin") == (change, change)
    # Without credentials: 401 before anything is read.
    assert client.get(BASE).status_code == 401


def test_without_admin_principals_nobody_reads_a_password_in_clear(
        tmp_path: Path, herder: FakeHerder) -> None:
    client = secured_client(tmp_path, herder, None)
    change = {KEYSTORE: "/tls/new.p12", PASSWORD: CLEAR}
    patched = client.patch(BASE, json=change, auth=as_user("viewer"))
    assert patched.status_code == 200
    masked = {KEYSTORE: "/tls/new.p12", PASSWORD: "[hidden]"}
    assert patched.json() == masked
    assert overrides_seen(client, "admin") == (masked, masked)
    assert herder.worker_overrides == change  # stored as written, only shown masked


def test_an_open_api_hides_a_password_in_clear(client: TestClient, herder: FakeHerder) -> None:
    change = {KEYSTORE: "/tls/new.p12", PASSWORD: f"prefix-${{env:KS_PW}}-{CLEAR}"}
    assert client.patch(BASE, json=change).json() == {KEYSTORE: "/tls/new.p12",
                                                      PASSWORD: "[hidden]"}
    assert CLEAR not in client.get(BASE).text
    assert CLEAR not in client.get("/admin/worker").text
