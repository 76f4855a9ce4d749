"""Keystores and truststores of the HTTPS listeners, read with ``cryptography``.

Kafka's keystore types: ``PKCS12``, ``PEM`` (a file holding the private key and the
certificate chain, or the inline ``ssl.keystore.key`` + ``ssl.keystore.certificate.chain``)
and ``JKS``. No maintained Python library reads JKS, so a JKS file is refused with the
``keytool`` command that converts it; as Java does, a file of type ``JKS`` that is really
PKCS12 (``keytool``'s default since Java 9) is read.

Every problem is a :class:`~worker.errors.ConfigError` naming the key and the problem;
no value appears in a message — not a password, not key material, not even a location or
a store type, which may have been resolved from a ``${provider:...}`` placeholder. A file
is "the keystore file" or "the truststore file" there: the key says which.

A private key reaches OpenSSL without touching the disk unencrypted: through an anonymous
in-memory file (``os.memfd_create``); where that does not exist, through a 0600 file in a
private directory, encrypted with a one-time password and deleted as soon as OpenSSL has
read it.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import ssl
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes
from cryptography.hazmat.primitives.serialization import pkcs12

from worker.errors import ConfigError
from worker.util.files import FileTooLargeError, NotRegularFileError, read_regular_file

_PEM_KEY = re.compile(rb"-----BEGIN ([A-Z ]*)PRIVATE KEY-----.+?-----END \1PRIVATE KEY-----",
                      re.DOTALL)
_JKS_MAGIC = b"\xfe\xed\xfe\xed"
_JCEKS_MAGIC = b"\xce\xce\xce\xce"
#: Keystore types we read; JKS only when the file is PKCS12 (see the module docstring).
STORE_TYPES = ("JKS", "PKCS12", "PEM")


@dataclass(frozen=True)
class StoreKeys:
    """The effective key names of one store's settings (prefixed or not), for messages."""

    location: str
    password: str
    type: str
    key_password: str = ""
    inline_key: str = ""
    inline_chain: str = ""
    inline_certificates: str = ""


@dataclass(frozen=True)
class KeyPair:
    """A private key with its certificate chain, leaf first. ``repr`` hides the key."""

    key: PrivateKeyTypes
    chain: tuple[x509.Certificate, ...]

    def __repr__(self) -> str:
        return f"KeyPair(subject={self.chain[0].subject.rfc4514_string()!r}, key=[hidden])"


def _kind(data: bytes) -> str:
    """What a store file holds: ``pem``, ``pkcs12``, ``jks``, ``jceks`` or ``unknown``."""
    if data.startswith((_JKS_MAGIC, _JCEKS_MAGIC)):
        return "jks" if data.startswith(_JKS_MAGIC) else "jceks"
    if b"-----BEGIN " in data[:4096]:
        return "pem"
    # PKCS12's PFX is an ASN.1 SEQUENCE whose first element is the INTEGER version 3.
    if len(data) > 8 and data[0] == 0x30:
        size = data[1]
        start = 2 + (size & 0x7F if size & 0x80 else 0)
        if data[start:start + 3] == b"\x02\x01\x03":
            return "pkcs12"
    return "unknown"


#: Largest keystore or truststore file read (a PEM bundle of every public CA is ~250 KiB).
MAX_STORE_BYTES = 16 * 1024 * 1024


def _read(key: str, location: str) -> bytes:
    """The store file's bytes; never waits on a FIFO or device, never reads unbounded."""
    try:
        return read_regular_file(location, MAX_STORE_BYTES)
    except FileNotFoundError:
        raise ConfigError(key, "the file does not exist") from None
    except NotRegularFileError:
        raise ConfigError(key, "the path is not a regular file") from None
    except FileTooLargeError:
        raise ConfigError(key, f"the file is larger than {MAX_STORE_BYTES} bytes") from None
    except OSError as exc:
        raise ConfigError(key, f"the file cannot be read: {exc.strerror}") from None


def _convert_hint(keys: StoreKeys, source: str) -> str:
    return (f"{source} is a Java JKS keystore, which connect-plane cannot read (no "
            "maintained Python library reads JKS). Convert it to PKCS12: keytool "
            "-importkeystore -srckeystore <file> -srcstoretype JKS -destkeystore <file>.p12 "
            f"-deststoretype PKCS12; then set {keys.location} to the .p12 file and "
            f"{keys.type}=PKCS12")


def _check_kind(keys: StoreKeys, source: str, store_type: str, data: bytes) -> str:
    """The format to read ``data`` as, or a ConfigError for a file of the wrong kind.
    ``store_type`` is one of :data:`STORE_TYPES` (checked), so it may be named."""
    kind = _kind(data)
    if kind in ("jks", "jceks"):
        if kind == "jceks":
            raise ConfigError(keys.location, f"{source} is a JCEKS keystore, which "
                                             "connect-plane cannot read; convert it to PKCS12 "
                                             "with keytool -importkeystore")
        raise ConfigError(keys.location, _convert_hint(keys, source))
    if store_type == "PEM":
        if kind != "pem":
            raise ConfigError(keys.location, f"{source} is not a PEM file ({keys.type}=PEM)")
        return "pem"
    if kind == "pem":
        raise ConfigError(keys.location, f"{source} is a PEM file; set {keys.type}=PEM")
    if kind != "pkcs12":
        raise ConfigError(keys.location, f"{source} is not a {store_type} keystore")
    return "pkcs12"


def check_type(keys: StoreKeys, store_type: str) -> str:
    """Kafka's store type, upper-cased; a ConfigError for a type we do not read."""
    upper = store_type.strip().upper()
    if upper not in STORE_TYPES:
        raise ConfigError(keys.type, "unsupported store type; use PKCS12 or PEM (JKS only "
                                     "for a file that is really PKCS12)")
    return upper


def _public_der(key_or_cert: PrivateKeyTypes | x509.Certificate) -> bytes:
    public = key_or_cert.public_key()
    return public.public_bytes(serialization.Encoding.DER,
                               serialization.PublicFormat.SubjectPublicKeyInfo)


def _pair(keys: StoreKeys, source: str, key: PrivateKeyTypes | None,
          certs: list[x509.Certificate]) -> KeyPair:
    if key is None:
        raise ConfigError(keys.location, f"{source} holds no private key")
    if not certs:
        raise ConfigError(keys.location, f"{source} holds no certificate")
    public = _public_der(key)
    leaves = [c for c in certs if _public_der(c) == public]
    if not leaves:
        raise ConfigError(keys.location, f"the private key in {source} does not match its "
                                         "certificate")
    leaf = leaves[0]
    return KeyPair(key, (leaf, *(c for c in certs if c is not leaf)))


def _pem_key(keys: StoreKeys, source: str, data: bytes, password: str | None
             ) -> PrivateKeyTypes | None:
    blocks = [m.group(0) for m in _PEM_KEY.finditer(data)]
    if not blocks:
        return None
    if len(blocks) > 1:
        raise ConfigError(keys.location, f"{source} holds {len(blocks)} private keys; "
                                         "expected one")
    secret = password.encode() if password else None
    try:
        return serialization.load_pem_private_key(blocks[0], secret)
    except TypeError:
        if secret is None:
            raise ConfigError(keys.key_password, f"the private key in {source} is encrypted "
                                                 "and no key password is set") from None
        # A password for a key that is not encrypted: the key is usable as it is.
        return serialization.load_pem_private_key(blocks[0], None)
    except ValueError:
        raise ConfigError(keys.key_password, f"the private key in {source} cannot be "
                                             "decrypted: wrong password, or not a valid "
                                             "key") from None


def _pem_certs(keys: StoreKeys, source: str, data: bytes) -> list[x509.Certificate]:
    if b"-----BEGIN CERTIFICATE-----" not in data:
        return []
    try:
        return x509.load_pem_x509_certificates(data)
    except ValueError:
        raise ConfigError(keys.location, f"{source} holds a certificate that is not valid "
                                         "PEM") from None


def _pkcs12(keys: StoreKeys, source: str, data: bytes, password: str | None
            ) -> pkcs12.PKCS12KeyAndCertificates:
    try:
        return pkcs12.load_pkcs12(data, password.encode() if password else None)
    except ValueError:
        if not password:
            raise ConfigError(keys.password, f"{source} needs a password, and none is "
                                             "set") from None
        raise ConfigError(keys.password, f"{source} cannot be opened: wrong password, or "
                                         "a corrupt PKCS12 file") from None
    except Exception as exc:  # noqa: BLE001 - e.g. UnsupportedAlgorithm; no secret inside
        raise ConfigError(keys.location, f"{source} cannot be read as PKCS12 "
                                         f"({type(exc).__name__})") from None


def load_keystore(keys: StoreKeys, *, location: str | None, store_type: str,
                  password: str | None, key_password: str | None,
                  inline_key: str | None = None, inline_chain: str | None = None) -> KeyPair:
    """The key pair of a keystore: a file (PKCS12 or PEM) or Kafka's inline PEM keys.

    For PEM the key password is ``ssl.key.password``, else the keystore password (as
    Jetty falls back); a PKCS12 file has one password for the store and its key.
    """
    store_type = check_type(keys, store_type)
    if inline_key or inline_chain:
        if store_type != "PEM":
            raise ConfigError(keys.inline_key, f"inline PEM keys need {keys.type}=PEM")
        if location:
            raise ConfigError(keys.inline_key, f"both {keys.location} and {keys.inline_key} "
                                               "are set; use one")
        if not inline_key:
            raise ConfigError(keys.inline_chain, f"{keys.inline_chain} is set but "
                                                 f"{keys.inline_key} is not")
        if not inline_chain:
            raise ConfigError(keys.inline_key, f"{keys.inline_key} is set but "
                                               f"{keys.inline_chain} is not")
        key = _pem_key(keys, keys.inline_key, inline_key.encode(), key_password or password)
        return _pair(keys, keys.inline_key, key,
                     _pem_certs(keys, keys.inline_chain, inline_chain.encode()))
    if not location:
        raise ConfigError(keys.location, "an https listener needs a keystore, and none is "
                                         "set")
    data = _read(keys.location, location)
    source = "the keystore file"
    if _check_kind(keys, source, store_type, data) == "pem":
        key = _pem_key(keys, source, data, key_password or password)
        return _pair(keys, source, key, _pem_certs(keys, source, data))
    store = _pkcs12(keys, source, data, password)
    certs = [store.cert.certificate] if store.cert else []
    certs += [c.certificate for c in store.additional_certs]
    return _pair(keys, source, store.key, certs)


def load_truststore(keys: StoreKeys, *, location: str | None, store_type: str,
                    password: str | None, inline_certificates: str | None = None
                    ) -> list[x509.Certificate]:
    """The trusted certificates of a truststore (PKCS12 or PEM file, or inline PEM)."""
    store_type = check_type(keys, store_type)
    if inline_certificates:
        if store_type != "PEM":
            raise ConfigError(keys.inline_certificates,
                              f"inline PEM certificates need {keys.type}=PEM")
        if location:
            raise ConfigError(keys.inline_certificates,
                              f"both {keys.location} and {keys.inline_certificates} are "
                              "set; use one")
        certs = _pem_certs(keys, keys.inline_certificates, inline_certificates.encode())
        source = keys.inline_certificates
    else:
        if not location:
            return []
        data = _read(keys.location, location)
        source = "the truststore file"
        if _check_kind(keys, source, store_type, data) == "pem":
            certs = _pem_certs(keys, source, data)
        else:
            store = _pkcs12(keys, source, data, password)
            certs = [store.cert.certificate] if store.cert else []
            certs += [c.certificate for c in store.additional_certs]
    if not certs:
        raise ConfigError(keys.location, f"{source} holds no certificate")
    return certs


def trust(context: ssl.SSLContext, certs: list[x509.Certificate]) -> None:
    """Trust ``certs`` in ``context``; with none, the system's default CAs (as Java trusts
    its ``cacerts`` when no truststore is set)."""
    if certs:
        context.load_verify_locations(cadata="".join(
            c.public_bytes(serialization.Encoding.PEM).decode() for c in certs))
    else:
        context.load_default_certs(ssl.Purpose.CLIENT_AUTH
                                   if context.protocol == ssl.PROTOCOL_TLS_SERVER
                                   else ssl.Purpose.SERVER_AUTH)


@contextlib.contextmanager
def _key_file(pair: KeyPair) -> Iterator[tuple[str, str | None]]:
    """A path OpenSSL can read the chain and key from, and the password it needs."""
    chain = b"".join(c.public_bytes(serialization.Encoding.PEM) for c in pair.chain)
    memfd_create = getattr(os, "memfd_create", None)
    if memfd_create is not None and Path("/proc/self/fd").is_dir():
        fd = memfd_create("connect-plane-keystore", getattr(os, "MFD_CLOEXEC", 0))
        try:
            os.write(fd, chain + pair.key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption()))
            yield f"/proc/self/fd/{fd}", None
        finally:
            os.close(fd)
        return
    # No memfd (not Linux): a private directory, a 0600 file, the key encrypted with a
    # password that lives only in this process; removed as soon as OpenSSL has read it.
    one_time = secrets.token_urlsafe(24)
    directory = tempfile.mkdtemp(prefix="connect-plane-tls-")
    path = os.path.join(directory, "keystore.pem")
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(chain + pair.key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                serialization.BestAvailableEncryption(one_time.encode())))
        yield path, one_time
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def install_key_pair(context: ssl.SSLContext, pair: KeyPair, key_name: str) -> None:
    """Load ``pair`` into ``context`` (certificate chain and private key), in memory."""
    with _key_file(pair) as (path, password):
        try:
            context.load_cert_chain(path, password=password)
        except ssl.SSLError as exc:
            raise ConfigError(key_name, f"OpenSSL refused the key pair: "
                                        f"{exc.reason or exc}") from None
