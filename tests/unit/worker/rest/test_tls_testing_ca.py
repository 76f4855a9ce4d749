"""``worker.testing.tls``: the test CA, the keystores it writes, and served_fingerprint."""

from __future__ import annotations

import datetime
import socket
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import ExtendedKeyUsageOID

from worker.rest.tls.stores import install_key_pair, trust
from worker.testing.tls import Issued, TestCA, client_context, fingerprint, served_fingerprint


@pytest.fixture(scope="module")
def ca() -> TestCA:
    return TestCA()


def test_ca_and_server_certificate(ca: TestCA) -> None:
    assert ca.certificate.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    issued = ca.issue_server(["worker-1", "10.1.2.3"], days=3)
    sans = issued.certificate.extensions.get_extension_for_class(
        x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.DNSName) == ["localhost", "worker-1"]
    assert [str(ip) for ip in sans.get_values_for_type(x509.IPAddress)] == ["127.0.0.1",
                                                                            "10.1.2.3"]
    usages = issued.certificate.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert ExtendedKeyUsageOID.SERVER_AUTH in usages and ExtendedKeyUsageOID.CLIENT_AUTH in usages
    lifetime = issued.certificate.not_valid_after_utc - issued.certificate.not_valid_before_utc
    assert lifetime == datetime.timedelta(days=3)
    assert issued.certificate.issuer == ca.certificate.subject
    assert issued.sha256 == issued.certificate.fingerprint(hashes.SHA256()).hex()
    assert len(issued.sha256) == 64 and issued.sha256 == issued.sha256.lower()
    assert issued.sha256 != ca.issue_server().sha256


def test_chosen_validity_window(ca: TestCA) -> None:
    start = datetime.datetime(2030, 1, 1, tzinfo=datetime.UTC)
    issued = ca.issue_server(not_before=start, days=1, default_names=False, names=["x"])
    assert issued.certificate.not_valid_before_utc == start
    assert issued.certificate.not_valid_after_utc == start + datetime.timedelta(days=1)


def test_keystores_round_trip(tmp_path: Path, ca: TestCA) -> None:
    issued = ca.issue_server(key_type="rsa")
    loaded = pkcs12.load_pkcs12(issued.write_pkcs12(tmp_path / "k.p12", "pw").read_bytes(),
                                b"pw")
    assert loaded.key is not None and loaded.cert is not None
    assert fingerprint(loaded.cert.certificate) == issued.sha256
    assert [c.certificate for c in loaded.additional_certs] == [ca.certificate]
    no_key = pkcs12.load_pkcs12(
        issued.write_pkcs12(tmp_path / "n.p12", "pw", include_key=False).read_bytes(), b"pw")
    assert no_key.key is None

    encrypted = issued.write_pem(tmp_path / "k.pem", "kpw").read_bytes()
    assert b"ENCRYPTED PRIVATE KEY" in encrypted
    assert serialization.load_pem_private_key(encrypted, b"kpw") is not None
    certs = x509.load_pem_x509_certificates(encrypted)
    assert [fingerprint(c) for c in certs] == [issued.sha256, ca.sha256]
    plain = issued.write_pem(tmp_path / "p.pem").read_bytes()
    assert b"-----BEGIN PRIVATE KEY-----" in plain
    assert (tmp_path / "p.pem").stat().st_mode & 0o777 == 0o600

    trust_pem = x509.load_pem_x509_certificates(
        ca.write_pem_truststore(tmp_path / "ca.pem").read_bytes())
    assert trust_pem == [ca.certificate]
    trust_p12 = pkcs12.load_pkcs12(
        ca.write_pkcs12_truststore(tmp_path / "ca.p12", "tpw").read_bytes(), b"tpw")
    assert [c.certificate for c in trust_p12.additional_certs] == [ca.certificate]


@pytest.fixture
def tls_server(ca: TestCA) -> Iterator[tuple[int, Issued, list[bytes | None]]]:
    """A bare TLS server (no worker) that asks for a client certificate and records it."""
    issued = ca.issue_server()
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    install_key_pair(context, issued.pair(), "test")
    context.verify_mode = ssl.CERT_OPTIONAL
    trust(context, [ca.certificate])
    seen: list[bytes | None] = []
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                raw, _ = listener.accept()
            except TimeoutError:
                continue
            try:
                with context.wrap_socket(raw, server_side=True) as tls:
                    seen.append(tls.getpeercert(binary_form=True))
            except (ssl.SSLError, OSError):
                seen.append(None)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1], issued, seen
    finally:
        stop.set()
        thread.join(5)
        listener.close()


def test_served_fingerprint_makes_a_real_handshake(
        ca: TestCA, tls_server: tuple[int, Issued, list[bytes | None]]) -> None:
    port, issued, seen = tls_server
    assert served_fingerprint(f"127.0.0.1:{port}") == issued.sha256  # unverified
    assert served_fingerprint(f"https://127.0.0.1:{port}", ca=ca) == issued.sha256
    client = ca.issue_client("alice")
    assert served_fingerprint(f"https://127.0.0.1:{port}", ca=ca,
                              client_cert=client) == issued.sha256
    with pytest.raises(ssl.SSLError):
        served_fingerprint(f"https://127.0.0.1:{port}", ca=TestCA("stranger"))
    presented = [der for der in seen if der]
    assert presented and fingerprint(x509.load_der_x509_certificate(presented[-1])) == \
        client.sha256


def test_client_context_trusts_only_its_ca(ca: TestCA) -> None:
    verified = client_context(ca)
    assert verified.verify_mode == ssl.CERT_REQUIRED and verified.check_hostname
    assert client_context().verify_mode == ssl.CERT_NONE
