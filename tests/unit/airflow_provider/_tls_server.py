"""A test CA, server certificates it signs, and a local TLS server whose certificate can be
swapped while it runs — a stand-in for a worker's https listener in unit tests of the
handshake checks, the trigger and the rotation operator (the real worker is exercised by
tests/integration/test_certificate_rotation.py)."""

from __future__ import annotations

import datetime as dt
import hashlib
import ipaddress
import socket
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


@dataclass(frozen=True)
class ServerCert:
    """A server certificate and key as PEM files; ``sha256`` of its DER form."""

    cert: x509.Certificate
    cert_path: Path
    key_path: Path

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.cert.public_bytes(serialization.Encoding.DER)).hexdigest()


@dataclass(frozen=True)
class Ca:
    """A CA: its certificate and key objects and PEM files."""

    cert: x509.Certificate
    key: ec.EllipticCurvePrivateKey
    cert_path: Path
    key_path: Path

    def issue(self, directory: Path, name: str, hosts: tuple[str, ...] = ("127.0.0.1",),
              days: int = 30) -> ServerCert:
        """A server certificate for ``hosts`` valid ``days`` days, as PEM files."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = dt.datetime.now(dt.UTC)
        sans: list[x509.GeneralName] = []
        for host in hosts:
            try:
                sans.append(x509.IPAddress(ipaddress.ip_address(host)))
            except ValueError:
                sans.append(x509.DNSName(host))
        cert = (x509.CertificateBuilder().subject_name(_name(name))
                .issuer_name(self.cert.subject).public_key(key.public_key())
                .serial_number(x509.random_serial_number())
                .not_valid_before(now - dt.timedelta(minutes=5))
                .not_valid_after(now + dt.timedelta(days=days))
                .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                .add_extension(x509.SubjectAlternativeName(sans), critical=False)
                .sign(self.key, hashes.SHA256()))
        cert_path, key_path = directory / f"{name}.pem", directory / f"{name}-key.pem"
        cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        key_path.write_bytes(_pem_key(key))
        return ServerCert(cert, cert_path, key_path)


def make_ca(directory: Path, name: str = "test-ca") -> Ca:
    """A self-signed CA (PEM files in ``directory``)."""
    key = ec.generate_private_key(ec.SECP256R1())
    now = dt.datetime.now(dt.UTC)
    cert = (x509.CertificateBuilder().subject_name(_name(name)).issuer_name(_name(name))
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(days=365))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = directory / f"{name}.pem", directory / f"{name}-key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(_pem_key(key))
    return Ca(cert, key, cert_path, key_path)


class TlsServer:
    """Accepts connections on 127.0.0.1, completes the TLS handshake with the certificate
    set last (:meth:`serve`), and closes. ``handshakes`` counts the completed ones."""

    def __init__(self, cert: ServerCert) -> None:
        self._sock = socket.create_server(("127.0.0.1", 0))
        self._sock.settimeout(0.1)
        self.url = f"https://127.0.0.1:{self._sock.getsockname()[1]}"
        self.handshakes = 0
        self._stop = threading.Event()
        self.serve(cert)
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def serve(self, cert: ServerCert) -> None:
        """Use ``cert`` for every handshake from now on."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert.cert_path, cert.key_path)
        self._context = context

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            conn.settimeout(5)
            try:
                with self._context.wrap_socket(conn, server_side=True):
                    self.handshakes += 1
            except (OSError, ssl.SSLError):
                conn.close()  # the client refused the certificate, or went away

    def __enter__(self) -> TlsServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._sock.close()


@contextmanager
def tls_server(cert: ServerCert) -> Iterator[TlsServer]:
    """A running :class:`TlsServer` serving ``cert``."""
    with TlsServer(cert) as server:
        yield server
