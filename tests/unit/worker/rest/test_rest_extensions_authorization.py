"""Admin authorization (``rest.admin.principals``): which requests are guarded, who the
principal is (basic-auth user over client certificate), and the 403 answers."""

from __future__ import annotations

import base64
import logging
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from tests.unit.worker.rest.conftest import FakeHerder
from worker.api.rest_extension import (
    BASIC_AUTH,
    CLIENT_CERT,
    ASGIApp,
    Principal,
    Receive,
    Scope,
    Send,
    request_principal,
    set_principal,
)
from worker.config.worker_config import StandaloneConfig
from worker.errors import ConfigError
from worker.plugins.registry import builtin_registry
from worker.rest.app import create_app
from worker.rest.security.authorization import AdminPrincipals, is_admin_write
from worker.rest.security.extensions import RestSecurity, rest_security

ADMIN_DN = "CN=admin,O=connect-plane tests"
WORKER_DN = "CN=connect-worker,O=connect-plane tests"
USER_DN = "CN=viewer,O=connect-plane tests"
PASSWORDS = {"alice": "alice-Pw-1", "bob": "bob-Pw-2"}


def basic(user: str) -> dict[str, str]:
    token = base64.b64encode(f"{user}:{PASSWORDS[user]}".encode()).decode()
    return {"Authorization": f"Basic {token}"}


class TaskConfigHerder(FakeHerder):
    def put_task_configs(self, name: str, configs: list[dict[str, str]]) -> None:
        self.calls.append(("put_task_configs", name))


def with_certificate(app: ASGIApp, subject: str | None) -> ASGIApp:
    """What the https listener's protocol puts in the scope (worker.rest.security.tls_scope)."""
    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and subject is not None:
            scope["extensions"] = {"tls": {"client_cert_name": subject,
                                           "client_cert_chain": ["..."]}}
        await app(scope, receive, send)
    return wrapped


def security(tmp_path: Path, herder: FakeHerder, principals: str, *,
             basic_auth: bool = True) -> RestSecurity:
    users = tmp_path / "users.properties"
    users.write_text("".join(f"{u}={p}\n" for u, p in PASSWORDS.items()), encoding="utf-8")
    props = {"listeners": "https://127.0.0.1:8443", "rest.admin.principals": principals}
    if basic_auth:
        props.update({"rest.extension.classes": "BasicAuthSecurityRestExtension",
                      "rest.basic.auth.credentials.file": str(users)})
    return rest_security(StandaloneConfig(props), builtin_registry(), herder, "w:1")


def client(tmp_path: Path, herder: FakeHerder, principals: str, *,
           certificate: str | None = None, basic_auth: bool = True) -> TestClient:
    app = create_app(herder, security(tmp_path, herder, principals, basic_auth=basic_auth))
    return TestClient(with_certificate(app, certificate))


# --- the setting ----------------------------------------------------------------------


def test_principals_are_users_and_subjects_separated_by_semicolons() -> None:
    principals = AdminPrincipals.parse(
        f" alice ; User:bob;{ADMIN_DN};User:CN=ops, O=connect-plane tests ;;")
    assert principals.users == {"alice", "bob"}
    assert principals.subjects == {ADMIN_DN, "CN=ops,O=connect-plane tests"}
    assert principals.allows(Principal("alice", BASIC_AUTH))
    assert principals.allows(Principal("CN=ops,  O=connect-plane tests", CLIENT_CERT))
    assert not principals.allows(Principal("carol", BASIC_AUTH))
    assert not principals.allows(None)
    assert not AdminPrincipals.parse("")


def test_a_user_never_matches_a_subject_nor_the_reverse() -> None:
    principals = AdminPrincipals.parse(f"alice;{ADMIN_DN}")
    assert not principals.allows(Principal(ADMIN_DN, BASIC_AUTH))
    assert not principals.allows(Principal("alice", CLIENT_CERT))


@pytest.mark.parametrize(("value", "problem"), [
    ("alice,bob", "separate principals with ';'"),
    ("CN=admin,=x", "is not an RFC 4514 distinguished name"),
])
def test_a_bad_entry_stops_startup_naming_the_setting(value: str, problem: str) -> None:
    with pytest.raises(ConfigError, match=problem) as failure:
        AdminPrincipals.parse(value)
    assert failure.value.key == "rest.admin.principals"


@pytest.mark.parametrize(("method", "path", "guarded"), [
    ("PATCH", "/admin/dynamic-worker-config", True),
    ("POST", "/admin/dynamic-worker-config/validate", True),
    ("DELETE", "/admin/dynamic-worker-config/x", True),
    ("PUT", "/admin/loggers/root", True),
    ("GET", "/admin/loggers", False),
    ("HEAD", "/admin/worker", False),
    ("POST", "/connectors", False),
    ("DELETE", "/connectors/x", False),
    ("POST", "/administrators", False),
])
def test_admin_writes_are_every_admin_verb_but_get_and_head(
        method: str, path: str, guarded: bool) -> None:
    assert is_admin_write(method, path) is guarded


def test_credentials_take_precedence_over_the_certificate() -> None:
    scope: Scope = {"extensions": {"tls": {"client_cert_name": WORKER_DN}}}
    assert request_principal(scope) == Principal(WORKER_DN, CLIENT_CERT)
    set_principal(scope, Principal("alice", BASIC_AUTH))
    assert request_principal(scope) == Principal("alice", BASIC_AUTH)
    assert request_principal({}) is None


# --- basic-auth users -----------------------------------------------------------------


def test_only_admin_users_write_under_admin(tmp_path: Path,
                                            caplog: pytest.LogCaptureFixture) -> None:
    herder = FakeHerder()
    api = client(tmp_path, herder, "alice")
    with caplog.at_level(logging.INFO):
        refused = api.put("/admin/loggers/root", json={"level": "DEBUG"}, headers=basic("bob"))
    assert refused.status_code == 403
    assert refused.json() == {
        "error_code": 403, "message": "User 'bob' may not PUT /admin/loggers/root: admin "
                                      "writes are limited to rest.admin.principals"}
    assert "Refused: User 'bob' may not PUT /admin/loggers/root" in caplog.text
    assert herder.calls == []
    patched = api.patch("/admin/dynamic-worker-config", headers=basic("bob"),
                        json={"listeners.https.ssl.client.auth": "required"})
    assert patched.status_code == 403 and herder.worker_overrides == {}
    # Refused before its body was read: the connection closes and says so (a client reusing
    # it would race the close); a refusal without a body keeps the connection.
    assert refused.headers["connection"] == patched.headers["connection"] == "close"
    bodiless = api.delete("/admin/dynamic-worker-config/rest.docs.enabled", headers=basic("bob"))
    assert bodiless.status_code == 403 and "connection" not in bodiless.headers
    # Reads stay open to every authenticated user; the rest of the API too.
    assert api.get("/admin/loggers", headers=basic("bob")).status_code == 200
    assert api.get("/admin/dynamic-worker-config", headers=basic("bob")).status_code == 200
    assert api.post("/connectors", headers=basic("bob"), json={
        "name": "x", "config": {"connector.class": "FileStreamSource"}}).status_code == 201
    # The admin may.
    assert api.put("/admin/loggers/root", json={"level": "DEBUG"},
                   headers=basic("alice")).status_code == 200
    assert herder.calls[-1][:3] == ("set_logger_level", "root", "DEBUG")
    assert all(p not in caplog.text for p in PASSWORDS.values())


def test_authentication_comes_before_authorization(tmp_path: Path) -> None:
    api = client(tmp_path, FakeHerder(), "alice")
    assert api.put("/admin/loggers/root", json={"level": "DEBUG"}).status_code == 401


def test_without_admin_principals_every_authenticated_user_is_admin(tmp_path: Path) -> None:
    api = client(tmp_path, FakeHerder(), "")
    assert api.put("/admin/loggers/root", json={"level": "DEBUG"},
                   headers=basic("bob")).status_code == 200


# --- certificate subjects -------------------------------------------------------------


@pytest.mark.parametrize(("certificate", "status"), [
    (ADMIN_DN, 200), ("CN=admin, O=connect-plane tests", 200), (USER_DN, 403), (None, 403)])
def test_the_certificate_subject_is_the_principal_without_credentials(
        tmp_path: Path, certificate: str | None, status: int) -> None:
    api = client(tmp_path, FakeHerder(), f"{ADMIN_DN}", certificate=certificate,
                 basic_auth=False)
    response = api.put("/admin/loggers/root", json={"level": "DEBUG"})
    assert response.status_code == status, response.text
    if certificate is None:
        assert response.json()["message"] == (
            "PUT /admin/loggers/root needs an admin principal (rest.admin.principals); the "
            "request has none (no authenticated user, no client certificate)")
    elif status == 403:
        assert response.json()["message"].startswith(
            f"Certificate subject '{USER_DN}' may not PUT /admin/loggers/root")


def test_an_authenticated_user_overrides_the_certificate(tmp_path: Path) -> None:
    # A forwarding worker's (admin) certificate does not make a non-admin user admin...
    api = client(tmp_path, FakeHerder(), f"alice;{WORKER_DN}", certificate=WORKER_DN)
    assert api.put("/admin/loggers/root", json={"level": "DEBUG"},
                   headers=basic("bob")).status_code == 403
    # ...and an admin user is admin over any certificate.
    api = client(tmp_path, FakeHerder(), f"alice;{WORKER_DN}", certificate=USER_DN)
    assert api.put("/admin/loggers/root", json={"level": "DEBUG"},
                   headers=basic("alice")).status_code == 200


def test_internal_requests_with_a_certificate_need_an_admin_subject(tmp_path: Path) -> None:
    for subject, status in ((WORKER_DN, 204), (USER_DN, 403), (None, 204)):
        herder = TaskConfigHerder()
        herder.add("orders")
        api = client(tmp_path, herder, WORKER_DN, certificate=subject)
        response = api.post("/connectors/orders/tasks", json=[{"task.class": "T"}])
        assert response.status_code == status, (subject, response.text)
        assert (herder.calls == [("put_task_configs", "orders")]) is (status == 204)
