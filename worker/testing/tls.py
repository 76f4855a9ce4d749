"""A test certificate authority and the keystores an HTTPS worker reads, with ``cryptography``.

::

    ca = TestCA()
    server = ca.issue_server(names=["worker-1"])          # SANs 127.0.0.1, localhost, worker-1
    keystore = server.write_pkcs12(tmp / "server.p12", "changeit")
    truststore = ca.write_pem_truststore(tmp / "ca.pem")
    props = {"listeners": "https://127.0.0.1:8443",
             "listeners.https.ssl.keystore.location": keystore,
             "listeners.https.ssl.keystore.password": "changeit"}
    assert served_fingerprint("https://127.0.0.1:8443", ca=ca) == server.sha256

Fingerprints are the SHA-256 of a certificate's DER encoding, 64 lowercase hex digits.
Keys are EC P-256 by default (fast to make); ``key_type="rsa"`` gives RSA 2048 keys, which
``ECDHE-RSA`` cipher suites need.
"""

from __future__ import annotations

import datetime
import ipaddress
import socket
import ssl
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from worker.rest.tls.stores import KeyPair, install_key_pair, trust

__all__ = ["Issued", "TestCA", "client_context", "fingerprint", "served_fingerprint"]

KeyType = Literal["ec", "rsa"]
PrivateKey = ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey


def fingerprint(cert: x509.Certificate) -> str:
    """SHA-256 of the certificate's DER encoding: 64 lowercase hex digits."""
    return cert.fingerprint(hashes.SHA256()).hex()


def _new_key(key_type: KeyType) -> PrivateKey:
    if key_type == "rsa":
        return rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return ec.generate_private_key(ec.SECP256R1())


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "connect-plane tests"),
                      x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _encryption(password: str | None) -> serialization.KeySerializationEncryption:
    return (serialization.BestAvailableEncryption(password.encode()) if password
            else serialization.NoEncryption())


@dataclass(frozen=True)
class Issued:
    """A certificate the CA issued, with its private key and the CA chain above it."""

    certificate: x509.Certificate
    key: PrivateKey
    chain: tuple[x509.Certificate, ...]

    @property
    def sha256(self) -> str:
        """Fingerprint of the leaf certificate."""
        return fingerprint(self.certificate)

    @property
    def subject(self) -> str:
        return self.certificate.subject.rfc4514_string()

    def key_pem(self, password: str | None = None) -> str:
        """The private key as PKCS8 PEM, encrypted when ``password`` is given."""
        return self.key.private_bytes(serialization.Encoding.PEM,
                                      serialization.PrivateFormat.PKCS8,
                                      _encryption(password)).decode()

    def chain_pem(self) -> str:
        """Leaf certificate then the CA chain, as PEM (Kafka's
        ``ssl.keystore.certificate.chain``)."""
        return b"".join(_pem(c) for c in (self.certificate, *self.chain)).decode()

    def write_pkcs12(self, path: Path, password: str | None, *,
                     include_key: bool = True) -> Path:
        """A PKCS12 keystore (key, leaf, chain); ``include_key=False`` leaves the key out."""
        data = pkcs12.serialize_key_and_certificates(
            b"connect-plane", self.key if include_key else None, self.certificate,
            list(self.chain) or None, _encryption(password))
        return _write(path, data)

    def write_pem(self, path: Path, password: str | None = None, *,
                  include_key: bool = True) -> Path:
        """A PEM keystore: the private key (encrypted with ``password`` if given) then the
        certificate chain, in one file."""
        key = self.key_pem(password) if include_key else ""
        return _write(path, (key + self.chain_pem()).encode())

    def pair(self) -> KeyPair:
        return KeyPair(self.key, (self.certificate, *self.chain))


def _write(path: Path, data: bytes) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    path.chmod(0o600)
    return path


class TestCA:
    """A self-signed certificate authority that issues server and client certificates."""

    __test__ = False  # not a pytest test class, despite its name

    def __init__(self, common_name: str = "connect-plane test CA", *,
                 key_type: KeyType = "ec", days: int = 30) -> None:
        self.key = _new_key(key_type)
        now = datetime.datetime.now(datetime.UTC)
        self.certificate = (
            x509.CertificateBuilder()
            .subject_name(_name(common_name)).issuer_name(_name(common_name))
            .public_key(self.key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=days))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(
                digital_signature=True, content_commitment=False, key_encipherment=False,
                data_encipherment=False, key_agreement=False, key_cert_sign=True,
                crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
            .sign(self.key, hashes.SHA256()))

    @property
    def sha256(self) -> str:
        return fingerprint(self.certificate)

    @property
    def pem(self) -> str:
        return _pem(self.certificate).decode()

    def _issue(self, common_name: str, *, sans: list[x509.GeneralName],
               usages: list[x509.ObjectIdentifier], key_type: KeyType,
               not_before: datetime.datetime | None, days: float) -> Issued:
        key = _new_key(key_type)
        start = not_before or datetime.datetime.now(datetime.UTC) - datetime.timedelta(minutes=5)
        builder = (
            x509.CertificateBuilder()
            .subject_name(_name(common_name)).issuer_name(self.certificate.subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(start).not_valid_after(start + datetime.timedelta(days=days))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage(usages), critical=False))
        if sans:
            builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        return Issued(builder.sign(self.key, hashes.SHA256()), key, (self.certificate,))

    def issue_server(self, names: Iterable[str] = (), *, common_name: str = "localhost",
                     key_type: KeyType = "ec", days: float = 7,
                     not_before: datetime.datetime | None = None,
                     default_names: bool = True) -> Issued:
        """A server certificate with SANs ``127.0.0.1`` and ``localhost`` (unless
        ``default_names=False``) plus ``names`` (DNS names or IP addresses).

        It also carries the clientAuth usage: a worker presents its keystore as client
        certificate when it forwards to a leader that requires client auth.
        """
        wanted = (["127.0.0.1", "localhost"] if default_names else []) + list(names)
        sans: list[x509.GeneralName] = []
        for name in dict.fromkeys(wanted):
            try:
                sans.append(x509.IPAddress(ipaddress.ip_address(name)))
            except ValueError:
                sans.append(x509.DNSName(name))
        return self._issue(common_name, sans=sans, key_type=key_type, days=days,
                           not_before=not_before,
                           usages=[ExtendedKeyUsageOID.SERVER_AUTH,
                                   ExtendedKeyUsageOID.CLIENT_AUTH])

    def issue_client(self, common_name: str = "client", *, key_type: KeyType = "ec",
                     days: float = 7) -> Issued:
        """A client certificate (clientAuth usage) for mutual TLS."""
        return self._issue(common_name, sans=[], key_type=key_type, days=days,
                           not_before=None, usages=[ExtendedKeyUsageOID.CLIENT_AUTH])

    def write_pem_truststore(self, path: Path) -> Path:
        """A PEM truststore holding this CA's certificate."""
        return _write(path, _pem(self.certificate))

    def write_pkcs12_truststore(self, path: Path, password: str | None) -> Path:
        """A PKCS12 truststore holding this CA's certificate (no key)."""
        data = pkcs12.serialize_key_and_certificates(
            None, None, None, [pkcs12.PKCS12Certificate(self.certificate, b"ca")],
            _encryption(password))
        return _write(path, data)


def client_context(ca: TestCA | None = None, client_cert: Issued | None = None, *,
                   check_hostname: bool = True) -> ssl.SSLContext:
    """A client ``SSLContext`` trusting ``ca`` (no verification without one) and
    presenting ``client_cert``; usable as httpx's ``verify=``."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    if ca is None:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    else:
        context.check_hostname = check_hostname
        trust(context, [ca.certificate])
    if client_cert is not None:
        install_key_pair(context, client_cert.pair(), "client certificate")
    return context


def _address(target: str) -> tuple[str, int]:
    if "://" in target:
        parts = urlsplit(target)
        if parts.hostname is None or parts.port is None:
            raise ValueError(f"{target} names no host and port")
        return parts.hostname, parts.port
    host, _, port = target.rpartition(":")
    return host.strip("[]"), int(port)


def served_fingerprint(target: str, *, ca: TestCA | None = None,
                       client_cert: Issued | None = None, timeout: float = 5.0) -> str:
    """Make a real TLS handshake with ``target`` (``https://host:port`` or ``host:port``)
    and return the SHA-256 fingerprint of the certificate it serves.

    With ``ca`` the chain is verified (a handshake error raises ``ssl.SSLError``);
    ``client_cert`` is presented when the server asks for one.
    """
    host, port = _address(target)
    context = client_context(ca, client_cert, check_hostname=False)
    with socket.create_connection((host, port), timeout=timeout) as raw, \
            context.wrap_socket(raw, server_hostname=host) as tls:
        der = tls.getpeercert(binary_form=True)
    if der is None:  # pragma: no cover - a TLS server always sends a certificate
        raise ssl.SSLError(f"{target} sent no certificate")
    return fingerprint(x509.load_der_x509_certificate(der))
