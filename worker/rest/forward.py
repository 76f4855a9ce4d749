"""Leader forwarding (distributed mode), as Kafka Connect's ``HerderRequestHandler`` does.

A herder that cannot serve a request raises ``RequestTargetError`` with the URL of the
worker that can (the leader for writes, the owner for a plain restart). This handler then
replays the request there, with ``?forward=true`` if the client sent no ``forward``
parameter (one more hop allowed) and ``?forward=false`` otherwise; a request that already
arrived with ``forward=false`` is answered 409, as Kafka answers it.
"""

from __future__ import annotations

import logging
from typing import cast

import httpx
from fastapi import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from worker.errors import RequestTargetError
from worker.rest.errors import error_response

log = logging.getLogger("worker.rest")

BODY_KEY = "connect_plane.body"
FORWARD_TIMEOUT_S = 90.0
#: Headers worth passing on to the target worker.
_PASSED_HEADERS = ("content-type", "accept", "authorization")
_RETURNED_HEADERS = ("content-type", "location")

NO_TARGET = ("Cannot complete request momentarily due to no known leader URL, likely "
             "because a rebalance was underway.")
TOO_MANY_HOPS = ("Cannot complete request because of a conflicting operation (e.g. worker "
                 "rebalance)")


class BodyCacheMiddleware:
    """Keep the body of writes in the scope so a forwarded request can resend it."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD"):
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        while True:
            message = await receive()
            if message["type"] != "http.request":
                break
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        scope[BODY_KEY] = body
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()
        await self.app(scope, replay, send)


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
    target = error.forward_url.rstrip("/") + request.url.path
    headers = {k: v for k, v in request.headers.items() if k.lower() in _PASSED_HEADERS}
    log.debug("Forwarding %s %s to %s", request.method, request.url.path, target)
    try:
        async with httpx.AsyncClient(timeout=FORWARD_TIMEOUT_S) as client:
            answer = await client.request(request.method, target, params=params,
                                          headers=headers,
                                          content=request.scope.get(BODY_KEY, b""))
    except httpx.HTTPError as http_error:
        log.warning("Forwarding %s %s to %s failed: %s", request.method, request.url.path,
                    target, http_error)
        return error_response(409, TOO_MANY_HOPS)
    returned = {k: v for k, v in answer.headers.items() if k.lower() in _RETURNED_HEADERS}
    return Response(answer.content, status_code=answer.status_code, headers=returned)
