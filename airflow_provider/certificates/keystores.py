"""Keystores of the REST listeners' TLS: issue a new PKCS12 keystore signed by a CA, read
the certificate of an existing one, and resolve the password placeholders a task can.

:func:`issue_keystore` makes a new key and a certificate the given CA signs (the worker
host names and IPs as subject alternative names), writes them as a PKCS12 keystore with a
new random password, and writes that password to a file of its own, for a worker config
provider placeholder (``${file:<file>:keystore.password}`` for Kafka's FileConfigProvider,
``${dir:<directory>:<file>}`` for its DirectoryConfigProvider) — so the password never
travels in clear through the REST API, Airflow or XCom. Every keystore gets new file names
(a UTC timestamp and a random suffix, created exclusively): the previous keystore and its
password file stay where they are, for a rollback.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
import re
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from airflow_provider.exceptions import KeystoreError
from airflow_provider.hooks.tls import ServedCertificate, describe_certificate

KEY_TYPES = ("ec-p256", "ec-p384", "rsa-2048", "rsa-3072", "rsa-4096")
#: Placeholder forms the password file is written for: Kafka's FileConfigProvider
#: (a properties file) and DirectoryConfigProvider (one file per key).
PLACEHOLDER_KINDS = ("file", "dir")
PASSWORD_KEY = "keystore.password"
# Kafka's placeholder syntax: ${provider:[path:]key}.
_PLACEHOLDER = re.compile(r"^\$\{([^}:]+):(?:([^}]*):)?([^}:]+)\}$")

PrivateKey = ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey


@dataclass(frozen=True)
class IssuedKeystore:
    """A keystore :func:`issue_keystore` wrote. The password is not kept here: it is in
    ``password_file``, and ``password_placeholder`` is how a worker reads it."""

    path: Path
    password_file: Path
    password_placeholder: str
    certificate: ServedCertificate

    def to_dict(self) -> dict[str, Any]:
        """The JSON form, for XCom (no secret in it)."""
        return {"keystore": str(self.path), "keystore_type": "PKCS12",
                "password_file": str(self.password_file),
                "password_placeholder": self.password_placeholder,
                "fingerprint": self.certificate.sha256,
                "certificate": self.certificate.to_dict()}


def _new_key(key_type: str) -> PrivateKey:
    kind, _, size = key_type.partition("-")
    if key_type not in KEY_TYPES:
        raise KeystoreError(f"key_type must be one of {KEY_TYPES}, got {key_type!r}")
    if kind == "ec":
        return ec.generate_private_key(ec.SECP256R1() if size == "p256" else ec.SECP384R1())
    return rsa.generate_private_key(public_exponent=65537, key_size=int(size))


def load_ca(ca_cert: Path, ca_key: Path, ca_key_password: str | None = None
            ) -> tuple[x509.Certificate, PrivateKey]:
    """The CA certificate and key (PEM files), checked: a CA, and a key that matches."""
    try:
        cert = x509.load_pem_x509_certificate(Path(ca_cert).read_bytes())
    except (OSError, ValueError) as exc:
        raise KeystoreError(f"cannot read the CA certificate {str(ca_cert)!r}: "
                            f"{type(exc).__name__}") from exc
    try:
        key = serialization.load_pem_private_key(
            Path(ca_key).read_bytes(), ca_key_password.encode() if ca_key_password else None)
    except (OSError, ValueError, TypeError) as exc:  # never the password, only the file
        raise KeystoreError(f"cannot read the CA key {str(ca_key)!r} (missing, not PEM, or "
                            f"a wrong or missing password): {type(exc).__name__}") from exc
    if not isinstance(key, ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey):
        raise KeystoreError(f"the CA key {str(ca_key)!r} is neither EC nor RSA")
    spki = serialization.PublicFormat.SubjectPublicKeyInfo
    if key.public_key().public_bytes(serialization.Encoding.DER, spki) != \
            cert.public_key().public_bytes(serialization.Encoding.DER, spki):
        raise KeystoreError(f"the CA key {str(ca_key)!r} does not match the CA certificate "
                            f"{str(ca_cert)!r}")
    try:
        is_ca = cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    except x509.ExtensionNotFound:
        is_ca = False
    if not is_ca:
        raise KeystoreError(f"{str(ca_cert)!r} is not a CA certificate (no BasicConstraints "
                            "ca=true)")
    return cert, key


def _san(name: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(name))
    except ValueError:
        return x509.DNSName(name)


def issue_certificate(key: PrivateKey, ca_cert: x509.Certificate, ca_key: PrivateKey, *,
                      names: Sequence[str], common_name: str | None = None,
                      validity_days: int = 90, now: dt.datetime | None = None
                      ) -> x509.Certificate:
    """A server (and client) certificate for ``key``, signed by the CA, valid from five
    minutes ago for ``validity_days`` but never beyond the CA's own expiry."""
    unique = list(dict.fromkeys(name.strip() for name in names if name and name.strip()))
    if not unique:
        raise KeystoreError("no host name or IP address to put in the certificate")
    if validity_days < 1:
        raise KeystoreError(f"validity_days must be at least 1, got {validity_days}")
    now = now or dt.datetime.now(dt.UTC)
    not_after = min(now + dt.timedelta(days=validity_days), ca_cert.not_valid_after_utc)
    usage = x509.KeyUsage(
        digital_signature=True, key_encipherment=isinstance(key, rsa.RSAPrivateKey),
        content_commitment=False, data_encipherment=False, key_agreement=False,
        key_cert_sign=False, crl_sign=False, encipher_only=False, decipher_only=False)
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME,
                                                    common_name or unique[0])]))
        .issuer_name(ca_cert.subject).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(usage, critical=True)
        # Server auth for the listener; client auth for the worker's own forwarding calls
        # under ssl.client.auth=required.
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH,
                                              ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName([_san(name) for name in unique]),
                       critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()),
                       critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
                       critical=False))
    return builder.sign(ca_key, hashes.SHA256())


def _write_new(path: Path, data: bytes, mode: int) -> None:
    """Create ``path`` with ``data``; never replaces an existing file."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


def placeholder_for(kind: str, password_file: Path, provider: str | None = None) -> str:
    """The placeholder under which a worker reads ``password_file``: ``file`` →
    ``${file:<file>:keystore.password}``, ``dir`` → ``${dir:<directory>:<file name>}``
    (``provider``: the config provider's name on the worker, by default ``kind``)."""
    if kind not in PLACEHOLDER_KINDS:
        raise KeystoreError(f"placeholder must be one of {PLACEHOLDER_KINDS}, got {kind!r}")
    name = provider or kind
    if kind == "file":
        return f"${{{name}:{password_file}:{PASSWORD_KEY}}}"
    return f"${{{name}:{password_file.parent}:{password_file.name}}}"


def issue_keystore(directory: str | Path, *, ca_cert: str | Path, ca_key: str | Path,
                   names: Sequence[str], ca_key_password: str | None = None,
                   common_name: str | None = None, key_type: str = "ec-p256",
                   validity_days: int = 90, placeholder: str = "file",
                   provider: str | None = None, file_mode: int = 0o600,
                   now: dt.datetime | None = None) -> IssuedKeystore:
    """Write a new PKCS12 keystore (a new key, a certificate the CA signs for ``names``,
    the CA certificate as its chain) and its new random password's file into
    ``directory``; existing files are never touched. Files are created with
    ``file_mode`` (owner-only by default: the worker must run as the same user, or be
    given the group)."""
    if placeholder not in PLACEHOLDER_KINDS:
        raise KeystoreError(f"placeholder must be one of {PLACEHOLDER_KINDS}, got "
                            f"{placeholder!r}")
    ca_certificate, ca_private_key = load_ca(Path(ca_cert), Path(ca_key), ca_key_password)
    key = _new_key(key_type)
    cert = issue_certificate(key, ca_certificate, ca_private_key, names=names,
                             common_name=common_name, validity_days=validity_days, now=now)
    password = secrets.token_urlsafe(32)  # [A-Za-z0-9_-]: no escaping in a properties file
    encryption = (serialization.PrivateFormat.PKCS12.encryption_builder().kdf_rounds(50_000)
                  .key_cert_algorithm(pkcs12.PBES.PBESv2SHA256AndAES256CBC)
                  .hmac_hash(hashes.SHA256()).build(password.encode()))
    data = pkcs12.serialize_key_and_certificates(b"connect-rest", key, cert, [ca_certificate],
                                                 encryption)
    folder = Path(directory).resolve()
    folder.mkdir(parents=True, exist_ok=True)
    stamp = (now or dt.datetime.now(dt.UTC)).strftime("%Y%m%dT%H%M%SZ")
    base = f"keystore-{stamp}-{secrets.token_hex(3)}"
    password_file = folder / (f"{base}.password.properties" if placeholder == "file"
                              else f"{base}.password")
    secret = f"{PASSWORD_KEY}={password}\n" if placeholder == "file" else password
    _write_new(password_file, secret.encode(), file_mode)
    path = folder / f"{base}.p12"
    try:
        _write_new(path, data, file_mode)
    except OSError:
        password_file.unlink(missing_ok=True)
        raise
    return IssuedKeystore(path, password_file, placeholder_for(placeholder, password_file,
                                                               provider),
                          describe_certificate(cert))


def keystore_certificate(location: str | Path, password: str | None,
                         keystore_type: str = "PKCS12") -> x509.Certificate:
    """The leaf certificate of a PKCS12 or PEM keystore (for PEM the first certificate
    of the file). Errors name the file and the problem, never the password."""
    kind = (keystore_type or "PKCS12").upper()
    try:
        data = Path(location).read_bytes()
    except OSError as exc:
        raise KeystoreError(f"cannot read keystore {str(location)!r}: "
                            f"{exc.strerror or type(exc).__name__}") from exc
    if kind == "PEM":
        try:
            return x509.load_pem_x509_certificates(data)[0]
        except ValueError:
            raise KeystoreError(f"keystore {str(location)!r} holds no PEM certificate") from None
    if kind != "PKCS12":
        raise KeystoreError(f"keystore type {keystore_type!r} cannot be read here (PKCS12 "
                            "or PEM)")
    try:
        loaded = pkcs12.load_pkcs12(data, password.encode() if password else None)
    except ValueError:
        raise KeystoreError(f"cannot open keystore {str(location)!r}: not PKCS12, or a "
                            "wrong password") from None
    if loaded.cert is None:
        raise KeystoreError(f"keystore {str(location)!r} holds no certificate with a key")
    return loaded.cert.certificate


def _properties(text: str) -> dict[str, str]:
    """``key=value`` / ``key: value`` lines of a Java properties file (no escapes, no
    continuation lines: the files this module writes)."""
    values = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line[0] in "#!":
            continue
        parts = re.split(r"\s*[=:]\s*|\s+", line, maxsplit=1)
        key, value = parts[0], parts[1] if len(parts) > 1 else ""
        values[key] = value
    return values


def resolve_locally(value: str) -> str | None:
    """``value`` with a placeholder of Kafka's built-in providers under their usual names
    resolved where the task runs — ``${file:<properties file>:<key>}``,
    ``${dir:<directory>:<file>}``, ``${env:<variable>}`` — or ``value`` itself when it is no
    placeholder; ``None`` when it cannot be resolved here."""
    match = _PLACEHOLDER.match(value.strip())
    if match is None:
        return value
    provider, path, key = match.groups()
    try:
        if provider == "file" and path:
            return _properties(Path(path).read_text(encoding="utf-8")).get(key)
        if provider == "dir" and path:
            return (Path(path) / key).read_text(encoding="utf-8")
    except OSError:
        return None
    if provider == "env" and not path:
        return os.environ.get(key)
    return None
