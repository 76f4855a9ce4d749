"""The TLS state of a REST server's https listeners, and its reconfiguration.

One :class:`~worker.rest.tls.contexts.SwappableServerContext` per kind of listener (regular ones
read ``listeners.https.ssl.*``, admin ones ``admin.listeners.https.ssl.*``), shared by
every listener of that kind, plus the :class:`~worker.rest.tls.contexts.ClientTls` of requests to
other workers. :meth:`ListenerTls.reconfigure` builds every new context first — any
problem raises ConfigError and nothing changes — then swaps them all under one lock and
logs the new fingerprint (never a password).
"""

from __future__ import annotations

import logging
import ssl
import threading
from collections.abc import Iterable, Mapping

from worker.errors import ConfigError
from worker.rest.tls.contexts import (
    LISTENERS_PREFIX,
    CertificateInfo,
    ClientTls,
    ServerTls,
    SwappableServerContext,
    build_server_context,
    phase1_keys,
    tls_settings,
)

log = logging.getLogger("worker.rest")


class ListenerTls:
    """TLS of the https listeners configured under ``prefixes`` (and inter-worker TLS).

    With ``config=None`` nothing is built: :meth:`context` then returns None and the
    server refuses to start an https listener. The client context is built at once (so
    bad settings fail startup) when the regular listeners include an https one.
    """

    def __init__(self, config: Mapping[str, str] | None, prefixes: Iterable[str]) -> None:
        self._prefixes = tuple(dict.fromkeys(prefixes))
        self._lock = threading.Lock()
        self._contexts: dict[str, SwappableServerContext] = {}
        self._certificates: dict[str, CertificateInfo] = {}
        self.client = ClientTls(config or {})
        if config is None:
            return
        built, client = self._build(config)
        for prefix, server in built.items():
            self._contexts[prefix] = SwappableServerContext(server.context)
            self._certificates[prefix] = server.certificate
        if client is not None:
            self.client.install(config, client)

    @property
    def configured(self) -> bool:
        """Whether TLS settings were given (an https listener can be served)."""
        return len(self._contexts) == len(self._prefixes)

    def context(self, prefix: str) -> SwappableServerContext | None:
        return self._contexts.get(prefix)

    def certificate(self, prefix: str) -> CertificateInfo | None:
        return self._certificates.get(prefix)

    def keys(self) -> frozenset[str]:
        """The phase-1 keys of every kind of https listener this server has."""
        return frozenset().union(*(phase1_keys(p) for p in self._prefixes))

    def _build(self, config: Mapping[str, str]
               ) -> tuple[dict[str, ServerTls], ssl.SSLContext | None]:
        built = {p: build_server_context(tls_settings(config, p)) for p in self._prefixes}
        client = ClientTls.build(config) if LISTENERS_PREFIX in self._prefixes else None
        return built, client

    def validate(self, config: Mapping[str, str]) -> None:
        """Build every context ``config`` asks for, without using any."""
        self._build(config)

    def reconfigure(self, config: Mapping[str, str]) -> None:
        """Build every context, then swap them all in; ConfigError changes nothing."""
        if not self.configured:
            raise ConfigError(LISTENERS_PREFIX + "ssl.keystore.location",
                              "this REST server was started without TLS settings")
        with self._lock:
            built, client = self._build(config)
            for prefix, server in built.items():
                self._contexts[prefix].swap(server.context)
                self._certificates[prefix] = server.certificate
            self.client.install(config, client)
        for prefix, server in built.items():
            log.info("TLS of the %s reconfigured: new handshakes get certificate "
                     "sha256=%s subject=%s (valid until %s)",
                     "admin listeners" if prefix.startswith("admin.") else "REST listeners",
                     server.certificate.sha256, server.certificate.subject,
                     server.certificate.not_after.isoformat())
