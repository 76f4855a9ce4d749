"""Build the FastAPI application that serves Kafka Connect's REST API over a herder.

``create_app(herder)`` is called by the composition root; there is no module-level app,
so tests and several in-process workers each get their own.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from fastapi import FastAPI
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from worker.errors import RequestTargetError
from worker.herder.base import Herder
from worker.rest.errors import install_error_handlers
from worker.rest.forward import BodyCacheMiddleware, forward_request
from worker.rest.openapi import remove_validation_errors
from worker.rest.routes import (
    connector_offsets,
    connector_plugins,
    connector_topics,
    connectors,
    loggers,
    root,
)

log = logging.getLogger("worker.rest")

TITLE = "Kafka Connect REST API (connect-plane)"


class ConnectAPI(FastAPI):
    """The FastAPI app, with an OpenAPI document that lists no 422 (see
    ``worker.rest.openapi``)."""

    def openapi(self) -> dict[str, Any]:
        if self.openapi_schema is None:
            # FastAPI builds the document once and caches it; trim it before anyone reads.
            remove_validation_errors(super().openapi())
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


def create_app(herder: Herder) -> FastAPI:
    """The REST application for ``herder``: Connect's resources, errors and OpenAPI."""
    app = ConnectAPI(
        title=TITLE,
        description="Apache Kafka Connect 4.x compatible REST API served by connect-plane.",
        # Connect matches "/connectors/" and "/connectors" alike; see TrailingSlashMiddleware.
        redirect_slashes=False,
    )
    app.state.herder = herder
    for module in (root, connectors, connector_offsets, connector_topics, connector_plugins,
                   loggers):
        app.include_router(module.router)
    install_error_handlers(app)
    # Distributed mode: requests another worker must serve are replayed there.
    app.add_exception_handler(RequestTargetError, forward_request)
    app.add_middleware(BodyCacheMiddleware)
    # Added last = outermost: log every request, including those answered by the
    # catch-all error middleware, and normalize the path before anything routes on it.
    app.add_middleware(TrailingSlashMiddleware)
    app.add_middleware(RequestLogMiddleware)
    return app
