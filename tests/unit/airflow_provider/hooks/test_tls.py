"""Reading the served certificate by real TLS handshakes against a local TLS server (sync
and async), verified per the connection's TLS settings, and the bounded waits for a
fingerprint."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import pytest

from airflow_provider.exceptions import (
    CertificateNotServedError,
    KafkaConnectConfigError,
    TlsHandshakeError,
)
from airflow_provider.hooks.connection import ConnectionSettings
from airflow_provider.hooks.tls import (
    TlsClientOptions,
    aserved_certificate,
    await_certificates,
    client_context,
    https_address,
    served_certificate,
    wait_for_certificates,
)
from tests.unit.airflow_provider._tls_server import Ca, ServerCert, make_ca, tls_server


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> tuple[Ca, ServerCert, ServerCert]:
    """A CA and two server certificates it signed for 127.0.0.1."""
    directory = tmp_path_factory.mktemp("tls")
    ca = make_ca(directory)
    return ca, ca.issue(directory, "worker-old"), ca.issue(directory, "worker-new", days=90)


def trusting(ca: Ca) -> TlsClientOptions:
    return TlsClientOptions(ca_bundle=str(ca.cert_path))


def test_handshake_reads_the_leaf_certificate(pki) -> None:
    ca, old, _ = pki
    with tls_server(old) as server:
        cert = served_certificate(server.url, trusting(ca))
    assert cert.sha256 == old.sha256 and len(cert.sha256) == 64
    assert cert.sha256 == cert.sha256.lower()
    assert (cert.subject, cert.issuer) == ("CN=worker-old", "CN=test-ca")
    assert cert.not_after == old.cert.not_valid_after_utc
    assert cert.names == ("127.0.0.1",)
    assert 29 < cert.days_left() <= 30
    assert cert.to_dict()["not_after"] == old.cert.not_valid_after_utc.isoformat()
    assert cert.url == server.url and server.handshakes == 1


def test_async_handshake_reads_the_same(pki) -> None:
    ca, _, new = pki
    with tls_server(new) as server:
        cert = asyncio.run(aserved_certificate(server.url, trusting(ca)))
    assert cert.sha256 == new.sha256 and cert.subject == "CN=worker-new"


def test_verification_follows_the_connection(pki, tmp_path: Path) -> None:
    ca, old, _ = pki
    stranger = make_ca(tmp_path, "other-ca")
    with tls_server(old) as server:
        # The system trust store (certifi) does not know the test CA.
        with pytest.raises(TlsHandshakeError, match="certificate verify failed"):
            served_certificate(server.url)
        with pytest.raises(TlsHandshakeError, match=f"TLS handshake with {server.url}"):
            asyncio.run(aserved_certificate(server.url, trusting(stranger)))
        # verify=False reads the certificate without trusting it.
        assert served_certificate(server.url, TlsClientOptions(verify=False)).sha256 == \
            old.sha256
        # Host names are checked too: the certificate names 127.0.0.1, not localhost.
        port = https_address(server.url)[1]
        with pytest.raises(TlsHandshakeError, match="(?i)hostname|match"):
            served_certificate(f"https://localhost:{port}", trusting(ca))


def test_options_come_from_the_connection_settings(pki) -> None:
    ca, _, _ = pki
    settings = ConnectionSettings(base_url="http://c:8083", verify=True,
                                  ca_bundle=str(ca.cert_path), client_cert="/c.pem",
                                  client_key="/k.pem")
    assert TlsClientOptions.from_settings(settings) == TlsClientOptions(
        True, str(ca.cert_path), "/c.pem", "/k.pem")


@pytest.mark.parametrize("url", ["http://127.0.0.1:8083", "127.0.0.1:8443", "https://"])
def test_only_https_urls_have_a_certificate(url: str) -> None:
    with pytest.raises(KafkaConnectConfigError, match="not an https:// URL"):
        served_certificate(url)
    with pytest.raises(KafkaConnectConfigError, match="not an https:// URL"):
        asyncio.run(aserved_certificate(url))


def test_nothing_listening_is_a_handshake_error(refused_port: int) -> None:
    url = f"https://127.0.0.1:{refused_port}"
    for check in (lambda: served_certificate(url, TlsClientOptions(verify=False)),
                  lambda: asyncio.run(aserved_certificate(url, TlsClientOptions(verify=False)))):
        with pytest.raises(TlsHandshakeError, match=f"TLS handshake with {url} failed"):
            check()


def test_unreadable_tls_files_are_config_errors() -> None:
    with pytest.raises(KafkaConnectConfigError, match="TLS files"):
        client_context(TlsClientOptions(ca_bundle="/nonexistent/ca.pem"))


def test_wait_returns_once_the_new_certificate_is_served(pki) -> None:
    ca, old, new = pki
    with tls_server(old) as server:
        threading.Timer(0.5, server.serve, (new,)).start()
        started = time.monotonic()
        served = wait_for_certificates({server.url: new.sha256}, trusting(ca), timeout=10,
                                       poll_interval=0.1)
        assert time.monotonic() - started < 5
        assert served[server.url].sha256 == new.sha256
        assert server.handshakes >= 2  # the old one was seen first


def test_wait_names_what_was_served_when_time_runs_out(pki) -> None:
    ca, old, new = pki
    with tls_server(old) as server:
        started = time.monotonic()
        with pytest.raises(CertificateNotServedError) as caught:
            wait_for_certificates({server.url: new.sha256}, trusting(ca), timeout=0.5,
                                  poll_interval=0.1)
        assert time.monotonic() - started < 3
    assert caught.value.served == {server.url: old.sha256}
    assert f"expected {new.sha256}, last saw {old.sha256}" in str(caught.value)


def test_async_wait_checks_every_url(pki, refused_port: int) -> None:
    ca, old, new = pki
    missing = f"https://127.0.0.1:{refused_port}"
    with tls_server(old) as first, tls_server(new) as second:
        served = asyncio.run(await_certificates(
            {first.url: old.sha256, second.url: new.sha256}, trusting(ca), timeout=5))
        assert {url: cert.sha256 for url, cert in served.items()} == {
            first.url: old.sha256, second.url: new.sha256}
        with pytest.raises(CertificateNotServedError) as caught:
            asyncio.run(await_certificates({first.url: old.sha256, missing: new.sha256},
                                            trusting(ca), timeout=0.3, poll_interval=0.1))
    assert caught.value.served[first.url] == old.sha256
    assert "TLS handshake with" in caught.value.served[missing]
    assert "1 of 2 worker(s)" in str(caught.value)
