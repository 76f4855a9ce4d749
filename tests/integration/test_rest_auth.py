"""REST extensions and admin authorization on a real standalone worker (a subprocess).

Basic auth with Kafka's ``BasicAuthSecurityRestExtension`` (its credentials file named
through a ``${file:...}`` placeholder): no credentials, a wrong password and an unknown user
get 401; a user gets the API; only an admin principal writes under ``/admin`` — a rotation
through ``PATCH /admin/dynamic-worker-config`` by a non-admin is refused and changes no
served certificate (checked by real TLS handshakes), an admin's goes through. Mutual TLS
with ``ssl.client.auth=required``: the client certificate's subject is the principal.
Extension problems stop startup naming the key. Passwords never reach the worker's log.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support import WorkerProcess, WorkerStartError, wait_until
from worker.testing.tls import TestCA, client_context, served_fingerprint

pytestmark = pytest.mark.integration

ADMIN_PW = "Admin-Rest-Pw-6021"
VIEWER_PW = "Viewer-Rest-Pw-7733"
KEYSTORE_PW = "Auth-Keystore-Pw-5150"
SECRETS = (ADMIN_PW, VIEWER_PW, KEYSTORE_PW)
USERS_FILE = "connect-users-4f1c.properties"
BASE = "/admin/dynamic-worker-config"
P = "listeners.https."
UNAUTHORIZED = {"error_code": 401, "message": "User cannot access the resource."}


def auth(user: str, password: str) -> dict[str, str]:
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    return {"Authorization": f"Basic {token}"}


def bare_url(worker: WorkerProcess) -> str:
    """The worker's URL without the fixture's credentials."""
    url = httpx.URL(worker.url)
    return f"{url.scheme}://{url.host}:{url.port}"


def https_listener(worker: WorkerProcess) -> dict[str, Any]:
    listeners = worker.client.get("/admin/worker").json()["listeners"]
    found: dict[str, Any] = next(lst for lst in listeners if lst["protocol"] == "https")
    return found


@pytest.fixture
def ca() -> TestCA:
    return TestCA()


@pytest.fixture
def basic_worker(standalone_worker: Callable[..., WorkerProcess], tmp_path: Path,
                 ca: TestCA) -> WorkerProcess:
    """A worker with basic auth (users admin and viewer; admin is the admin principal), an
    http listener and an https one whose keystore can be rotated."""
    secrets = tmp_path / "secrets"
    users = secrets / USERS_FILE
    users.parent.mkdir()
    users.write_text(f"admin={ADMIN_PW}\nviewer={VIEWER_PW}\n", encoding="utf-8")
    # The credentials file's path itself comes from a config provider.
    (secrets / "paths.properties").write_text(f"users.file={users}\n", encoding="utf-8")
    keystore = ca.issue_server(common_name="static").write_pkcs12(
        tmp_path / "static.p12", KEYSTORE_PW)
    return standalone_worker({
        "config.providers": "file",
        "config.providers.file.class": "FileConfigProvider",
        "rest.extension.classes": "BasicAuthSecurityRestExtension",
        "rest.basic.auth.credentials.file":
            f"${{file:{secrets / 'paths.properties'}:users.file}}",
        "rest.admin.principals": "admin",
        f"{P}ssl.keystore.location": keystore, f"{P}ssl.keystore.password": KEYSTORE_PW,
    }, extra_listeners=["https://127.0.0.1:0"], credentials=("admin", ADMIN_PW))


def test_basic_auth_admits_users_and_limits_admin_writes(
        basic_worker: WorkerProcess, ca: TestCA, tmp_path: Path) -> None:
    worker = basic_worker
    # Logs the filter's DEBUG lines, so the test sees what a failed login logs.
    assert worker.client.put("/admin/loggers/worker.rest",
                             json={"level": "DEBUG"}).status_code == 200
    with httpx.Client(base_url=bare_url(worker), timeout=30) as api:
        for headers in ({}, auth("viewer", "wrong-" + VIEWER_PW), auth("mallory", ADMIN_PW)):
            for path in ("/connectors", "/health", "/admin/loggers"):
                refused = api.get(path, headers=headers)
                assert refused.status_code == 401, (path, headers)
                assert refused.json() == UNAUTHORIZED
                assert refused.headers["www-authenticate"].startswith('Basic realm="')
        viewer = auth("viewer", VIEWER_PW)
        assert api.get("/connectors", headers=viewer).json() == []
        assert api.get("/admin/loggers", headers=viewer).status_code == 200

        # A non-admin's rotation is refused: nothing stored, the old certificate serves.
        https = https_listener(worker)
        served = https["certificate"]["sha256"]
        assert served_fingerprint(https["url"], ca=ca) == served
        rotated = ca.issue_server(common_name="rotated")
        keystore = rotated.write_pkcs12(tmp_path / "rotated.p12", KEYSTORE_PW)
        change = {f"{P}ssl.keystore.location": str(keystore)}
        refused = api.patch(BASE, json=change, headers=viewer)
        assert refused.status_code == 403
        assert refused.json()["message"] == (f"User 'viewer' may not PATCH {BASE}: admin "
                                             "writes are limited to rest.admin.principals")
        for method, path, body in (("POST", f"{BASE}/validate", change),
                                   ("DELETE", f"{BASE}/{P}ssl.keystore.location", None),
                                   ("PUT", "/admin/loggers/root", {"level": "ERROR"})):
            answer = api.request(method, path, json=body, headers=viewer)
            assert answer.status_code == 403, (method, path, answer.text)
        assert api.get(BASE, headers=viewer).json() == {}
        assert served_fingerprint(https["url"], ca=ca) == served
        assert api.get("/admin/loggers/root", headers=viewer).json()["level"] == "INFO"

        # The admin's goes through; new handshakes get the new certificate.
        applied = api.patch(BASE, json=change, headers=auth("admin", ADMIN_PW))
        assert applied.status_code == 200, applied.text
        assert applied.json() == change
        assert served_fingerprint(https["url"], ca=ca) == rotated.sha256

    log = worker.log_tail(1_000_000)
    assert "failed authentication (user viewer)" in log
    assert "Refused: User 'viewer' may not PATCH" in log
    assert all(secret not in log for secret in SECRETS)
    assert USERS_FILE not in log  # the path resolved from the placeholder


def test_the_client_certificate_is_the_principal_with_mutual_tls(
        standalone_worker: Callable[..., WorkerProcess], tmp_path: Path, ca: TestCA) -> None:
    admin = ca.issue_client("admin")
    viewer = ca.issue_client("viewer")
    keystore = ca.issue_server(common_name="static").write_pkcs12(tmp_path / "s.p12",
                                                                  KEYSTORE_PW)
    worker = standalone_worker({
        f"{P}ssl.keystore.location": keystore, f"{P}ssl.keystore.password": KEYSTORE_PW,
        f"{P}ssl.truststore.location": ca.write_pem_truststore(tmp_path / "ca.pem"),
        f"{P}ssl.truststore.type": "PEM", f"{P}ssl.client.auth": "required",
        "rest.admin.principals": f"{admin.subject};CN=ops, O=elsewhere",
    }, scheme="https", ssl_context=client_context(ca, admin))
    rotated = ca.issue_server(common_name="rotated")
    change = {f"{P}ssl.keystore.location": str(rotated.write_pkcs12(tmp_path / "r.p12",
                                                                     KEYSTORE_PW))}
    with httpx.Client(base_url=worker.url, verify=client_context(ca, viewer),
                      timeout=30) as api:
        assert api.get("/connectors").status_code == 200
        refused = api.patch(BASE, json=change)
        assert refused.status_code == 403
        assert refused.json()["message"].startswith(
            f"Certificate subject '{viewer.subject}' may not PATCH {BASE}")
        assert api.put("/admin/loggers/root", json={"level": "ERROR"}).status_code == 403
    assert worker.client.get(BASE).json() == {}
    applied = worker.client.patch(BASE, json=change)
    assert applied.status_code == 200, applied.text
    wait_until(lambda: served_fingerprint(worker.url, ca=ca, client_cert=admin)
               == rotated.sha256, timeout=5, message="the rotated certificate served")
    assert all(secret not in worker.log_tail(1_000_000) for secret in SECRETS)


@pytest.mark.parametrize(("props", "named"), [
    ({"rest.extension.classes": "com.example.NoSuchExtension"},
     "rest.extension.classes: Class com.example.NoSuchExtension could not be found"),
    ({"rest.extension.classes": "BasicAuthSecurityRestExtension",
      "rest.basic.auth.credentials.file": "/nonexistent/users.properties"},
     "rest.basic.auth.credentials.file: cannot read the credentials file (No such file"),
    ({"rest.admin.principals": "admin,ops"},
     "rest.admin.principals: 'admin,ops': separate principals with ';'"),
])
def test_extension_problems_stop_startup_naming_the_key(
        standalone_worker: Callable[..., WorkerProcess], props: dict[str, str],
        named: str) -> None:
    worker = standalone_worker(props, start=False)
    with pytest.raises(WorkerStartError, match="exited with code 1"):
        worker.start(timeout=60)
    assert named in worker.log_tail(200)
