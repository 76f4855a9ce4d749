"""Which certificate a TLS server serves, read by a real handshake (sync and async).

A worker's ``/admin/worker`` says which certificate it *means* to serve; only a handshake
shows what a client really gets. :func:`served_certificate` (blocking, for operators and
DAG tasks) and :func:`aserved_certificate` (asyncio streams, for triggers: nothing blocks
the event loop) connect to an ``https://`` URL, complete the handshake and return the leaf
certificate as :class:`ServedCertificate` — ``sha256`` is the SHA-256 of its DER bytes as
64 lowercase hex characters, the fingerprint ``/admin/worker`` reports.

Verification follows the ``kafka_connect`` connection's TLS settings
(:class:`TlsClientOptions`: ``verify``, ``ca_bundle``, ``client_cert``/``client_key`` for a
worker that requires client certificates), so a certificate the connection would refuse
fails the check too. :func:`wait_for_certificates` and :func:`await_certificates` repeat
handshakes until every URL serves the fingerprint expected there, within a bounded time.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import hashlib
import socket
import ssl
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from cryptography import x509

from airflow_provider.exceptions import (
    CertificateNotServedError,
    KafkaConnectConfigError,
    TlsHandshakeError,
)
from airflow_provider.hooks.connection import ConnectionSettings

DEFAULT_HANDSHAKE_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class TlsClientOptions:
    """How the client side of a handshake verifies the server and authenticates itself:
    the TLS extras of a ``kafka_connect`` connection."""

    verify: bool = True
    ca_bundle: str | None = None
    client_cert: str | None = None
    client_key: str | None = None

    @classmethod
    def from_settings(cls, settings: ConnectionSettings) -> TlsClientOptions:
        """The TLS settings of a connection."""
        return cls(settings.verify, settings.ca_bundle, settings.client_cert,
                   settings.client_key)


def client_context(options: TlsClientOptions) -> ssl.SSLContext:
    """An ``SSLContext`` for ``options`` (reads the CA bundle and client files: a blocking
    call, run it in a thread from async code). With ``verify`` and no ``ca_bundle`` the
    trust store is certifi's, as httpx's."""
    try:
        if options.verify:
            if options.ca_bundle:
                context = ssl.create_default_context(cafile=options.ca_bundle)
            else:
                import certifi  # httpx's own default trust store

                context = ssl.create_default_context(cafile=certifi.where())
        else:
            context = ssl.create_default_context()
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        if options.client_cert:
            context.load_cert_chain(options.client_cert, options.client_key)
    except (OSError, ssl.SSLError) as exc:  # missing file, not PEM, key does not match
        raise KafkaConnectConfigError(
            f"cannot load the connection's TLS files (ca_bundle={options.ca_bundle!r}, "
            f"client_cert={options.client_cert!r}): {exc}") from exc
    return context


@dataclass(frozen=True)
class ServedCertificate:
    """The leaf certificate a server presented at ``url``."""

    url: str
    sha256: str
    subject: str
    issuer: str
    serial: str
    not_before: dt.datetime
    not_after: dt.datetime
    #: DNS names and IP addresses of the subject alternative names.
    names: tuple[str, ...] = ()

    def days_left(self, now: dt.datetime | None = None) -> float:
        """Days until ``not_after`` (negative once expired)."""
        now = now or dt.datetime.now(dt.UTC)
        return (self.not_after - now).total_seconds() / 86400

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (dates ISO-8601 UTC), for XCom."""
        return {"url": self.url, "sha256": self.sha256, "subject": self.subject,
                "issuer": self.issuer, "serial": self.serial,
                "not_before": self.not_before.isoformat(),
                "not_after": self.not_after.isoformat(), "names": list(self.names)}


def fingerprint(der: bytes) -> str:
    """SHA-256 of a DER certificate, 64 lowercase hex characters."""
    return hashlib.sha256(der).hexdigest()


def certificate_names(cert: x509.Certificate) -> tuple[str, ...]:
    """The DNS names and IP addresses of ``cert``'s subject alternative names."""
    try:
        sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return ()
    return (*sans.get_values_for_type(x509.DNSName),
            *(str(ip) for ip in sans.get_values_for_type(x509.IPAddress)))


def describe_certificate(cert: x509.Certificate, url: str = "") -> ServedCertificate:
    """``cert`` as a :class:`ServedCertificate` (``url``: where it was seen)."""
    from cryptography.hazmat.primitives.serialization import Encoding

    return ServedCertificate(
        url=url, sha256=fingerprint(cert.public_bytes(Encoding.DER)),
        subject=cert.subject.rfc4514_string(), issuer=cert.issuer.rfc4514_string(),
        serial=format(cert.serial_number, "x"), not_before=cert.not_valid_before_utc,
        not_after=cert.not_valid_after_utc, names=certificate_names(cert))


def https_address(url: str) -> tuple[str, int]:
    """``(host, port)`` of an ``https://`` URL (port 443 when it names none)."""
    parts = urlsplit(url.strip())
    if parts.scheme != "https" or not parts.hostname:
        raise KafkaConnectConfigError(f"{url!r} is not an https:// URL: no TLS to check")
    try:
        port = parts.port or 443
    except ValueError:
        raise KafkaConnectConfigError(f"{url!r} has an invalid port") from None
    return parts.hostname, port


def _described(url: str, der: bytes | None) -> ServedCertificate:
    if not der:
        raise TlsHandshakeError(f"TLS handshake with {url}: the server sent no certificate")
    return describe_certificate(x509.load_der_x509_certificate(der), url)


def _failed(url: str, exc: BaseException) -> TlsHandshakeError:
    reason = str(exc) or "no answer in time"
    return TlsHandshakeError(f"TLS handshake with {url} failed: {type(exc).__name__}: {reason}")


def served_certificate(url: str, options: TlsClientOptions | None = None, *,
                       timeout: float = DEFAULT_HANDSHAKE_TIMEOUT_S,
                       context: ssl.SSLContext | None = None) -> ServedCertificate:
    """The certificate served at ``url``, by a handshake verified per ``options`` (or with
    ``context``). Raises :class:`TlsHandshakeError` when there is none (refused, timed
    out, certificate refused)."""
    host, port = https_address(url)
    context = context or client_context(options or TlsClientOptions())
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock, \
                context.wrap_socket(sock, server_hostname=host) as tls:
            der = tls.getpeercert(binary_form=True)
    except (OSError, ssl.SSLError) as exc:
        raise _failed(url, exc) from exc
    return _described(url, der)


async def aserved_certificate(url: str, options: TlsClientOptions | None = None, *,
                              timeout: float = DEFAULT_HANDSHAKE_TIMEOUT_S,
                              context: ssl.SSLContext | None = None) -> ServedCertificate:
    """:func:`served_certificate` on asyncio streams; the context's files are read in a
    thread, so the event loop never blocks."""
    host, port = https_address(url)
    if context is None:
        context = await asyncio.to_thread(client_context, options or TlsClientOptions())
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(
            host, port, ssl=context, server_hostname=host, ssl_handshake_timeout=timeout),
            timeout)
    except (OSError, ssl.SSLError, TimeoutError) as exc:
        raise _failed(url, exc) from exc
    try:
        ssl_object = writer.get_extra_info("ssl_object")
        der = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
    finally:
        writer.close()
        with contextlib.suppress(OSError, ssl.SSLError, TimeoutError):
            await asyncio.wait_for(writer.wait_closed(), timeout)
    return _described(url, der)


# --------------------------------------------------------------------------- waits


def _not_served(expected: Mapping[str, str], last: Mapping[str, str], timeout: float
                ) -> CertificateNotServedError:
    pending = {url: want for url, want in expected.items() if last.get(url) != want}
    lines = "; ".join(f"{url} expected {want}, last saw {last.get(url, 'nothing')}"
                      for url, want in pending.items())
    return CertificateNotServedError(
        f"{len(pending)} of {len(expected)} worker(s) did not serve the expected certificate "
        f"within {timeout:g} s: {lines}", served=dict(last))


def _seen(cert_or_error: ServedCertificate | TlsHandshakeError) -> str:
    return cert_or_error.sha256 if isinstance(cert_or_error, ServedCertificate) \
        else str(cert_or_error)


def wait_for_certificates(expected: Mapping[str, str], options: TlsClientOptions | None = None,
                          *, timeout: float, poll_interval: float = 0.5,
                          handshake_timeout: float = DEFAULT_HANDSHAKE_TIMEOUT_S
                          ) -> dict[str, ServedCertificate]:
    """Handshake with every URL of ``expected`` (URL → fingerprint) until each serves its
    fingerprint; return what each served. A failed handshake counts as "not yet".
    :class:`CertificateNotServedError` after ``timeout`` seconds, naming what each URL
    served last."""
    context = client_context(options or TlsClientOptions())
    deadline = time.monotonic() + timeout
    done: dict[str, ServedCertificate] = {}
    last: dict[str, str] = {}
    while True:
        for url, want in expected.items():
            if url in done:
                continue
            try:
                cert = served_certificate(url, context=context, timeout=handshake_timeout)
            except TlsHandshakeError as exc:
                last[url] = _seen(exc)
                continue
            last[url] = cert.sha256
            if cert.sha256 == want:
                done[url] = cert
        if len(done) == len(expected):
            return done
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise _not_served(expected, last, timeout)
        time.sleep(min(poll_interval, remaining))


async def await_certificates(expected: Mapping[str, str],
                             options: TlsClientOptions | None = None, *, timeout: float,
                             poll_interval: float = 0.5,
                             handshake_timeout: float = DEFAULT_HANDSHAKE_TIMEOUT_S
                             ) -> dict[str, ServedCertificate]:
    """:func:`wait_for_certificates` on asyncio: the URLs are checked concurrently, the
    waits are ``asyncio.sleep``."""
    context = await asyncio.to_thread(client_context, options or TlsClientOptions())
    deadline = time.monotonic() + timeout
    done: dict[str, ServedCertificate] = {}
    last: dict[str, str] = {}

    async def check(url: str) -> ServedCertificate | TlsHandshakeError:
        try:
            return await aserved_certificate(url, context=context, timeout=handshake_timeout)
        except TlsHandshakeError as exc:
            return exc

    while True:
        pending = [url for url in expected if url not in done]
        for url, seen in zip(pending, await asyncio.gather(*(check(u) for u in pending)),
                             strict=True):
            last[url] = _seen(seen)
            if isinstance(seen, ServedCertificate) and seen.sha256 == expected[url]:
                done[url] = seen
        if len(done) == len(expected):
            return done
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise _not_served(expected, last, timeout)
        await asyncio.sleep(min(poll_interval, remaining))
