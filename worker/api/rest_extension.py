"""REST extensions: plugins that wrap the worker's REST API (Kafka's ``ConnectRestExtension``).

A worker lists them in ``rest.extension.classes`` (Java class names of the built-ins, Kafka's
aliases, or Python import paths). At startup the worker builds each one (no arguments),
calls :meth:`RestExtension.configure` with the worker's properties — placeholders
resolved —, then :meth:`RestExtension.register` with a :class:`RestExtensionContext`, and
:meth:`RestExtension.close` when it stops. An extension that cannot be found or that raises
from ``configure`` or ``register`` stops the worker's startup with an error naming
``rest.extension.classes``.

Where Kafka's extensions register JAX-RS filters, ours add ASGI middleware::

    class AuditExtension(RestExtension):
        def register(self, context: RestExtensionContext) -> None:
            context.add_middleware(AuditMiddleware, sink=self.sink)

    class AuditMiddleware:
        def __init__(self, app: ASGIApp, sink: Sink) -> None: ...
        async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None: ...

Middleware runs on the REST event loop for every request of every listener (admin
listeners included), after the listener's routing rules and before the request body is
read; the first extension listed is the outermost. It must never block: the cluster state
(:class:`ConnectClusterState`) is read with blocking calls, so call it through
``asyncio.get_running_loop().run_in_executor(None, ...)``.

**Principals.** An extension that authenticates a request records who made it with
:func:`set_principal`; the worker's admin authorization (``rest.admin.principals``) reads
it with :func:`request_principal`, which falls back to the subject of a verified client
certificate (the ASGI TLS extension, ``scope["extensions"]["tls"]``). Requests between
workers (:func:`is_internal_request`) carry no user credentials: an authenticating
extension lets them through, as Kafka's basic-auth filter does.

This module imports nothing of the runtime.
"""

from __future__ import annotations

import json
import re
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Iterable, Mapping, MutableMapping
from dataclasses import dataclass, field
from typing import Any

from worker.api.connector import DEFAULT_VERSION

#: ASGI types (the same shapes as Starlette's ``starlette.types``).
Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

#: Authentication schemes of a :class:`Principal` (``javax.ws.rs.core.SecurityContext``'s).
BASIC_AUTH = "BASIC"
CLIENT_CERT = "CLIENT_CERT"

#: ASGI scope key holding the request's authenticated :class:`Principal`.
PRINCIPAL_KEY = "connect_plane.principal"

# Kafka's JaasBasicAuthFilter.INTERNAL_REQUEST_MATCHERS: what workers send each other.
_INTERNAL_REQUESTS = (
    ("POST", re.compile(r"/?connectors/[^/]+/tasks/?")),
    ("PUT", re.compile(r"/?connectors/[^/]+/fence/?")),
)


@dataclass(frozen=True)
class Principal:
    """Who made a request: a user name (``scheme=BASIC_AUTH``), a certificate subject as
    an RFC 4514 string (``CLIENT_CERT``), or whatever a custom extension authenticates."""

    name: str
    scheme: str


def set_principal(scope: Scope, principal: Principal) -> None:
    """Record that the request of ``scope`` was made by ``principal``."""
    scope[PRINCIPAL_KEY] = principal


def client_certificate_subject(scope: Scope) -> str | None:
    """The subject (RFC 4514) of the client certificate the connection presented and the
    server verified, from the ASGI TLS extension; None without one."""
    tls = scope.get("extensions", {}).get("tls")
    if not isinstance(tls, Mapping):
        return None
    name = tls.get("client_cert_name")
    return name if isinstance(name, str) and name else None


def request_principal(scope: Scope) -> Principal | None:
    """The principal an extension recorded for this request, else the verified client
    certificate's subject, else None.

    Credentials authenticated for the request take precedence over the certificate of the
    connection, which may belong to a proxy or to another worker forwarding the request.
    """
    principal = scope.get(PRINCIPAL_KEY)
    if isinstance(principal, Principal):
        return principal
    subject = client_certificate_subject(scope)
    return Principal(subject, CLIENT_CERT) if subject is not None else None


def request_path(scope: Scope) -> str:
    """The request's path as sent (percent-escapes kept, so ``%2F`` in a connector name
    stays inside one segment); the decoded path when the server gives no raw one."""
    raw = scope.get("raw_path")
    if isinstance(raw, bytes | bytearray):
        return raw.decode("latin-1").split("?", 1)[0]
    return str(scope.get("path", ""))


def is_internal_request(method: str, path: str) -> bool:
    """Whether ``method path`` is a request workers send each other (a follower's task
    configs, ``POST /connectors/{c}/tasks``; zombie fencing, ``PUT
    /connectors/{c}/fence``), which carries no user credentials."""
    return any(method == verb and pattern.fullmatch(path)
               for verb, pattern in _INTERNAL_REQUESTS)


async def send_error(send: Send, status: int, message: str,
                     headers: Iterable[tuple[str, str]] = ()) -> None:
    """Answer with Connect's error body, ``{"error_code": status, "message": message}``."""
    body = json.dumps({"error_code": status, "message": message}).encode()
    raw_headers = [(b"content-type", b"application/json"),
                   (b"content-length", str(len(body)).encode())]
    raw_headers += [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers]
    await send({"type": "http.response.start", "status": status, "headers": raw_headers})
    await send({"type": "http.response.body", "body": body})


# --- what an extension can read of the cluster (Kafka's org.apache.kafka.connect.health) --


@dataclass(frozen=True)
class ConnectorState:
    """A connector's state (``RUNNING``, ``PAUSED``, ``STOPPED``, ``FAILED``,
    ``UNASSIGNED``, ``RESTARTING``), the worker running it and a failure's trace."""

    state: str
    worker_id: str
    trace_message: str | None = None


@dataclass(frozen=True)
class TaskState(ConnectorState):
    task_id: int = 0


@dataclass(frozen=True)
class ConnectorHealth:
    """A connector's and its tasks' states; ``type`` is ``source``, ``sink`` or
    ``unknown``."""

    name: str
    connector_state: ConnectorState
    tasks_state: dict[int, TaskState] = field(default_factory=dict)
    type: str = "unknown"


@dataclass(frozen=True)
class ConnectClusterDetails:
    """Fixed facts of the cluster."""

    kafka_cluster_id: str | None


class ConnectClusterState(ABC):
    """The cluster as this worker knows it. Every call blocks (it asks the herder)."""

    @abstractmethod
    def connectors(self) -> list[str]:
        """Names of the connectors in the cluster now."""

    @abstractmethod
    def connector_health(self, name: str) -> ConnectorHealth:
        """The connector's and its tasks' states; ``LookupError`` for an unknown name."""

    @abstractmethod
    def connector_config(self, name: str) -> dict[str, str]:
        """The connector's config as stored (placeholders not resolved); ``LookupError``
        for an unknown name."""

    @abstractmethod
    def cluster_details(self) -> ConnectClusterDetails:
        """Fixed facts of the cluster (the Kafka cluster id)."""


# --- the plugin ------------------------------------------------------------------------


class RestExtensionContext(ABC):
    """What the worker offers an extension in :meth:`RestExtension.register`."""

    @abstractmethod
    def add_middleware(self, middleware: Callable[..., ASGIApp], **options: Any) -> None:
        """Wrap the REST API in ``middleware(app, **options)``; middleware added first
        (by the first extension listed) is the outermost."""

    @property
    @abstractmethod
    def cluster_state(self) -> ConnectClusterState:
        """The connectors, their health and configs, the Kafka cluster id."""

    @property
    @abstractmethod
    def worker_id(self) -> str:
        """This worker's id (``host:port``, as in statuses)."""


class RestExtension(ABC):
    """A plugin that adds middleware to the REST API (Kafka's ``ConnectRestExtension``)."""

    def version(self) -> str:
        return DEFAULT_VERSION

    def configure(self, configs: Mapping[str, str]) -> None:
        """Take the worker's properties, ``${...}`` placeholders resolved. Called once,
        before :meth:`register`. Raise ``worker.api.ConfigException`` naming the key for a
        bad setting; its ``reason`` is shown and must not hold a secret or a value that
        may come from a placeholder."""

    @abstractmethod
    def register(self, context: RestExtensionContext) -> None:
        """Add middleware through ``context``."""

    def close(self) -> None:
        """Release what the extension holds; called when the worker stops."""
