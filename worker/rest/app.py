"""Build the FastAPI application that serves Kafka Connect's REST API over a herder.

``create_app(herder, security)`` is called by the composition root; there is no
module-level app, so tests and several in-process workers each get their own. ``security``
(``worker.rest.security``) adds the REST extensions' middleware and admin authorization.
"""

from __future__ import annotations

import logging
import time
from enum import StrEnum
from typing import Any

from fastapi import FastAPI
from prometheus_client.registry import CollectorRegistry
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from worker.config.rest_limits import RestLimits
from worker.errors import RequestTargetError
from worker.herder.base import Herder
from worker.rest.body_limits import (
    BodyCacheMiddleware,
    BodyLimitMiddleware,
    UnreadBodyMiddleware,
)
from worker.rest.docs import install_docs
from worker.rest.errors import error_response, install_error_handlers
from worker.rest.forward import forward_request
from worker.rest.openapi import remove_validation_errors
from worker.rest.routes import (
    admin,
    connector_offsets,
    connector_plugins,
    connector_topics,
    connectors,
    loggers,
    metrics,
    root,
    worker_config,
)
from worker.rest.security.authorization import document_security
from worker.rest.security.extensions import RestSecurity

log = logging.getLogger("worker.rest")

TITLE = "Kafka Connect REST API (connect-plane)"


class ConnectAPI(FastAPI):
    """The FastAPI app, with an OpenAPI document that lists no 422 (see
    ``worker.rest.openapi``)."""

    def openapi(self) -> dict[str, Any]:
        if self.openapi_schema is None:
            # FastAPI builds the document once and caches it; trim it before anyone reads.
            document = remove_validation_errors(super().openapi())
            security: RestSecurity | None = getattr(self.state, "security", None)
            if security is not None:
                document_security(document, authenticates=security.authenticates,
                                  authorizes=bool(security.admin_principals))
        return super().openapi()


class TrailingSlashMiddleware:
    """Serve ``/connectors/`` as ``/connectors``, as Jersey does, instead of redirecting.

    A redirect would turn a ``POST /connectors/`` into a second request that many clients
    do not replay with the body.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path: str = scope.get("path", "")
        if scope["type"] == "http" and len(path) > 1 and path.endswith("/"):
            scope = {**scope, "path": path.rstrip("/") or "/"}
        await self.app(scope, receive, send)


#: ASGI scope key the REST server sets per listener (``worker.rest.server``).
LISTENER_ROLE_KEY = "connect_plane.listener_role"


class ListenerRole(StrEnum):
    """What a listener serves (Kafka's ``admin.listeners``)."""

    ALL = "all"  # admin.listeners unset: everything, /admin/* included
    API = "api"  # admin.listeners set (or empty): everything but /admin/*
    ADMIN = "admin"  # an admin listener: only /admin/*


class AdminListenerMiddleware:
    """Answer 404, as Kafka does, for ``/admin/*`` on a listener that does not serve the
    admin endpoints and for anything else on an admin listener.

    A request without a role (an in-process test client) is served in full.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        role = scope.get(LISTENER_ROLE_KEY, ListenerRole.ALL)
        if scope["type"] == "http" and role != ListenerRole.ALL:
            path: str = scope["path"]
            is_admin = path == "/admin" or path.startswith("/admin/")
            if is_admin != (role == ListenerRole.ADMIN):
                await error_response(404, "HTTP 404 Not Found")(scope, receive, send)
                return
        await self.app(scope, receive, send)


class RequestLogMiddleware:
    """Log each request at DEBUG on ``worker.rest`` (the uvicorn access log is off)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not log.isEnabledFor(logging.DEBUG):
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500  # what the client sees if the app fails before answering

        async def recording_send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, recording_send)
        finally:
            query = scope.get("query_string", b"").decode("latin-1")
            target = scope["path"] + (f"?{query}" if query else "")
            client = scope.get("client")
            log.debug("%s \"%s %s\" %d %.1fms", client[0] if client else "-", scope["method"],
                      target, status, (time.perf_counter() - started) * 1000)


def create_app(herder: Herder, security: RestSecurity | None = None,
               metrics_registry: CollectorRegistry | None = None,
               limits: RestLimits | None = None, *, docs: bool = True) -> FastAPI:
    """The REST application for ``herder``: Connect's resources, errors and OpenAPI; with
    ``security``, its REST extensions' middleware and admin authorization; with
    ``metrics_registry``, ``/metrics`` serving it (``rest.metrics.enabled``). ``limits``
    bound request bodies (``worker.rest.body_limits``); ``docs`` serves ``/docs`` and
    ``/redoc`` from the installed package's assets (``rest.docs.enabled``)."""
    limits = limits or RestLimits()
    app = ConnectAPI(
        title=TITLE,
        description="Apache Kafka Connect 4.x compatible REST API served by connect-plane.",
        # Connect matches "/connectors/" and "/connectors" alike; see TrailingSlashMiddleware.
        redirect_slashes=False,
        # Not FastAPI's pages: they load their scripts from a CDN (worker.rest.docs).
        docs_url=None, redoc_url=None,
    )
    if docs:
        install_docs(app)
    app.state.herder = herder
    app.state.security = security
    for module in (root, connectors, connector_offsets, connector_topics, connector_plugins,
                   loggers, worker_config, admin):
        app.include_router(module.router)
    # Always routed (one OpenAPI document whatever the setting): 404 without a registry.
    setattr(app.state, metrics.METRICS_REGISTRY, metrics_registry)
    app.include_router(metrics.router)
    install_error_handlers(app)
    # Distributed mode: requests another worker must serve are replayed there.
    app.add_exception_handler(RequestTargetError, forward_request)
    app.add_middleware(BodyCacheMiddleware, limits=limits)
    if security is not None:
        # Outside the body cache (an unauthenticated body is never read), inside the
        # listener rules and the path normalization.
        security.install(app)
    # Inside TrailingSlashMiddleware: decides on the normalized path.
    app.add_middleware(AdminListenerMiddleware)
    # Before authentication and any read: a declared body over its route's limit.
    app.add_middleware(BodyLimitMiddleware, limits=limits)
    # Added last = outermost: log every request, including those answered by the
    # catch-all error middleware, and normalize the path before anything routes on it.
    app.add_middleware(TrailingSlashMiddleware)
    app.add_middleware(RequestLogMiddleware)
    # Outermost: every answer given before its request's body was read closes the connection.
    app.add_middleware(UnreadBodyMiddleware)
    return app
