"""Serve the REST app with uvicorn on the worker's listeners, in a background thread.

Listeners are parsed as Kafka's ``RestServer`` parses them (``protocol://host:port``, an
empty host = all interfaces, ``[...]`` around IPv6 literals). Each listener gets its own
uvicorn ``Server`` (all on one event loop, in one thread), so that each carries its own
TLS context and its own role for ``/admin/*`` (Kafka's ``admin.listeners``: unset, the
admin endpoints are served on the regular listeners; empty, nowhere; set, only on those
listeners). The role travels in the ASGI scope (``worker.rest.app.LISTENER_ROLE_KEY``).

``https`` listeners read ``listeners.https.ssl.*`` (admin listeners
``admin.listeners.https.ssl.*``), with ``ssl.*`` as fallback (``worker.rest.tls.contexts``). The
server is :class:`~worker.config.reconfigurable.Reconfigurable`: a new keystore,
truststore, client-auth mode, protocol list or cipher list is validated in full, then
swapped in for every https listener at once; new handshakes get it, established
connections and in-flight requests go on (``worker.rest.tls.contexts.SwappableServerContext``).
An https listener's requests carry the ASGI TLS extension — the verified client
certificate's subject, for admin authorization (``worker.rest.security.tls_scope``).

Sockets are bound in :meth:`RestServer.start` itself, so a port in use fails there, with
the listener named, and port 0 yields the real port in :attr:`RestServer.url`.
"""

from __future__ import annotations

import asyncio
import logging
import re
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import uvicorn
from starlette.types import ASGIApp, Receive, Scope, Send

from worker.config.reconfigurable import Reconfigurable
from worker.config.rest_limits import RestLimits
from worker.errors import ConfigError, WorkerError
from worker.rest.app import LISTENER_ROLE_KEY, ListenerRole
from worker.rest.executor import DaemonThreadPool
from worker.rest.forward import FORWARDER_KEY, ForwardingClient
from worker.rest.http_limits import BoundedHttpProtocol, ConnectionSlots, bounded_protocol
from worker.rest.security.tls_scope import TlsScopeProtocol
from worker.rest.tls.contexts import ADMIN_PREFIX, LISTENERS_PREFIX, ServedListener
from worker.rest.tls.reload import ListenerTls

log = logging.getLogger("worker.rest")

# Kafka's RestServer.LISTENER_PATTERN, matched against the whole string.
_LISTENER = re.compile(r"(.*)://\[?([0-9a-zA-Z\-%._:]*)\]?:(-?[0-9]+)")
_PROTOCOLS = ("http", "https")
#: Threads for blocking herder calls; as many requests as this can wait on the herder.
REST_THREADS = 32


@dataclass(frozen=True)
class Listener:
    """One parsed entry of ``listeners``; ``host`` is empty for all interfaces."""

    protocol: str
    host: str
    port: int

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.protocol}://{host}:{self.port}"


def parse_listeners(listeners: Iterable[str], key: str = "listeners", *,
                    allow_none: bool = False) -> list[Listener]:
    """Parse ``listeners`` as Kafka does; empty entries are skipped.

    Raises ConfigError naming ``key`` for a malformed entry, a protocol other than
    http/https, a port out of range, or no listener at all (unless ``allow_none``: an
    empty ``admin.listeners`` disables the admin endpoints).
    """
    parsed = []
    for raw in listeners:
        entry = raw.strip()
        if not entry:
            continue
        match = _LISTENER.fullmatch(entry)
        if match is None:
            raise ConfigError(key, "Listener doesn't have the right format "
                                   "(protocol://hostname:port).")
        protocol = match.group(1).lower()
        if protocol not in _PROTOCOLS:
            raise ConfigError(key, 'Listener protocol must be either "http" or "https".')
        port = int(match.group(3))
        if not 0 <= port <= 65535:
            raise ConfigError(key, f"Port {port} of listener {entry} is out of range")
        parsed.append(Listener(protocol, match.group(2), port))
    if not parsed and not allow_none:
        raise ConfigError(key, "Empty list")
    return parsed


def bind_socket(listener: Listener) -> socket.socket:
    """A listening-ready socket for ``listener`` (dual-stack when the host is empty).

    TCP_NODELAY is set here, inherited by accepted connections: asyncio only sets it on
    sockets whose ``proto`` is IPPROTO_TCP, and ``socket.create_server`` leaves ``proto``
    0, so every response would otherwise wait ~40 ms on Nagle + delayed ACK.
    """
    sock = _bind(listener)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def _bind(listener: Listener) -> socket.socket:
    port = listener.port
    if not listener.host:
        if socket.has_dualstack_ipv6():
            try:
                return socket.create_server(("::", port), family=socket.AF_INET6,
                                            dualstack_ipv6=True)
            except OSError:
                pass  # IPv6 present but unusable (e.g. disabled in a container)
        return socket.create_server(("0.0.0.0", port))
    family, _, _, _, address = socket.getaddrinfo(
        listener.host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    return socket.create_server(address[:2], family=family)


def _loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a pinned dependency
        return None
    return uvloop.new_event_loop


def _local_url(listener: Listener, sock: socket.socket) -> str:
    """The base URL a local client uses to reach ``sock`` (the real port if 0 was asked)."""
    port = sock.getsockname()[1]
    host = listener.host or "127.0.0.1"  # a wildcard bind is reachable on loopback
    if ":" in host:
        host = f"[{host}]"
    return f"{listener.protocol}://{host}:{port}"


@dataclass(frozen=True)
class _Binding:
    """A listener and what it serves: its ``/admin/*`` role and its TLS settings' prefix."""

    listener: Listener
    role: ListenerRole
    prefix: str

    @property
    def admin(self) -> bool:
        return self.role is ListenerRole.ADMIN


class _ListenerApp:
    """The app as one listener serves it: tags each request with the listener's role and
    the worker's inter-worker client (read by ``app.py`` and ``forward.py``)."""

    def __init__(self, app: ASGIApp, role: ListenerRole, forwarder: ForwardingClient) -> None:
        self.app = app
        self.role = role
        self.forwarder = forwarder

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            scope[LISTENER_ROLE_KEY] = self.role
            scope[FORWARDER_KEY] = self.forwarder
        await self.app(scope, receive, send)


class RestServer(Reconfigurable):
    """Runs ``app`` on ``listeners`` (and ``admin_listeners``) in a daemon thread until
    :meth:`stop`.

    ``admin_listeners``: None serves ``/admin/*`` on ``listeners`` (Kafka's default), an
    empty list nowhere, else only there. ``tls_config`` is the worker configuration the
    ``ssl.*`` settings are read from (resolved values); the TLS contexts are built here, so
    a bad keystore fails construction with a ConfigError naming the key. Without it an
    https listener cannot start. ``limits`` bound each connection's request line, headers and
    header time, and the connections open over all listeners (``worker.rest.http_limits``).
    ``startup_timeout`` bounds :meth:`start`; ``shutdown_timeout`` bounds how long
    :meth:`stop` lets in-flight requests finish.
    """

    def __init__(self, app: ASGIApp, listeners: Iterable[str], *,
                 admin_listeners: Iterable[str] | None = None,
                 tls_config: Mapping[str, str] | None = None,
                 limits: RestLimits | None = None,
                 access_log: bool = False, startup_timeout: float = 10.0,
                 shutdown_timeout: float = 10.0) -> None:
        self._app = app
        self._limits = limits or RestLimits()
        self._slots = ConnectionSlots(self._limits.max_connections)
        self._listeners = parse_listeners(listeners)
        admins = (None if admin_listeners is None
                  else parse_listeners(admin_listeners, "admin.listeners", allow_none=True))
        regular = ListenerRole.ALL if admins is None else ListenerRole.API
        self._bindings = [_Binding(lst, regular, LISTENERS_PREFIX) for lst in self._listeners]
        self._bindings += [_Binding(lst, ListenerRole.ADMIN, ADMIN_PREFIX)
                           for lst in admins or ()]
        self._tls = ListenerTls(tls_config, [b.prefix for b in self._bindings
                                             if b.listener.protocol == "https"])
        self._forwarder = ForwardingClient(self._tls.client)
        self._access_log = access_log
        self._startup_timeout = startup_timeout
        self._shutdown_timeout = shutdown_timeout
        self._servers: list[uvicorn.Server] = []
        self._bound: list[str] = []
        self._thread: threading.Thread | None = None
        self._failure: BaseException | None = None
        self._pool: DaemonThreadPool | None = None

    @property
    def listeners(self) -> list[Listener]:
        """The parsed listeners, as configured (port 0 stays 0 here; see :attr:`urls`)."""
        return list(self._listeners)

    @property
    def urls(self) -> list[str]:
        """Base URL of every regular listener, with the bound port. Empty until started."""
        return [url for url, b in zip(self._bound, self._bindings, strict=False)
                if not b.admin]

    @property
    def admin_urls(self) -> list[str]:
        """Base URL of every ``admin.listeners`` listener. Empty until started."""
        return [url for url, b in zip(self._bound, self._bindings, strict=False) if b.admin]

    @property
    def url(self) -> str:
        """Base URL of the first listener, e.g. ``http://127.0.0.1:8083``."""
        if not self._bound:
            raise WorkerError("The REST server has not been started")
        return self._bound[0]

    @property
    def forwarder(self) -> ForwardingClient:
        """This worker's client for requests to other workers (TLS from its settings)."""
        return self._forwarder

    def client_ssl_context(self) -> ssl.SSLContext:
        """The current TLS context of requests to other workers (Kafka's REST client
        settings: ``listeners.https.ssl.*``, else ``ssl.*``); ConfigError if invalid."""
        return self._tls.client.context()

    def served_listeners(self) -> list[ServedListener]:
        """Every listener (the bound URL once started) with the certificate it serves."""
        served = []
        for index, binding in enumerate(self._bindings):
            url = self._bound[index] if index < len(self._bound) else str(binding.listener)
            https = binding.listener.protocol == "https"
            served.append(ServedListener(url, binding.listener.protocol, binding.admin,
                                         self._tls.certificate(binding.prefix) if https
                                         else None))
        return served

    # --- Reconfigurable ---------------------------------------------------------------

    def reconfigurable_configs(self) -> frozenset[str]:
        """The phase-1 TLS keys of each kind of https listener this server has."""
        return self._tls.keys()

    def validate_reconfiguration(self, configs: Mapping[str, str]) -> None:
        """Load every keystore and truststore ``configs`` names and build every context;
        ConfigError naming the key on any problem. Changes nothing."""
        self._tls.validate(configs)

    def reconfigure(self, configs: Mapping[str, str]) -> None:
        """Swap in new TLS contexts for all https listeners at once (or none): new
        handshakes get them; established connections keep theirs."""
        self._tls.reconfigure(configs)

    # --- serving ----------------------------------------------------------------------

    def _config(self, binding: _Binding) -> uvicorn.Config:
        context: ssl.SSLContext | None = None
        if binding.listener.protocol == "https":
            context = self._tls.context(binding.prefix)
            if context is None:
                raise ConfigError("listeners", f"Listener {binding.listener} needs TLS "
                                               f"settings ({binding.prefix}ssl.*)")
        return uvicorn.Config(
            _ListenerApp(self._app, binding.role, self._forwarder),
            log_config=None,  # the worker configures logging; uvicorn must not
            access_log=self._access_log,
            lifespan="off",  # the composition root owns start/stop of the herder
            timeout_graceful_shutdown=max(1, int(self._shutdown_timeout)),
            ssl_context_factory=(lambda _config, _default: context) if context else None,
            # Bounded (worker.rest.http_limits); https also puts the client certificate in
            # the scope.
            http=bounded_protocol(TlsScopeProtocol if context else BoundedHttpProtocol,
                                  self._limits, self._slots),
        )

    def start(self) -> None:
        """Bind every listener and serve; return once all are accepting connections.

        Raises WorkerError if a listener cannot be bound or the server does not come up
        within ``startup_timeout`` (nothing is left running in either case).
        """
        if self._thread is not None:
            raise WorkerError("The REST server is already started")
        configs = [self._config(binding) for binding in self._bindings]
        sockets: list[socket.socket] = []
        try:
            for binding in self._bindings:
                sockets.append(bind_socket(binding.listener))
        except OSError as exc:
            for sock in sockets:
                sock.close()
            raise WorkerError(f"Unable to bind REST listener {binding.listener}: "
                               f"{exc}") from exc
        self._servers = [uvicorn.Server(config) for config in configs]
        self._bound = [_local_url(b.listener, sock)
                       for b, sock in zip(self._bindings, sockets, strict=True)]
        self._pool = DaemonThreadPool(max_workers=REST_THREADS)
        self._thread = threading.Thread(target=self._run, args=(sockets, self._pool),
                                        name="rest-server", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + self._startup_timeout
        while not all(server.started for server in self._servers):
            if not self._thread.is_alive() or time.monotonic() > deadline:
                failure = self._failure
                self.stop()
                raise WorkerError(f"REST server did not start within "
                                   f"{self._startup_timeout}s: {failure}") from failure
            time.sleep(0.01)
        log.info("REST server listening at %s", ", ".join(self.urls))
        if self.admin_urls:
            log.info("REST admin endpoints at %s", ", ".join(self.admin_urls))
        for served in self.served_listeners():
            if served.certificate is not None:
                log.info("%s serves certificate sha256=%s subject=%s (valid until %s)",
                         served.url, served.certificate.sha256, served.certificate.subject,
                         served.certificate.not_after.isoformat())

    def _run(self, sockets: list[socket.socket], pool: DaemonThreadPool) -> None:
        async def serve_all() -> None:
            # Handlers' blocking herder calls run here (worker.rest.routing.ConnectRoute).
            asyncio.get_running_loop().set_default_executor(pool)
            try:
                await asyncio.gather(*(server.serve(sockets=[sock]) for server, sock
                                       in zip(self._servers, sockets, strict=True)))
            finally:
                await self._forwarder.aclose()  # its clients live on this loop

        try:
            # uvloop when installed (it is a dependency): a faster event loop for REST.
            with asyncio.Runner(loop_factory=_loop_factory()) as runner:
                runner.run(serve_all())
        except BaseException as exc:  # noqa: BLE001 - uvicorn may sys.exit(); report, not die
            self._failure = exc
            log.error("REST server failed", exc_info=exc)
        finally:
            for sock in sockets:
                sock.close()

    def stop(self) -> None:
        """Stop serving; in-flight requests get ``shutdown_timeout`` seconds to finish.

        Returns within about twice ``shutdown_timeout`` even if a handler is stuck in the
        herder: the daemon thread is then abandoned (and logged), never waited for.
        """
        thread = self._thread
        if thread is None:
            return
        for server in self._servers:
            server.should_exit = True
        thread.join(self._shutdown_timeout + 1)
        if thread.is_alive():
            for server in self._servers:
                server.force_exit = True
            thread.join(self._shutdown_timeout)
        if thread.is_alive():
            log.warning("REST server did not stop within %.0fs; abandoning its thread",
                        2 * self._shutdown_timeout + 1)
        else:
            log.info("REST server stopped")
        self._thread = None
        self._servers = []
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None
