"""Leader forwarding (distributed mode), as Kafka Connect's ``HerderRequestHandler`` does.

A herder that cannot serve a request raises ``RequestTargetError`` with the URL of the
worker that can (the leader for writes, the owner for a plain restart). This handler then
replays the request there, with ``?forward=true`` if the client sent no ``forward``
parameter (one more hop allowed) and ``?forward=false`` otherwise; a request that already
arrived with ``forward=false`` is answered 409, as Kafka answers it.

Requests go out through the worker's :class:`ForwardingClient` (one per REST server, put
in each request's scope by the server): one connection pool for the process, TLS from the
worker's ``listeners.https.ssl.*`` settings (Kafka's REST client settings), rebuilt when
they are reconfigured. A target whose certificate is not trusted is answered 409 naming
the TLS failure.
"""

from __future__ import annotations

import logging
import ssl
from typing import cast
from urllib.parse import quote

import httpx
from fastapi import Request
from starlette.responses import Response
from starlette.types import Scope

from worker.errors import ConfigError, RequestTargetError
from worker.rest.body_limits import BODY_KEY
from worker.rest.errors import error_response
from worker.rest.tls.contexts import ClientTls
from worker.util.urls import encode_dot_segment

log = logging.getLogger("worker.rest")

#: ASGI scope key holding the worker's ForwardingClient (set by the REST server).
FORWARDER_KEY = "connect_plane.forwarder"
FORWARD_TIMEOUT_S = 90.0
#: Headers worth passing on to the target worker.
_PASSED_HEADERS = ("content-type", "accept", "authorization")
_RETURNED_HEADERS = ("content-type", "location")

NO_TARGET = ("Cannot complete request momentarily due to no known leader URL, likely "
             "because a rebalance was underway.")
TOO_MANY_HOPS = ("Cannot complete request because of a conflicting operation (e.g. worker "
                 "rebalance)")


class ForwardingClient:
    """The worker's httpx clients for requests to other workers, used on the REST loop.

    One plain client for ``http://`` targets and one TLS client for ``https://`` ones,
    made with the current context of ``tls`` (built on first use, as Kafka loads its
    client SSL settings only for an https URL); when ``tls`` is reconfigured the next
    request makes a new TLS client, and the old one is closed with the server (requests
    in flight on it finish).
    """

    def __init__(self, tls: ClientTls) -> None:
        self._tls = tls
        self._plain: httpx.AsyncClient | None = None
        self._secure: httpx.AsyncClient | None = None
        self._secure_context: ssl.SSLContext | None = None
        self._retired: list[httpx.AsyncClient] = []

    def client(self, url: str) -> httpx.AsyncClient:
        """The client for ``url``; ConfigError if the TLS settings are invalid."""
        if not url.lower().startswith("https://"):
            if self._plain is None:
                self._plain = httpx.AsyncClient(timeout=FORWARD_TIMEOUT_S)
            return self._plain
        context = self._tls.context()
        if self._secure is None or context is not self._secure_context:
            if self._secure is not None:
                self._retired.append(self._secure)
            self._secure = httpx.AsyncClient(timeout=FORWARD_TIMEOUT_S, verify=context)
            self._secure_context = context
        return self._secure

    async def aclose(self) -> None:
        clients = [c for c in (self._plain, self._secure, *self._retired) if c is not None]
        self._plain = self._secure = self._secure_context = None
        self._retired = []
        for client in clients:
            await client.aclose()


def forward_path(scope: Scope) -> str:
    """The request's path as the client sent it (percent-encoded), for the target worker.

    Never the decoded path: ``/connectors/%2e/offsets`` names the connector ``.``, but
    decoded, an HTTP client collapses it as a dot segment into ``/connectors/offsets``, which
    names another connector. Segments that are dots as sent are encoded for the same reason.
    """
    raw: bytes | None = scope.get("raw_path")
    path = raw.decode("latin-1") if raw else quote(scope["path"], safe="/")
    return "/".join(encode_dot_segment(segment) for segment in path.split("/"))


def tls_failure(error: BaseException) -> str | None:
    """Why a TLS handshake failed, if that is what ``error`` (or its cause) is."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, ssl.SSLCertVerificationError):
            return f"certificate verify failed: {seen.verify_message}"
        if isinstance(seen, ssl.SSLError):
            return seen.reason or str(seen)
        seen = seen.__cause__ or seen.__context__
    return None


async def forward_request(request: Request, exc: Exception) -> Response:
    error = cast(RequestTargetError, exc)
    forward = request.query_params.get("forward")
    if forward is not None and forward.lower() != "true":
        log.error("Request '%s %s' failed because it couldn't find the target Connect worker "
                  "within two hops (between workers).", request.method, request.url.path)
        return error_response(409, TOO_MANY_HOPS)
    if not error.forward_url:
        return error_response(409, NO_TARGET)
    params = httpx.QueryParams([(k, v) for k, v in request.query_params.multi_items()
                                if k != "forward"])
    params = params.add("forward", "true" if forward is None else "false")
    target = error.forward_url.rstrip("/") + forward_path(request.scope)
    headers = {k: v for k, v in request.headers.items() if k.lower() in _PASSED_HEADERS}
    log.debug("Forwarding %s %s to %s", request.method, request.url.path, target)
    forwarder: ForwardingClient | None = request.scope.get(FORWARDER_KEY)
    body = request.scope.get(BODY_KEY, b"")
    try:
        if forwarder is None:  # an app served without RestServer (in-process tests)
            async with httpx.AsyncClient(timeout=FORWARD_TIMEOUT_S) as client:
                answer = await client.request(request.method, target, params=params,
                                              headers=headers, content=body)
        else:
            answer = await forwarder.client(target).request(
                request.method, target, params=params, headers=headers, content=body)
    except ConfigError as config_error:
        log.error("Cannot forward %s %s to %s: %s", request.method, request.url.path,
                  error.forward_url, config_error)
        return error_response(409, f"Cannot forward the request to {error.forward_url}: "
                                   f"{config_error}")
    except httpx.HTTPError as http_error:
        reason = tls_failure(http_error)
        if reason is not None:
            log.error("Forwarding %s %s to %s failed: TLS handshake failed: %s",
                      request.method, request.url.path, error.forward_url, reason)
            return error_response(409, f"Cannot forward the request to {error.forward_url}: "
                                       f"TLS handshake failed: {reason}")
        log.warning("Forwarding %s %s to %s failed: %s", request.method, request.url.path,
                    target, http_error)
        return error_response(409, TOO_MANY_HOPS)
    returned = {k: v for k, v in answer.headers.items() if k.lower() in _RETURNED_HEADERS}
    return Response(answer.content, status_code=answer.status_code, headers=returned)
