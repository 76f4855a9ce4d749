"""Serve the REST app with uvicorn on the worker's ``listeners``, in a background thread.

Listeners are parsed as Kafka's ``RestServer`` parses them (``protocol://host:port``, an
empty host = all interfaces, ``[...]`` around IPv6 literals). Each listener gets its own
uvicorn ``Server`` (all on one event loop, in one thread) so that each can later carry
its own TLS context: an ``https`` listener takes its ``ssl.SSLContext`` from
``ssl_context_factory`` — the extension point for ``listeners.https.ssl.*`` and for
keystore hot reload (reload the certificates into the same context, or hand uvicorn a new
one, without rebinding the socket).

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
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import uvicorn
from starlette.types import ASGIApp

from worker.errors import ConfigError, ConnectError
from worker.rest.executor import DaemonThreadPool

log = logging.getLogger("worker.rest")

# Kafka's RestServer.LISTENER_PATTERN, matched against the whole string.
_LISTENER = re.compile(r"(.*)://\[?([0-9a-zA-Z\-%._:]*)\]?:(-?[0-9]+)")
_PROTOCOLS = ("http", "https")
#: Threads for blocking herder calls; as many requests as this can wait on the herder.
REST_THREADS = 32

#: Builds the TLS context of an ``https`` listener.
SslContextFactory = Callable[["Listener"], ssl.SSLContext]


@dataclass(frozen=True)
class Listener:
    """One parsed entry of ``listeners``; ``host`` is empty for all interfaces."""

    protocol: str
    host: str
    port: int

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.protocol}://{host}:{self.port}"


def parse_listeners(listeners: Iterable[str]) -> list[Listener]:
    """Parse ``listeners`` as Kafka does; empty entries are skipped.

    Raises ConfigError naming ``listeners`` for a malformed entry, a protocol other than
    http/https, a port out of range, or no listener at all.
    """
    parsed = []
    for raw in listeners:
        entry = raw.strip()
        if not entry:
            continue
        match = _LISTENER.fullmatch(entry)
        if match is None:
            raise ConfigError("listeners", "Listener doesn't have the right format "
                                           "(protocol://hostname:port).")
        protocol = match.group(1).lower()
        if protocol not in _PROTOCOLS:
            raise ConfigError("listeners",
                              'Listener protocol must be either "http" or "https".')
        port = int(match.group(3))
        if not 0 <= port <= 65535:
            raise ConfigError("listeners", f"Port {port} of listener {entry} is out of range")
        parsed.append(Listener(protocol, match.group(2), port))
    if not parsed:
        raise ConfigError("listeners", "Empty list")
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


class RestServer:
    """Runs ``app`` on ``listeners`` in a daemon thread until :meth:`stop`.

    ``startup_timeout`` bounds :meth:`start`; ``shutdown_timeout`` bounds how long
    :meth:`stop` lets in-flight requests finish before it gives up on them.
    """

    def __init__(self, app: ASGIApp, listeners: Iterable[str], *,
                 ssl_context_factory: SslContextFactory | None = None,
                 access_log: bool = False, startup_timeout: float = 10.0,
                 shutdown_timeout: float = 10.0) -> None:
        self._app = app
        self._listeners = parse_listeners(listeners)
        self._ssl_context_factory = ssl_context_factory
        self._access_log = access_log
        self._startup_timeout = startup_timeout
        self._shutdown_timeout = shutdown_timeout
        self._servers: list[uvicorn.Server] = []
        self._urls: list[str] = []
        self._thread: threading.Thread | None = None
        self._failure: BaseException | None = None
        self._pool: DaemonThreadPool | None = None

    @property
    def listeners(self) -> list[Listener]:
        """The parsed listeners, as configured (port 0 stays 0 here; see :attr:`urls`)."""
        return list(self._listeners)

    @property
    def urls(self) -> list[str]:
        """Base URL of every listener, with the bound port. Empty until started."""
        return list(self._urls)

    @property
    def url(self) -> str:
        """Base URL of the first listener, e.g. ``http://127.0.0.1:8083``."""
        if not self._urls:
            raise ConnectError("The REST server has not been started")
        return self._urls[0]

    def _ssl_context(self, listener: Listener) -> ssl.SSLContext | None:
        """TLS context of ``listener``: None for http; from the factory for https."""
        if listener.protocol == "http":
            return None
        if self._ssl_context_factory is None:
            raise ConfigError("listeners", f"Listener {listener} needs TLS settings "
                                           "(listeners.https.ssl.*), which are not supported yet")
        return self._ssl_context_factory(listener)

    def _config(self, listener: Listener) -> uvicorn.Config:
        context = self._ssl_context(listener)
        return uvicorn.Config(
            self._app,
            log_config=None,  # the worker configures logging; uvicorn must not
            access_log=self._access_log,
            lifespan="off",  # the composition root owns start/stop of the herder
            timeout_graceful_shutdown=max(1, int(self._shutdown_timeout)),
            ssl_context_factory=(lambda _config, _default: context) if context else None,
        )

    def start(self) -> None:
        """Bind every listener and serve; return once all are accepting connections.

        Raises ConnectError if a listener cannot be bound or the server does not come up
        within ``startup_timeout`` (nothing is left running in either case).
        """
        if self._thread is not None:
            raise ConnectError("The REST server is already started")
        configs = [self._config(listener) for listener in self._listeners]
        sockets: list[socket.socket] = []
        try:
            for listener in self._listeners:
                sockets.append(bind_socket(listener))
        except OSError as exc:
            for sock in sockets:
                sock.close()
            raise ConnectError(f"Unable to bind REST listener {listener}: {exc}") from exc
        self._servers = [uvicorn.Server(config) for config in configs]
        self._urls = [_local_url(lst, sock) for lst, sock in zip(self._listeners, sockets,
                                                                  strict=True)]
        self._pool = DaemonThreadPool(max_workers=REST_THREADS)
        self._thread = threading.Thread(target=self._run, args=(sockets, self._pool),
                                        name="rest-server", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + self._startup_timeout
        while not all(server.started for server in self._servers):
            if not self._thread.is_alive() or time.monotonic() > deadline:
                failure = self._failure
                self.stop()
                raise ConnectError(f"REST server did not start within "
                                   f"{self._startup_timeout}s: {failure}") from failure
            time.sleep(0.01)
        log.info("REST server listening at %s", ", ".join(self._urls))

    def _run(self, sockets: list[socket.socket], pool: DaemonThreadPool) -> None:
        async def serve_all() -> None:
            # Handlers' blocking herder calls run here (worker.rest.routing.ConnectRoute).
            asyncio.get_running_loop().set_default_executor(pool)
            await asyncio.gather(*(server.serve(sockets=[sock])
                                   for server, sock in zip(self._servers, sockets, strict=True)))

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
