"""The one place where failures become HTTP responses: ``{"error_code", "message"}``.

Mirrors Kafka Connect's ``ConnectExceptionMapper``:

* domain errors (``worker.errors``) answer with their ``status_code`` and message, so a
  herder's ``NotFoundError("Connector x not found")`` reaches the client unchanged;
* framework errors answer as Jersey's ``WebApplicationException`` does: an unknown route
  is ``404 "HTTP 404 Not Found"``, a wrong verb ``405 "HTTP 405 Method Not Allowed"``
  (its ``Allow`` lists every method served at the path), a path or query parameter that
  does not convert (``/tasks/abc/status``) is a 404 too (JAX-RS rule for
  ``@PathParam``/``@QueryParam``), a non-JSON body is a 415;
* a body that is missing, is not valid JSON or does not fit the expected shape answers
  ``BODY_ERROR_STATUS``, 400, with a message that names the offending field. Apache Kafka
  Connect answers 500 there (Jackson's errors fall through to the mapper's generic
  branch): a client error reported as a server failure, which we do not copy
  (``docs/limitations.md`` lists the difference);
* anything else is a 500 carrying the exception's message, logged with its stack trace.

Handlers dispatch on exception *types* and structured error data only, never on text.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable, Sequence
from http import HTTPStatus
from typing import Any, cast

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response
from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from worker.errors import WorkerError
from worker.rest.datamodels.base import ErrorResponse

log = logging.getLogger("worker.rest")

_PATH_PARAM = re.compile(r"\{[^}]*\}")

#: Status of a missing, malformed or mis-shaped request body. Apache Kafka Connect answers
#: 500 here: Jackson's ``JsonParseException``/``JsonMappingException`` are neither Connect
#: nor JAX-RS exceptions, so ``ConnectExceptionMapper`` gives them its catch-all status.
#: The fault is the client's, so we say so.
BODY_ERROR_STATUS = 400

ExceptionHandler = Callable[[Request, Exception], Awaitable[Response]]


def error_response(status_code: int, message: str,
                   headers: dict[str, str] | None = None) -> JSONResponse:
    """A Connect error body with the given status."""
    body = ErrorResponse(error_code=status_code, message=message).model_dump(mode="json")
    return JSONResponse(body, status_code=status_code, headers=headers)


def _jersey_message(status_code: int) -> str:
    # The message of a bare JAX-RS WebApplicationException, e.g. "HTTP 404 Not Found".
    try:
        phrase = HTTPStatus(status_code).phrase
    except ValueError:
        phrase = ""
    return f"HTTP {status_code} {phrase}".rstrip()


async def _worker_error(request: Request, exc: Exception) -> Response:
    error = cast(WorkerError, exc)
    if error.status_code == 500:
        log.error("Error in REST call to %s %s", request.method, request.url.path,
                  exc_info=error)
    elif error.status_code > 500:  # a known, passing state (e.g. 503 while starting)
        log.warning("REST call to %s %s answered %d: %s", request.method, request.url.path,
                    error.status_code, error)
    else:
        log.debug("REST call to %s %s failed: %s", request.method, request.url.path, error)
    return error_response(error.status_code, str(error))


def _allowed_methods(request: Request) -> str:
    """The methods served at the request's path, for a 405's ``Allow``.

    Starlette names only the methods of the first route whose path matched; a path may be
    served by several routes (``GET`` and ``DELETE /connectors/{c}``). Of the templates
    that match, the most literal one is the resource, as in JAX-RS:
    ``/admin/dynamic-worker-config/validate`` is not ``.../{name}``.
    """
    by_template: dict[str, set[str]] = {}
    for route in request.app.router.routes:
        if route.matches(request.scope)[0] is not Match.NONE:
            template = getattr(route, "path_format", "")
            by_template.setdefault(template, set()).update(
                getattr(route, "methods", None) or ())
    if not by_template:
        return ""
    literal = max(by_template, key=lambda t: len(_PATH_PARAM.sub("", t)))
    return ", ".join(sorted(by_template[literal]))


async def _http_error(request: Request, exc: Exception) -> Response:
    error = cast(StarletteHTTPException, exc)
    headers = dict(error.headers) if error.headers else None
    if error.status_code == 405:
        headers = {**(headers or {}), "Allow": _allowed_methods(request)}
    return error_response(error.status_code, _jersey_message(error.status_code), headers)


def _describe(error: dict[str, Any]) -> str:
    """One validation error as ``field.path: problem`` (the field named, as §7 asks)."""
    if error["type"] == "json_invalid":
        reason = error.get("ctx", {}).get("error", "invalid JSON")
        return f"Malformed JSON: {reason} (at character {error['loc'][-1]})"
    where = ".".join(str(part) for part in error["loc"][1:])
    if error["type"] == "missing" and not where:
        return "Request body is missing"
    return f"{where}: {error['msg']}" if where else str(error["msg"])


async def _validation_error(request: Request, exc: Exception) -> Response:
    error = cast(RequestValidationError, exc)
    problems: Sequence[dict[str, Any]] = error.errors()
    # Where and what, never the rejected input itself: it may be a secret.
    log.debug("Rejected REST call to %s %s: %s", request.method, request.url.path,
              [{k: v for k, v in p.items() if k not in ("input", "ctx")} for p in problems])
    if any(p["loc"][0] in ("path", "query") for p in problems):
        return error_response(404, _jersey_message(404))
    # FastAPI hands the raw bytes to validation when the content type is not JSON.
    if isinstance(error.body, bytes | bytearray) and error.body:
        return error_response(415, _jersey_message(415))
    message = "Cannot deserialize request body: " + "; ".join(_describe(p) for p in problems)
    return error_response(BODY_ERROR_STATUS, message)


#: Exception type → handler, registered on the app by :func:`install_error_handlers`.
EXCEPTION_HANDLERS: list[tuple[type[Exception], ExceptionHandler]] = [
    (WorkerError, _worker_error),
    (StarletteHTTPException, _http_error),
    (RequestValidationError, _validation_error),
]


class UnhandledErrorMiddleware:
    """Answer any exception no handler claimed with a 500 Connect error body.

    A plain Starlette handler for ``Exception`` answers and then re-raises (so the server
    logs the same failure twice); catching here answers once and logs once.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except Exception as exc:
            if started:  # too late for an error body; let the server drop the connection
                raise
            log.error("Uncaught exception in REST call to %s %s", scope.get("method"),
                      scope.get("path"), exc_info=exc)
            response = error_response(500, str(exc) or type(exc).__name__)
            await response(scope, receive, send)


def install_error_handlers(app: FastAPI) -> None:
    """Register :data:`EXCEPTION_HANDLERS` and the catch-all middleware on ``app``."""
    for exc_type, handler in EXCEPTION_HANDLERS:
        app.add_exception_handler(exc_type, handler)
    app.add_middleware(UnhandledErrorMiddleware)
