"""The client certificate in the ASGI scope: a real ``RestServer`` with https listeners,
real TLS handshakes with certificates from a test CA, and the admin authorization that
reads it (``worker.rest.security.tls_scope``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.responses import JSONResponse

from worker.api.rest_extension import Receive, Scope, Send, request_principal
from worker.rest.security.authorization import AdminAuthorizationMiddleware, AdminPrincipals
from worker.rest.security.tls_scope import tls_extension
from worker.rest.server import RestServer
from worker.testing.tls import TestCA, client_context

PASSWORD = "Scope-Keystore-Pw-7"


async def echo(scope: Scope, receive: Receive, send: Send) -> None:
    """Answers with what the scope says about TLS and the principal."""
    principal = request_principal(scope)
    await JSONResponse({
        "tls": scope.get("extensions", {}).get("tls"),
        "principal": None if principal is None else [principal.name, principal.scheme],
    })(scope, receive, send)


@pytest.fixture
def ca() -> TestCA:
    return TestCA()


@pytest.fixture
def serve(ca: TestCA, tmp_path: Path) -> Iterator[Callable[..., RestServer]]:
    servers: list[RestServer] = []

    def start(client_auth: str, app: Any = echo, listeners: tuple[str, ...] = (
            "https://127.0.0.1:0",)) -> RestServer:
        keystore = ca.issue_server().write_pkcs12(tmp_path / "server.p12", PASSWORD)
        server = RestServer(app, listeners, tls_config={
            "listeners.https.ssl.keystore.location": str(keystore),
            "listeners.https.ssl.keystore.password": PASSWORD,
            "listeners.https.ssl.truststore.location":
                str(ca.write_pem_truststore(tmp_path / "ca.pem")),
            "listeners.https.ssl.truststore.type": "PEM",
            "listeners.https.ssl.client.auth": client_auth})
        server.start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


def get(url: str, ca: TestCA, subject: str | None = None) -> httpx.Response:
    certificate = ca.issue_client(subject) if subject else None
    with httpx.Client(verify=client_context(ca, certificate)) as client:
        return client.get(url + "/whoami")


@pytest.mark.parametrize("client_auth", ["required", "requested"])
def test_a_verified_client_certificate_is_the_principal(
        serve: Callable[..., RestServer], ca: TestCA, client_auth: str) -> None:
    server = serve(client_auth)
    body = get(server.url, ca, "alice").json()
    assert body["principal"] == ["CN=alice,O=connect-plane tests", "CLIENT_CERT"]
    tls = body["tls"]
    assert tls["client_cert_name"] == "CN=alice,O=connect-plane tests"
    assert tls["tls_version"] in (0x0303, 0x0304) and tls["client_cert_error"] is None
    assert tls["client_cert_chain"][0].startswith("-----BEGIN CERTIFICATE-----")


def test_no_certificate_no_principal(serve: Callable[..., RestServer], ca: TestCA) -> None:
    requested = serve("requested")
    body = get(requested.url, ca).json()
    assert body["principal"] is None and body["tls"]["client_cert_name"] is None
    # Not asked for (ssl.client.auth=none): a certificate the client holds is never sent.
    ignored = serve("none")
    assert get(ignored.url, ca, "alice").json()["principal"] is None


def test_each_connection_has_its_own_principal(serve: Callable[..., RestServer],
                                               ca: TestCA) -> None:
    server = serve("required")
    for name in ("alice", "bob", "alice"):
        assert get(server.url, ca, name).json()["principal"][0].startswith(f"CN={name},")


def test_http_listeners_carry_no_tls_extension(serve: Callable[..., RestServer],
                                               ca: TestCA) -> None:
    server = serve("required", listeners=("https://127.0.0.1:0", "http://127.0.0.1:0"))
    http_url = next(url for url in server.urls if url.startswith("http://"))
    assert httpx.get(http_url + "/whoami").json() == {"tls": None, "principal": None}


def test_admin_writes_over_mutual_tls(serve: Callable[..., RestServer], ca: TestCA) -> None:
    guarded = AdminAuthorizationMiddleware(
        echo, AdminPrincipals.parse("CN=admin,O=connect-plane tests"))
    server = serve("required", app=guarded)
    for subject, status in (("admin", 200), ("viewer", 403)):
        context = client_context(ca, ca.issue_client(subject))
        with httpx.Client(verify=context) as client:
            response = client.put(server.url + "/admin/loggers/root", json={})
        assert response.status_code == status, response.text


def test_tls_extension_without_a_connection() -> None:
    assert tls_extension(None) == {
        "server_cert": None, "client_cert_chain": [], "client_cert_name": None,
        "client_cert_error": None, "tls_version": None, "cipher_suite": None}
