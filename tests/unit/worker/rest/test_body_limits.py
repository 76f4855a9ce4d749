"""Unit tests of ``worker.rest.body_limits`` and of the forwarded path (``worker.rest.forward``).

The middlewares are driven with hand-made ASGI messages: a body's limit follows its route,
a declared length over it is refused before anything is read, an undeclared one as soon as
the bytes read pass it, a stalled body at the deadline; the app sees the body once, and
forwarding finds it in the scope. The end-to-end behaviour on a real worker is in
``tests/security/test_request_limits.py``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from worker.config.rest_limits import RestLimits
from worker.config.worker_config import StandaloneConfig
from worker.errors import PayloadTooLargeError
from worker.rest.body_limits import (
    BODY_KEY,
    BodyCacheMiddleware,
    BodyLimitMiddleware,
    UnreadBodyMiddleware,
    body_limit,
)
from worker.rest.forward import forward_path
from worker.util.urls import path_segment

LIMITS = RestLimits(body_max_bytes=1000, offsets_body_max_bytes=2000,
                    internal_body_max_bytes=3000, body_timeout_s=0.2)

Message = dict[str, Any]


def scope(method: str, path: str, headers: list[tuple[bytes, bytes]] | None = None
          ) -> dict[str, Any]:
    return {"type": "http", "method": method, "path": path, "headers": headers or []}


class App:
    """The app inside the middleware: reads the whole body, answers 200."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []
        self.calls = 0

    async def __call__(self, scope: dict[str, Any], receive: Callable[[], Awaitable[Message]],
                       send: Callable[[Message], Awaitable[None]]) -> None:
        self.calls += 1
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        self.bodies.append(body)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})


def run(middleware: Any, request_scope: dict[str, Any], chunks: list[bytes], *,
        stall: bool = False) -> tuple[int, dict[str, Any] | None]:
    """Drive ``middleware`` with ``chunks`` as the body; (status, JSON error body)."""
    sent: list[Message] = []
    queue = list(chunks)

    async def receive() -> Message:
        if not queue:
            if stall:
                await asyncio.sleep(10)
            return {"type": "http.disconnect"}
        chunk = queue.pop(0)
        return {"type": "http.request", "body": chunk, "more_body": bool(queue) or stall}

    async def send(message: Message) -> None:
        sent.append(message)

    asyncio.run(middleware(request_scope, receive, send))
    status = sent[0]["status"]
    body = b"".join(m.get("body", b"") for m in sent[1:])
    return status, json.loads(body) if status >= 400 else None


@pytest.mark.parametrize(("method", "path", "expected"), [
    ("POST", "/connectors/x/tasks", (3000, "rest.request.body.internal.max.bytes")),
    ("PUT", "/connectors/x/fence", (3000, "rest.request.body.internal.max.bytes")),
    ("PATCH", "/connectors/x/offsets", (2000, "rest.request.body.offsets.max.bytes")),
    ("DELETE", "/connectors/x/offsets", (1000, "rest.request.body.max.bytes")),
    ("POST", "/connectors", (1000, "rest.request.body.max.bytes")),
    ("PUT", "/connectors/x/config", (1000, "rest.request.body.max.bytes")),
    ("PATCH", "/admin/dynamic-worker-config", (1000, "rest.request.body.max.bytes")),
])
def test_the_limit_follows_the_route(method: str, path: str, expected: tuple[int, str]) -> None:
    assert body_limit(LIMITS, method, path) == expected


def test_a_declared_length_over_the_limit_is_refused_unread() -> None:
    app = App()
    status, error = run(BodyLimitMiddleware(app, LIMITS),
                        scope("POST", "/connectors", [(b"content-length", b"1001")]), [])
    assert status == 413 and app.calls == 0
    assert error == {"error_code": 413, "message": "The request body is larger than 1000 "
                                                   "bytes (rest.request.body.max.bytes)"}
    status, _ = run(BodyLimitMiddleware(app, LIMITS),
                    scope("PATCH", "/connectors/c/offsets", [(b"content-length", b"1500")]),
                    [b"x" * 1500])
    assert status == 200 and app.bodies == [b"x" * 1500]


def test_an_undeclared_body_is_cut_at_the_limit() -> None:
    app = App()
    status, error = run(BodyCacheMiddleware(app, LIMITS), scope("POST", "/connectors"),
                        [b"x" * 600, b"x" * 600, b"x" * 600])
    assert status == 413 and app.calls == 0
    assert error is not None and "rest.request.body.max.bytes" in error["message"]


def test_a_stalled_body_is_cut_at_the_deadline() -> None:
    app = App()
    status, error = run(BodyCacheMiddleware(app, LIMITS), scope("PUT", "/connectors/c/config"),
                        [b"{"], stall=True)
    assert status == 408 and app.calls == 0
    assert error == {"error_code": 408, "message": "The request body did not arrive within "
                                                   "200 ms (rest.request.body.timeout.ms)"}


def test_the_app_gets_the_body_once_and_forwarding_finds_it() -> None:
    app = App()
    request_scope = scope("POST", "/connectors")
    status, _ = run(BodyCacheMiddleware(app, LIMITS), request_scope, [b"ab", b"cd"])
    assert status == 200 and app.bodies == [b"abcd"]
    assert request_scope[BODY_KEY] == b"abcd"


def test_an_internal_request_is_not_read_ahead() -> None:
    # The route reads it after checking the signature headers; the receive it gets is
    # bounded by the internal limit.
    seen: list[object] = []

    async def route(scope: dict[str, Any], receive: Callable[[], Awaitable[Message]],
                    send: Callable[[Message], Awaitable[None]]) -> None:
        seen.append(scope.get(BODY_KEY))  # nothing read before the route runs
        try:
            while (await receive()).get("more_body"):
                pass
        except PayloadTooLargeError as exc:
            seen.append(str(exc))
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    run(BodyCacheMiddleware(route, LIMITS), scope("POST", "/connectors/c/tasks"),
        [b"x" * 2000, b"x" * 2000])
    assert seen == [None, "The request body is larger than 3000 bytes "
                          "(rest.request.body.internal.max.bytes)"]


@pytest.mark.parametrize(("raw", "expected"), [
    (b"/connectors/%2e/offsets", "/connectors/%2e/offsets"),
    (b"/connectors/./offsets", "/connectors/%2E/offsets"),
    (b"/connectors/../connectors/x", "/connectors/%2E%2E/connectors/x"),
    (b"/connectors/a%2Fb/status", "/connectors/a%2Fb/status"),
    (b"/connectors/caf%C3%A9", "/connectors/caf%C3%A9"),
])
def test_forwarding_keeps_the_path_as_received(raw: bytes, expected: str) -> None:
    assert forward_path({"raw_path": raw, "path": "ignored"}) == expected


def test_forwarding_without_a_raw_path_encodes_the_decoded_one() -> None:
    assert forward_path({"path": "/connectors/./offsets"}) == "/connectors/%2E/offsets"


@pytest.mark.parametrize(("name", "segment"), [
    (".", "%2E"), ("..", "%2E%2E"), ("a/b", "a%2Fb"), ("...", "..."), ("a b", "a%20b")])
def test_a_name_is_one_path_segment(name: str, segment: str) -> None:
    assert path_segment(name) == segment


def test_the_settings_have_their_documented_defaults_and_bounds() -> None:
    config = StandaloneConfig({"bootstrap.servers": "localhost:9092"})
    assert config.rest_limits == RestLimits()
    tuned = StandaloneConfig({"bootstrap.servers": "localhost:9092",
                              "rest.request.body.max.bytes": "4096",
                              "rest.request.headers.timeout.ms": "2500",
                              "rest.max.connections": "7"})
    assert (tuned.rest_limits.body_max_bytes, tuned.rest_limits.headers_timeout_s,
            tuned.rest_limits.max_connections) == (4096, 2.5, 7)
    with pytest.raises(Exception, match="rest.max.connections"):
        StandaloneConfig({"bootstrap.servers": "localhost:9092", "rest.max.connections": "0"})


async def _refuse_unread(scope: dict[str, Any], receive: Callable[[], Awaitable[Message]],
                         send: Callable[[Message], Awaitable[None]]) -> None:
    """An app that answers 401 without reading the body (an authentication refusal)."""
    await send({"type": "http.response.start", "status": 401,
                "headers": [(b"connection", b"keep-alive")]})
    await send({"type": "http.response.body", "body": b"{}"})


def _connection_headers(app: Any, headers: list[tuple[bytes, bytes]]) -> list[bytes]:
    sent: list[Message] = []
    chunks = [b"{}"]

    async def receive() -> Message:
        return {"type": "http.request", "body": chunks.pop(0) if chunks else b"",
                "more_body": False}

    async def send(message: Message) -> None:
        sent.append(message)

    asyncio.run(UnreadBodyMiddleware(app)(scope("PUT", "/connectors/x/config", headers),
                                          receive, send))
    return [v for k, v in sent[0]["headers"] if k == b"connection"]


@pytest.mark.parametrize("body_headers", [[(b"content-length", b"2")],
                                          [(b"transfer-encoding", b"chunked")]])
def test_an_answer_before_the_body_was_read_closes_the_connection(
        body_headers: list[tuple[bytes, bytes]]) -> None:
    assert _connection_headers(_refuse_unread, body_headers) == [b"close"]
    # Read to its end, or no body at all: the connection may carry the next request.
    assert _connection_headers(App(), body_headers) == []
    assert _connection_headers(_refuse_unread, [(b"content-length", b"0")]) == [b"keep-alive"]
    assert _connection_headers(_refuse_unread, []) == [b"keep-alive"]
