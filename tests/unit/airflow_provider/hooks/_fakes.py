"""A scripted Kafka Connect for the hook unit tests, and the table of every endpoint.

:class:`FakeConnect` is the handler of an ``httpx.MockTransport`` (sync and async): it
records each request and answers from a script of responses (or raises transport errors),
so tests count attempts and check exactly what went over the wire.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

BASE_URL = "http://connect.test:8083"
PASSWORD = "pa55-w0rd-never-logged"

Answer = httpx.Response | BaseException | Callable[[httpx.Request], httpx.Response]


@dataclass
class Sent:
    """One request as the server saw it."""

    method: str
    raw_path: str  # percent-encoded, without the query
    query: list[tuple[str, str]]
    body: Any  # parsed JSON, or None when there was no body
    headers: httpx.Headers


@dataclass
class FakeConnect:
    """Answers requests from ``script`` in order; the last answer repeats."""

    script: list[Answer] = field(default_factory=list)
    sent: list[Sent] = field(default_factory=list)

    def answer(self, *answers: Answer) -> FakeConnect:
        self.script.extend(answers)
        return self

    def __call__(self, request: httpx.Request) -> httpx.Response:
        content = request.content
        self.sent.append(Sent(
            method=request.method,
            raw_path=request.url.raw_path.decode().split("?", 1)[0],
            query=list(request.url.params.multi_items()),
            body=json.loads(content) if content else None,
            headers=request.headers,
        ))
        index = min(len(self.sent), len(self.script)) - 1
        answer = self.script[index] if self.script else httpx.Response(200, json={})
        if isinstance(answer, BaseException):
            raise answer
        if callable(answer) and not isinstance(answer, httpx.Response):
            return answer(request)
        return answer

    @property
    def attempts(self) -> int:
        return len(self.sent)

    def sync_transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self)

    def async_transport(self) -> httpx.MockTransport:
        async def handle(request: httpx.Request) -> httpx.Response:
            await request.aread()
            return self(request)
        return httpx.MockTransport(handle)


def error(status: int, message: str = "boom", error_code: int | None = None) -> httpx.Response:
    """A Kafka Connect error answer ``{"error_code", "message"}``."""
    return httpx.Response(status, json={"error_code": error_code or status, "message": message})


ODD = "a/b c"  # must travel as one path segment
ODD_Q = "a%2Fb%20c"
CONFIG = {"connector.class": "FileStreamSource", "file": "/tmp/in.txt", "topic": "t"}
OFFSETS = [{"partition": {"filename": "/tmp/in.txt"}, "offset": {"position": 42}}]


@dataclass(frozen=True)
class Endpoint:
    """One hook method call and the request it must send."""

    call: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    method: str
    path: str
    query: list[tuple[str, str]]
    body: Any = None

    @property
    def id(self) -> str:
        return f"{self.call}-{self.method}-{self.path}-{self.query}"


def _e(call: str, args: tuple[Any, ...], method: str, path: str,
       query: list[tuple[str, str]] | None = None, body: Any = None,
       **kwargs: Any) -> Endpoint:
    return Endpoint(call, args, kwargs, method, path, query or [], body)


#: Every endpoint of ``ConnectRestApi``: the spec's table, with odd names quoted.
ENDPOINTS = [
    _e("get_server_info", (), "GET", "/"),
    _e("get_health", (), "GET", "/health"),
    _e("list_connectors", (), "GET", "/connectors"),
    _e("list_connectors", (), "GET", "/connectors", [("expand", "status"), ("expand", "info")],
       expand=("status", "info")),
    _e("list_connectors", (), "GET", "/connectors", [("expand", "status")], expand="status"),
    _e("get_connector", (ODD,), "GET", f"/connectors/{ODD_Q}"),
    _e("get_connector_config", (ODD,), "GET", f"/connectors/{ODD_Q}/config"),
    _e("create_connector", (ODD, CONFIG), "POST", "/connectors",
       body={"name": ODD, "config": CONFIG}),
    _e("create_connector", ("c", CONFIG), "POST", "/connectors",
       body={"name": "c", "config": CONFIG, "initial_state": "STOPPED"},
       initial_state="STOPPED"),
    _e("put_connector_config", (ODD, CONFIG), "PUT", f"/connectors/{ODD_Q}/config", body=CONFIG),
    _e("patch_connector_config", (ODD, {"tasks.max": "2", "file": None}), "PATCH",
       f"/connectors/{ODD_Q}/config", body={"tasks.max": "2", "file": None}),
    _e("delete_connector", (ODD,), "DELETE", f"/connectors/{ODD_Q}"),
    _e("get_connector_status", (ODD,), "GET", f"/connectors/{ODD_Q}/status"),
    _e("get_connector_topics", (ODD,), "GET", f"/connectors/{ODD_Q}/topics"),
    _e("reset_connector_topics", (ODD,), "PUT", f"/connectors/{ODD_Q}/topics/reset"),
    _e("pause_connector", (ODD,), "PUT", f"/connectors/{ODD_Q}/pause"),
    _e("resume_connector", (ODD,), "PUT", f"/connectors/{ODD_Q}/resume"),
    _e("stop_connector", (ODD,), "PUT", f"/connectors/{ODD_Q}/stop"),
    _e("restart_connector", (ODD,), "POST", f"/connectors/{ODD_Q}/restart",
       [("includeTasks", "false"), ("onlyFailed", "false")]),
    _e("restart_connector", (ODD,), "POST", f"/connectors/{ODD_Q}/restart",
       [("includeTasks", "true"), ("onlyFailed", "true")], include_tasks=True, only_failed=True),
    _e("list_tasks", (ODD,), "GET", f"/connectors/{ODD_Q}/tasks"),
    _e("get_task_status", (ODD, 3), "GET", f"/connectors/{ODD_Q}/tasks/3/status"),
    _e("restart_task", (ODD, 0), "POST", f"/connectors/{ODD_Q}/tasks/0/restart"),
    _e("get_offsets", (ODD,), "GET", f"/connectors/{ODD_Q}/offsets"),
    _e("alter_offsets", (ODD, OFFSETS), "PATCH", f"/connectors/{ODD_Q}/offsets",
       body={"offsets": OFFSETS}),
    _e("reset_offsets", (ODD,), "DELETE", f"/connectors/{ODD_Q}/offsets"),
    _e("list_connector_plugins", (), "GET", "/connector-plugins", [("connectorsOnly", "true")]),
    _e("list_connector_plugins", (), "GET", "/connector-plugins", [("connectorsOnly", "false")],
       connectors_only=False),
    _e("get_plugin_config", ("my/plugin",), "GET", "/connector-plugins/my%2Fplugin/config"),
    _e("validate_connector_config", ("FileStreamSource", CONFIG), "PUT",
       "/connector-plugins/FileStreamSource/config/validate", body=CONFIG),
    _e("list_loggers", (), "GET", "/admin/loggers"),
    _e("get_logger", ("worker.rest",), "GET", "/admin/loggers/worker.rest"),
    _e("set_logger_level", ("a b", "DEBUG"), "PUT", "/admin/loggers/a%20b",
       body={"level": "DEBUG"}),
    _e("set_logger_level", ("root", "INFO"), "PUT", "/admin/loggers/root", [("scope", "cluster")],
       body={"level": "INFO"}, scope="cluster"),
]
