"""The ASGI TLS extension for uvicorn: who is on the other end of an https connection.

uvicorn puts nothing about TLS in the ASGI scope (only ``scheme: "https"``), so the
client certificate a handshake verified is out of the app's reach. The REST server serves
its https listeners with :class:`TlsScopeProtocol` instead: its own bounded httptools
protocol (``worker.rest.http_limits``), which reads the connection's ``ssl.SSLObject``
once the handshake is done and puts the ASGI TLS extension
(https://asgi.readthedocs.io/en/latest/specs/tls.html) in the scope of every request on that
connection::

    scope["extensions"]["tls"] = {
        "server_cert": None, "client_cert_chain": ["-----BEGIN CERTIFICATE-----..."],
        "client_cert_name": "CN=admin,O=Example", "client_cert_error": None,
        "tls_version": 0x0304, "cipher_suite": None}

``client_cert_name`` is the subject as an RFC 4514 string; the chain holds the leaf only
(Python 3.11 does not expose the verified chain); the cipher suite's IANA number is not
available from Python's ``ssl`` module either. Without a client certificate the name is
None and the chain empty. A certificate is only there if the handshake verified it against
the truststore (``ssl.client.auth`` ``required``, or ``requested`` and one presented).
"""

from __future__ import annotations

import asyncio
import ssl
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import serialization

from worker.rest.http_limits import BoundedHttpProtocol

_TLS_VERSIONS = {"TLSv1": 0x0301, "TLSv1.1": 0x0302, "TLSv1.2": 0x0303, "TLSv1.3": 0x0304}


def tls_extension(ssl_object: ssl.SSLObject | ssl.SSLSocket | None) -> dict[object, object]:
    """The ASGI TLS extension for a connection (see the module docstring)."""
    der = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
    chain: list[str] = []
    name: str | None = None
    if der:
        certificate = x509.load_der_x509_certificate(der)
        chain = [certificate.public_bytes(serialization.Encoding.PEM).decode("ascii")]
        name = certificate.subject.rfc4514_string()
    version = ssl_object.version() if ssl_object is not None else None
    return {"server_cert": None, "client_cert_chain": chain, "client_cert_name": name,
            "client_cert_error": None, "tls_version": _TLS_VERSIONS.get(version or ""),
            "cipher_suite": None}


class TlsScopeProtocol(BoundedHttpProtocol):
    """The REST server's bounded protocol (``worker.rest.http_limits``), with the ASGI TLS
    extension in every request's scope, and idle connections dropped at shutdown.

    uvicorn's graceful shutdown closes an idle keep-alive connection with
    ``transport.close()``; over TLS that sends close_notify and waits for the client's,
    which an idle pooled client never sends, so every stop of a worker with an open https
    client connection took the whole graceful timeout (10 s). Nothing is in flight on an
    idle connection: it is aborted instead. Connections with a request under way still
    finish it, as uvicorn does.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._tls: dict[object, object] | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        # The same signature as the parent's, which ignores the same mismatch with
        # asyncio.Protocol (BaseTransport there).
        super().connection_made(transport)
        # asyncio and uvloop call this once the handshake is complete.
        ssl_object = transport.get_extra_info("ssl_object")
        self._tls = tls_extension(ssl_object) if ssl_object is not None else None

    def shutdown(self) -> None:
        if self.cycle is None or self.cycle.response_complete:
            self.transport.abort()
        else:
            super().shutdown()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        if self._tls is not None:
            # A copy per request: an app may change its scope.
            self.scope["extensions"] = {"tls": dict(self._tls)}
