"""Request bodies: bounded by their route's limit and a deadline before anything reads them.

A body's limit depends on what the route takes (``worker.config.rest_limits``): requests
between workers (a connector's task configs) ``rest.request.body.internal.max.bytes``, an
offsets change ``rest.request.body.offsets.max.bytes``, every other body
``rest.request.body.max.bytes``. Two middlewares apply it:

* :class:`BodyLimitMiddleware`, outside authentication: a ``Content-Length`` over the
  limit is answered 413 before a byte of the body is read;
* :class:`BodyCacheMiddleware`, inside authentication (an unauthenticated body is never
  read): reads the body of a write — at most the limit, within
  ``rest.request.body.timeout.ms`` (413/408 otherwise) — and keeps it in the scope, so that
  leader forwarding (``worker.rest.forward``) can send it on.

The internal route (``POST /connectors/{c}/tasks``) is let through authentication, as in
Kafka, and is not read ahead: it checks that the request is signed before reading its body
(:func:`read_body`, bounded the same way), and verifies the signature over the raw bytes
before parsing them (``worker.rest.routes.connectors``).

The protocol under these (``worker.rest.http_limits``) stops reading a request that was
answered before its body ended, so a refused body costs no more than what was read; the
outermost :class:`UnreadBodyMiddleware` says so in the answer (``Connection: close``), or a
client reusing the connection would race its close.
"""

from __future__ import annotations

import asyncio
import re

from fastapi import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from worker.api.rest_extension import is_internal_request
from worker.config import rest_limits as keys
from worker.config.rest_limits import RestLimits
from worker.errors import PayloadTooLargeError, RequestTimeoutError, WorkerError
from worker.rest.errors import error_response
from worker.util.memory import MemoryTrimmer

#: ASGI scope key of a write's body once read (what forwarding resends).
BODY_KEY = "connect_plane.body"
#: ASGI scope key of the body's bounded receive, for routes that read the body themselves.
BOUNDED_RECEIVE_KEY = "connect_plane.bounded_receive"

_OFFSETS = re.compile(r"/connectors/[^/]+/offsets")
#: A request that read this much has its freed memory handed back once it is over.
TRIM_AFTER_BYTES = 1024 * 1024


def body_limit(limits: RestLimits, method: str, path: str) -> tuple[int, str]:
    """The largest body ``method path`` takes, and the setting that says so."""
    if is_internal_request(method, path):
        return limits.internal_body_max_bytes, keys.INTERNAL_BODY_MAX_BYTES
    if method == "PATCH" and _OFFSETS.fullmatch(path):
        return limits.offsets_body_max_bytes, keys.OFFSETS_BODY_MAX_BYTES
    return limits.body_max_bytes, keys.BODY_MAX_BYTES


def _too_large(limit: int, key: str) -> PayloadTooLargeError:
    return PayloadTooLargeError(f"The request body is larger than {limit} bytes ({key})")


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None  # the HTTP parser refuses such a request before this
    return None


class BodyLimitMiddleware:
    """413 for a declared ``Content-Length`` over the route's limit, before authentication
    and before any read."""

    def __init__(self, app: ASGIApp, limits: RestLimits) -> None:
        self.app = app
        self.limits = limits

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            length = _content_length(scope)
            limit, key = body_limit(self.limits, scope["method"], scope["path"])
            if length is not None and length > limit:
                error = _too_large(limit, key)
                await error_response(error.status_code, str(error))(scope, receive, send)
                return
        await self.app(scope, receive, send)


class UnreadBodyMiddleware:
    """``Connection: close`` on an answer that starts before the request's body was read to
    its end (a 401, 403 or 413 refusal, an error): the connection will not carry another
    request, and a client must not send one on it."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not _has_body(scope):
            await self.app(scope, receive, send)
            return
        ended = False

        async def tracked_receive() -> Message:
            nonlocal ended
            message = await receive()
            if message["type"] != "http.request" or not message.get("more_body", False):
                ended = True
            return message

        async def closing_send(message: Message) -> None:
            if message["type"] == "http.response.start" and not ended:
                headers = [(k, v) for k, v in message.get("headers", ()) if k != b"connection"]
                message = {**message, "headers": [*headers, (b"connection", b"close")]}
            await send(message)

        await self.app(scope, tracked_receive, closing_send)


def _has_body(scope: Scope) -> bool:
    """Whether the request carries a body: chunked, or a ``Content-Length`` over 0."""
    if any(name == b"transfer-encoding" for name, _ in scope.get("headers", ())):
        return True
    return _content_length(scope) not in (None, 0)


class _BoundedReceive:
    """``receive`` for one request's body: at most ``limit`` bytes, by ``deadline`` (the
    loop's clock); PayloadTooLargeError / RequestTimeoutError otherwise."""

    def __init__(self, receive: Receive, limit: int, key: str, timeout_s: float) -> None:
        self._receive = receive
        self._limit = limit
        self._key = key
        self._timeout_s = timeout_s
        self._deadline = asyncio.get_running_loop().time() + timeout_s
        self.read = 0

    async def __call__(self) -> Message:
        remaining = self._deadline - asyncio.get_running_loop().time()
        try:
            if remaining <= 0:
                raise TimeoutError
            async with asyncio.timeout(remaining):
                message = await self._receive()
        except TimeoutError:
            raise RequestTimeoutError(
                f"The request body did not arrive within {round(self._timeout_s * 1000)} ms "
                f"({keys.BODY_TIMEOUT_MS})") from None
        if message["type"] == "http.request":
            self.read += len(message.get("body", b""))
            if self.read > self._limit:
                raise _too_large(self._limit, self._key)
        return message


async def _read_all(receive: Receive) -> bytes | None:
    """The whole body; None if the client went away first."""
    body = bytearray()
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return None
        body += message.get("body", b"")
        if not message.get("more_body", False):
            return bytes(body)


class BodyCacheMiddleware:
    """Read a write's body, bounded (see the module docstring), and replay it to the app;
    keep it in the scope for forwarding. Internal requests get the bounded receive only.

    Once a request that read ``TRIM_AFTER_BYTES`` or more is over, the heap's free pages
    are handed back to the operating system (``trimmer``, settling a moment so that a burst
    trims once): glibc keeps what a large body freed, so repeated large bodies — refused
    ones included — would otherwise ratchet the worker's RSS up.
    """

    def __init__(self, app: ASGIApp, limits: RestLimits,
                 trimmer: MemoryTrimmer | None = None) -> None:
        self.app = app
        self.limits = limits
        self.trimmer = trimmer or MemoryTrimmer()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD"):
            await self.app(scope, receive, send)
            return
        limit, key = body_limit(self.limits, scope["method"], scope["path"])
        bounded = _BoundedReceive(receive, limit, key, self.limits.body_timeout_s)
        try:
            await self._serve(scope, receive, send, bounded)
        finally:
            if bounded.read >= TRIM_AFTER_BYTES:
                self.trimmer.request()

    async def _serve(self, scope: Scope, receive: Receive, send: Send,
                     bounded: _BoundedReceive) -> None:
        if is_internal_request(scope["method"], scope["path"]):
            scope[BOUNDED_RECEIVE_KEY] = bounded
            await self.app(scope, bounded, send)
            return
        try:
            body = await _read_all(bounded)
        except WorkerError as exc:  # too large, too slow
            await error_response(exc.status_code, str(exc))(scope, receive, send)
            return
        if body is None:
            return  # the client is gone: nobody to answer
        scope[BODY_KEY] = body
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()
        await self.app(scope, replay, send)


async def read_body(request: Request) -> bytes:
    """The body of a request a route reads itself (an internal request), bounded as
    :class:`BodyCacheMiddleware` bounds the others, and kept for forwarding.

    PayloadTooLargeError / RequestTimeoutError (413/408) past the limits; a request served
    without the middleware (an in-process test app) is read as it is.
    """
    bounded = request.scope.get(BOUNDED_RECEIVE_KEY)
    if bounded is None:
        body = await request.body()
    else:
        body = await _read_all(bounded) or b""
    request.scope[BODY_KEY] = body
    return body
