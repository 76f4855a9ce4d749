"""``ConnectRoute`` (handlers off the event loop, shared error statuses) and
``error_responses``."""

from __future__ import annotations

import threading
from typing import Annotated, Any

import httpx
from fastapi import APIRouter, Body
from fastapi.testclient import TestClient

from worker.rest.app import ConnectAPI, create_app
from worker.rest.datamodels.base import ErrorResponse
from worker.rest.openapi import error_responses
from worker.rest.routing import ConnectRoute
from worker.rest.server import RestServer


def _app(router: APIRouter) -> ConnectAPI:
    app = ConnectAPI()
    app.include_router(router)
    return app


def test_handlers_run_on_the_rest_server_thread_pool(herder, monkeypatch) -> None:
    threads: list[str] = []

    def connectors() -> list[str]:
        threads.append(threading.current_thread().name)
        return []

    monkeypatch.setattr(herder, "connectors", connectors)
    server = RestServer(create_app(herder), ["http://127.0.0.1:0"])
    server.start()
    try:
        assert httpx.get(f"{server.url}/connectors", timeout=5).json() == []
    finally:
        server.stop()
    # The loop's default executor, which RestServer sets to its DaemonThreadPool.
    assert len(threads) == 1 and threads[0].startswith("rest-"), threads


def test_plain_handlers_leave_the_loop_and_async_ones_stay() -> None:
    router = APIRouter(route_class=ConnectRoute)
    seen: dict[str, threading.Thread] = {}

    @router.get("/plain")
    def plain() -> str:
        seen["plain"] = threading.current_thread()
        return "ok"

    @router.get("/async")
    async def on_loop() -> str:
        seen["async"] = threading.current_thread()
        return "ok"

    with TestClient(_app(router)) as client:
        assert client.get("/plain").json() == client.get("/async").json() == "ok"
    assert seen["plain"] is not seen["async"]
    # asyncio names the threads of a loop's default executor "asyncio_<n>".
    assert seen["plain"].name.startswith("asyncio_"), seen["plain"].name


def test_route_class_declares_the_statuses_every_route_of_a_kind_shares() -> None:
    router = APIRouter(route_class=ConnectRoute)

    @router.get("/text/{name}")
    def text(name: str) -> str:
        return name

    @router.get("/number/{n}", responses=error_responses((404, "No such number")))
    def number(n: int) -> int:
        return n

    @router.put("/body")
    def body(value: Annotated[dict[str, str], Body()]) -> dict[str, str]:
        return value

    document = _app(router).openapi()

    def responses(path: str, method: str = "get") -> dict[str, Any]:
        found: dict[str, Any] = document["paths"][path][method]["responses"]
        return found

    assert list(responses("/text/{name}")) == ["200", "500"]
    assert list(responses("/number/{n}")) == ["200", "404", "500"]
    # The route's own meaning first, then the shared one.
    assert responses("/number/{n}")["404"]["description"] == (
        "No such number; or a path or query parameter that does not convert to its type")
    assert list(responses("/body", "put")) == ["200", "400", "408", "413", "415", "500"]
    assert "not valid JSON" in responses("/body", "put")["400"]["description"]
    assert "rest.request.body.*" in responses("/body", "put")["413"]["description"]
    assert "rest.request.body.timeout.ms" in responses("/body", "put")["408"]["description"]
    assert "not valid JSON" not in responses("/body", "put")["500"]["description"]
    assert responses("/body", "put")["415"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/ErrorResponse"}


def test_error_responses_sorted_with_the_error_body() -> None:
    assert error_responses((409, "Taken"), 404) == {
        404: {"model": ErrorResponse, "description": "Not Found"},
        409: {"model": ErrorResponse, "description": "Taken"},
    }
