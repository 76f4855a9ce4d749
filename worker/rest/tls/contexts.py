"""TLS of the REST listeners and of inter-worker requests, configured Kafka's way.

**Settings.** An ``https`` listener reads ``listeners.https.ssl.*`` (an admin listener
``admin.listeners.https.ssl.*``) with the unprefixed ``ssl.*`` keys as fallback, exactly
as Kafka's ``AbstractConfig.valuesWithPrefixAllOrNothing``: if *any* key starts with the
prefix, only the prefixed keys count (with Kafka's defaults for the others) and every
unprefixed ``ssl.*`` key is ignored; otherwise only the unprefixed keys count.
:func:`tls_settings` does that and remembers which key each value came from, so errors
name the key the user wrote.

**Contexts.** :func:`build_server_context` loads keystore and truststore
(``worker.rest.tls.stores``) into a fresh ``ssl.SSLContext`` with the client-auth mode,
protocol range and cipher suites; :class:`ClientTls` builds the context of requests to
other workers (Kafka's REST client uses the ``listeners.https.`` settings: truststore,
keystore as client certificate, ``ssl.endpoint.identification.algorithm``).

**Messages** name the key and the problem, never a value: any value may have been resolved
from a ``${provider:...}`` placeholder (a location, a store type, a protocol list), and a
piece of it quoted after splitting would escape the redaction of whole values.

**Hot reload.** A listener is served with a :class:`SwappableServerContext`: asyncio and
uvloop wrap every accepted connection with ``context.wrap_bio(...)``, which this context
hands to its *current* real context. Swapping the current context changes what every new
handshake gets — certificate, trust, client auth, protocols, ciphers — while established
connections keep the ``SSLObject`` (and context) they were made with.
"""

from __future__ import annotations

import datetime
import ssl
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes

from worker.errors import ConfigError
from worker.rest.tls.ciphers import openssl_ciphers, protocol_range
from worker.rest.tls.stores import (
    KeyPair,
    StoreKeys,
    install_key_pair,
    load_keystore,
    load_truststore,
    trust,
)

#: Prefix of the regular https listeners' settings (and of inter-worker requests).
LISTENERS_PREFIX = "listeners.https."
#: Prefix of the https admin listeners' settings.
ADMIN_PREFIX = "admin.listeners.https."

#: Kafka's defaults (``SslConfigs``, ``BrokerSecurityConfigs``) where we keep them.
DEFAULTS: dict[str, str] = {
    "ssl.keystore.type": "JKS",  # Kafka's default; a PKCS12 file is read under it, as Java does
    "ssl.truststore.type": "JKS",
    "ssl.protocol": "TLSv1.3",
    "ssl.enabled.protocols": "TLSv1.2,TLSv1.3",
    "ssl.client.auth": "none",
    "ssl.endpoint.identification.algorithm": "https",
}
#: What the dynamic worker configuration may change at run time (phase 1), per prefix.
PHASE1_SUFFIXES = (
    "ssl.keystore.location", "ssl.keystore.password", "ssl.keystore.type", "ssl.key.password",
    "ssl.truststore.location", "ssl.truststore.password", "ssl.truststore.type",
    "ssl.enabled.protocols", "ssl.cipher.suites", "ssl.client.auth",
)
_CLIENT_AUTH = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL,
                "required": ssl.CERT_REQUIRED}


def phase1_keys(prefix: str) -> frozenset[str]:
    """The reconfigurable keys of listeners configured under ``prefix``."""
    return frozenset(prefix + suffix for suffix in PHASE1_SUFFIXES)


@dataclass(frozen=True)
class TlsSettings:
    """The ``ssl.*`` settings one kind of listener uses, after the all-or-nothing rule.

    ``values`` is keyed by the unprefixed name (``ssl.keystore.location``); ``prefix`` is
    the prefix those values were written with (``""`` when the fallback applied). The
    ``repr`` shows key names only: values may be passwords.
    """

    prefix: str
    values: Mapping[str, str]

    def key(self, name: str) -> str:
        """The key as the user wrote it (``listeners.https.ssl.keystore.location``)."""
        return self.prefix + name

    def get(self, name: str) -> str | None:
        value = self.values.get(name)
        if value is None or not value.strip():
            return DEFAULTS.get(name)
        return value if name.endswith(("password", ".key", ".chain", ".certificates")) \
            else value.strip()

    def get_list(self, name: str) -> list[str]:
        value = self.get(name)
        return [part.strip() for part in value.split(",")] if value else []

    def __repr__(self) -> str:
        return f"TlsSettings(prefix={self.prefix!r}, keys={sorted(self.values)})"


def tls_settings(config: Mapping[str, str], prefix: str) -> TlsSettings:
    """Kafka's ``valuesWithPrefixAllOrNothing(prefix)`` restricted to ``ssl.*`` keys."""
    prefixed = {k[len(prefix):]: v for k, v in config.items() if k.startswith(prefix)}
    if prefixed:
        return TlsSettings(prefix, {k: v for k, v in prefixed.items() if k.startswith("ssl.")})
    return TlsSettings("", {k: v for k, v in config.items() if k.startswith("ssl.")})


def _store_keys(settings: TlsSettings, store: str) -> StoreKeys:
    key = settings.key
    if store == "keystore":
        return StoreKeys(key("ssl.keystore.location"), key("ssl.keystore.password"),
                         key("ssl.keystore.type"), key_password=key("ssl.key.password"),
                         inline_key=key("ssl.keystore.key"),
                         inline_chain=key("ssl.keystore.certificate.chain"))
    return StoreKeys(key("ssl.truststore.location"), key("ssl.truststore.password"),
                     key("ssl.truststore.type"),
                     inline_certificates=key("ssl.truststore.certificates"))


def _keystore(settings: TlsSettings) -> KeyPair:
    return load_keystore(
        _store_keys(settings, "keystore"), location=settings.get("ssl.keystore.location"),
        store_type=settings.get("ssl.keystore.type") or "JKS",
        password=settings.get("ssl.keystore.password"),
        key_password=settings.get("ssl.key.password"),
        inline_key=settings.get("ssl.keystore.key"),
        inline_chain=settings.get("ssl.keystore.certificate.chain"))


def _truststore(settings: TlsSettings) -> list[x509.Certificate]:
    return load_truststore(
        _store_keys(settings, "truststore"), location=settings.get("ssl.truststore.location"),
        store_type=settings.get("ssl.truststore.type") or "JKS",
        password=settings.get("ssl.truststore.password"),
        inline_certificates=settings.get("ssl.truststore.certificates"))


def _algorithms(context: ssl.SSLContext, settings: TlsSettings) -> None:
    low, high = protocol_range(settings.key("ssl.enabled.protocols"),
                               settings.get_list("ssl.enabled.protocols"),
                               settings.key("ssl.protocol"), settings.get("ssl.protocol") or "")
    context.minimum_version, context.maximum_version = low, high
    ciphers = openssl_ciphers(settings.key("ssl.cipher.suites"),
                              settings.get_list("ssl.cipher.suites"))
    if ciphers is not None:
        try:
            context.set_ciphers(ciphers)
        except ssl.SSLError:
            raise ConfigError(settings.key("ssl.cipher.suites"),
                              "OpenSSL offers none of the listed cipher suites") from None


@dataclass(frozen=True)
class CertificateInfo:
    """What identifies a served certificate; ``sha256`` is the fingerprint of its DER
    encoding (64 lowercase hex digits), ``serial`` lowercase hex."""

    sha256: str
    subject: str
    issuer: str
    serial: str
    not_before: datetime.datetime
    not_after: datetime.datetime

    @classmethod
    def of(cls, cert: x509.Certificate) -> CertificateInfo:
        return cls(sha256=cert.fingerprint(hashes.SHA256()).hex(),
                   subject=cert.subject.rfc4514_string(), issuer=cert.issuer.rfc4514_string(),
                   serial=format(cert.serial_number, "x"),
                   not_before=cert.not_valid_before_utc, not_after=cert.not_valid_after_utc)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict; times in ISO 8601 UTC."""
        return {"sha256": self.sha256, "subject": self.subject, "issuer": self.issuer,
                "serial": self.serial, "not_before": _iso(self.not_before),
                "not_after": _iso(self.not_after)}


def _iso(moment: datetime.datetime) -> str:
    return moment.astimezone(datetime.UTC).isoformat().replace("+00:00", "Z")


@dataclass(frozen=True)
class ServedListener:
    """One listener of this worker and the certificate it serves (None for http)."""

    url: str
    protocol: str
    admin: bool
    certificate: CertificateInfo | None

    def to_json(self) -> dict[str, Any]:
        return {"url": self.url, "protocol": self.protocol, "admin": self.admin,
                "certificate": self.certificate.to_json() if self.certificate else None}


@dataclass(frozen=True)
class ServerTls:
    """A built server context and the certificate it serves."""

    context: ssl.SSLContext
    certificate: CertificateInfo


def build_server_context(settings: TlsSettings) -> ServerTls:
    """A server context from ``settings``; ConfigError naming the key on any problem."""
    client_auth = (settings.get("ssl.client.auth") or "none").lower()
    if client_auth not in _CLIENT_AUTH:
        # Never the value: it may come from a placeholder (module docstring, "Messages").
        raise ConfigError(settings.key("ssl.client.auth"),
                          "is not one of none, requested, required")
    pair = _keystore(settings)
    trusted = _truststore(settings)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.set_alpn_protocols(["http/1.1"])  # what uvicorn's own contexts announce
    _algorithms(context, settings)
    install_key_pair(context, pair, settings.key("ssl.keystore.location"))
    context.verify_mode = _CLIENT_AUTH[client_auth]
    if context.verify_mode != ssl.CERT_NONE:
        trust(context, trusted)
    return ServerTls(context, CertificateInfo.of(pair.chain[0]))


def build_client_context(settings: TlsSettings) -> ssl.SSLContext:
    """The context of requests to other workers: verify them against the truststore (the
    system CAs without one), check their host name unless
    ``ssl.endpoint.identification.algorithm`` is empty, present the keystore if any."""
    algorithm = (settings.values.get("ssl.endpoint.identification.algorithm",
                                     DEFAULTS["ssl.endpoint.identification.algorithm"])
                 .strip().lower())
    if algorithm not in ("https", ""):
        raise ConfigError(settings.key("ssl.endpoint.identification.algorithm"),
                          "must be https or empty")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    _algorithms(context, settings)
    context.check_hostname = algorithm == "https"
    context.verify_mode = ssl.CERT_REQUIRED
    trust(context, _truststore(settings))
    if settings.get("ssl.keystore.location") or settings.get("ssl.keystore.key"):
        install_key_pair(context, _keystore(settings), settings.key("ssl.keystore.location"))
    return context


class SwappableServerContext(ssl.SSLContext):
    """An ``SSLContext`` whose connections are made by the current real context.

    Pass it to ``loop.create_server(ssl=...)`` (uvicorn's ``ssl_context_factory``): the
    event loop calls :meth:`wrap_bio` once per accepted connection, so :meth:`swap` takes
    effect for the next handshake, and connections already made keep their context.
    """

    def __new__(cls, current: ssl.SSLContext) -> SwappableServerContext:
        return super().__new__(cls, ssl.PROTOCOL_TLS_SERVER)

    def __init__(self, current: ssl.SSLContext) -> None:
        self._current = current

    @property
    def current(self) -> ssl.SSLContext:
        return self._current

    def swap(self, context: ssl.SSLContext) -> None:
        """Make ``context`` the one new connections use (one reference assignment)."""
        self._current = context

    def wrap_bio(self, incoming: ssl.MemoryBIO, outgoing: ssl.MemoryBIO,
                 server_side: bool = False, server_hostname: str | bytes | None = None,
                 session: ssl.SSLSession | None = None) -> ssl.SSLObject:
        return self._current.wrap_bio(incoming, outgoing, server_side=server_side,
                                      server_hostname=server_hostname, session=session)

    def wrap_socket(self, *args: Any, **kwargs: Any) -> ssl.SSLSocket:
        return self._current.wrap_socket(*args, **kwargs)


class ClientTls:
    """The worker's TLS context for requests to other workers, rebuilt on reconfigure.

    Built lazily (Kafka loads it only for an https URL, KAFKA-14816) unless
    :meth:`prepare` is called; ``context()`` raises ConfigError while the settings are
    invalid. ``version`` changes whenever the context does, so clients know to rebuild.
    """

    def __init__(self, config: Mapping[str, str]) -> None:
        self._settings = tls_settings(config, LISTENERS_PREFIX)
        self._context: ssl.SSLContext | None = None
        self._lock = threading.Lock()

    @staticmethod
    def build(config: Mapping[str, str]) -> ssl.SSLContext:
        """A new context from ``config``, without installing it (validation)."""
        return build_client_context(tls_settings(config, LISTENERS_PREFIX))

    def context(self) -> ssl.SSLContext:
        with self._lock:
            if self._context is None:
                self._context = build_client_context(self._settings)
            return self._context

    def install(self, config: Mapping[str, str], context: ssl.SSLContext | None) -> None:
        """Use ``context`` (built from ``config`` by :meth:`build`; None: build it from
        ``config`` when first needed) from now on."""
        with self._lock:
            self._settings = tls_settings(config, LISTENERS_PREFIX)
            self._context = context
