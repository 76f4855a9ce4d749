"""A scripted Kafka Connect for the hook unit tests, and the table of every endpoint.

:class:`FakeConnect` is the handler of an ``httpx.MockTransport`` (sync and async): it
records each request and answers from a script of responses (or raises transport errors),
so tests count attempts and check exactly what went over the wire. :data:`ENDPOINTS` pairs
every hook method with its request and a well-formed answer of Kafka Connect.
"""

from __future__ import annotations

import asyncio
import json
import sys
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
SERVER_INFO = {"version": "4.0.0", "commit": "abc123", "kafka_cluster_id": "kc-1"}

# Well-formed answers, as Kafka Connect sends them.
INFO = {"name": ODD, "config": {**CONFIG, "name": ODD},
        "tasks": [{"connector": ODD, "task": 0}], "type": "source"}
STATUS = {"name": ODD, "connector": {"state": "RUNNING", "worker_id": "w:8083"},
          "tasks": [{"id": 0, "state": "FAILED", "worker_id": "w:8083", "trace": "boom"}],
          "type": "source", "version": "4.0.0"}  # a field the provider does not model
RESTARTING = {"name": ODD, "connector": {"state": "RESTARTING", "worker_id": "w:8083"},
              "tasks": [], "type": "source"}
VALIDATION = {"name": "FileStreamSource", "error_count": 1, "groups": ["Common"], "configs": [
    {"definition": {"name": "tasks.max", "type": "INT"},
     "value": {"name": "tasks.max", "value": "x", "recommended_values": [],
               "errors": ["Invalid value x"], "visible": True}}]}
#: The answer of endpoints that answer with a status code only (202/204).
EMPTY = None

# connect-plane's /admin/ extensions.
SSL = "listeners.https.ssl."
OVERRIDES = {f"{SSL}keystore.location": "/etc/connect/ks-2.p12",
             f"{SSL}keystore.password": "${file:/etc/connect/ks-2.properties:password}"}
CHANGES = {f"{SSL}keystore.location": "/etc/connect/ks-2.p12", f"{SSL}key.password": None}
DYNAMIC_VALIDATION = {"error_count": 2, "errors": {
    f"{SSL}keystore.location": ["file /etc/connect/ks-2.p12 does not exist"],
    f"{SSL}keystore.password": ["the keystore password is wrong"]}}
CERTIFICATE = {"sha256": "ab" * 32, "subject": "CN=worker-1", "issuer": "CN=test-ca",
               "serial": "1f", "not_before": "2026-01-01T00:00:00+00:00",
               "not_after": "2026-04-01T00:00:00+00:00"}
WORKER_REPORT = {
    "worker_id": "127.0.0.1:8083", "url": "http://127.0.0.1:8083",
    "dynamic_config": {"version": 3, "overrides": OVERRIDES,
                       "last_validation": {"status": "ok", "message": None,
                                           "timestamp": 1767225600000}},
    "listeners": [
        {"url": "http://127.0.0.1:8083", "protocol": "http", "admin": False,
         "certificate": None},
        {"url": "https://127.0.0.1:8443", "protocol": "https", "admin": False,
         "certificate": CERTIFICATE}]}
CLUSTER = {"leader_url": "http://127.0.0.1:8083", "members": [
    {"worker_id": "127.0.0.1:8083", "url": "http://127.0.0.1:8083"},
    {"worker_id": "127.0.0.1:8084", "url": "http://127.0.0.1:8084"}]}


def answer_response(body: Any) -> httpx.Response:
    """``body`` as Kafka Connect's answer: JSON, or an empty 204 for :data:`EMPTY`."""
    return httpx.Response(204) if body is EMPTY else httpx.Response(200, json=body)


def as_json(value: Any) -> Any:
    """A hook's answer in its JSON form: typed answers by ``to_dict()``."""
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if isinstance(value, list):
        return [as_json(item) for item in value]
    return value


@dataclass(frozen=True)
class Endpoint:
    """One hook method call, the request it must send, a well-formed answer and the
    answer's JSON form as the hook returns it (``result``; by default ``answer``)."""

    call: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    method: str
    path: str
    query: list[tuple[str, str]]
    body: Any = None
    answer: Any = EMPTY
    result: Any = EMPTY

    @property
    def id(self) -> str:
        return f"{self.call}-{self.method}-{self.path}-{self.query}"


def _e(call: str, args: tuple[Any, ...], method: str, path: str,
       query: list[tuple[str, str]] | None = None, body: Any = None, *,
       answer: Any = EMPTY, **kwargs: Any) -> Endpoint:
    result = kwargs.pop("result", answer)
    return Endpoint(call, args, kwargs, method, path, query or [], body, answer, result)


#: Every endpoint of ``ConnectRestApi``: the spec's table, with odd names quoted.
ENDPOINTS = [
    _e("get_server_info", (), "GET", "/", answer=SERVER_INFO),
    _e("get_health", (), "GET", "/health", answer={"status": "healthy", "message": "ready"}),
    _e("list_connectors", (), "GET", "/connectors", answer=[ODD, "b"]),
    _e("list_connectors", (), "GET", "/connectors", [("expand", "status"), ("expand", "info")],
       expand=("status", "info"), answer={ODD: {"status": STATUS, "info": INFO}}),
    _e("list_connectors", (), "GET", "/connectors", [("expand", "status")], expand="status",
       answer={ODD: {"status": STATUS}}),
    _e("get_connector", (ODD,), "GET", f"/connectors/{ODD_Q}", answer=INFO),
    _e("get_connector_config", (ODD,), "GET", f"/connectors/{ODD_Q}/config",
       answer=INFO["config"]),
    _e("create_connector", (ODD, CONFIG), "POST", "/connectors",
       body={"name": ODD, "config": CONFIG}, answer=INFO),
    _e("create_connector", ("c", CONFIG), "POST", "/connectors",
       body={"name": "c", "config": CONFIG, "initial_state": "STOPPED"},
       initial_state="STOPPED", answer={**INFO, "name": "c", "tasks": []}),
    _e("put_connector_config", (ODD, CONFIG), "PUT", f"/connectors/{ODD_Q}/config", body=CONFIG,
       answer=INFO),
    _e("patch_connector_config", (ODD, {"tasks.max": "2", "file": None}), "PATCH",
       f"/connectors/{ODD_Q}/config", body={"tasks.max": "2", "file": None}, answer=INFO),
    _e("delete_connector", (ODD,), "DELETE", f"/connectors/{ODD_Q}"),
    _e("get_connector_status", (ODD,), "GET", f"/connectors/{ODD_Q}/status", answer=STATUS),
    _e("get_connector_topics", (ODD,), "GET", f"/connectors/{ODD_Q}/topics",
       answer={ODD: {"topics": ["t2", "t1"]}}, result=["t2", "t1"]),
    _e("reset_connector_topics", (ODD,), "PUT", f"/connectors/{ODD_Q}/topics/reset"),
    _e("pause_connector", (ODD,), "PUT", f"/connectors/{ODD_Q}/pause"),
    _e("resume_connector", (ODD,), "PUT", f"/connectors/{ODD_Q}/resume"),
    _e("stop_connector", (ODD,), "PUT", f"/connectors/{ODD_Q}/stop"),
    _e("restart_connector", (ODD,), "POST", f"/connectors/{ODD_Q}/restart",
       [("includeTasks", "false"), ("onlyFailed", "false")]),
    _e("restart_connector", (ODD,), "POST", f"/connectors/{ODD_Q}/restart",
       [("includeTasks", "true"), ("onlyFailed", "true")], include_tasks=True, only_failed=True,
       answer=RESTARTING),
    _e("list_tasks", (ODD,), "GET", f"/connectors/{ODD_Q}/tasks",
       answer=[{"id": {"connector": ODD, "task": 0}, "config": {"task.class": "T"}}]),
    _e("get_task_status", (ODD, 3), "GET", f"/connectors/{ODD_Q}/tasks/3/status",
       answer={"id": 3, "state": "FAILED", "worker_id": "w:8083", "trace": "boom"}),
    _e("restart_task", (ODD, 0), "POST", f"/connectors/{ODD_Q}/tasks/0/restart"),
    _e("get_offsets", (ODD,), "GET", f"/connectors/{ODD_Q}/offsets",
       answer={"offsets": [*OFFSETS, {"partition": {"filename": "x"}, "offset": None}]}),
    _e("alter_offsets", (ODD, OFFSETS), "PATCH", f"/connectors/{ODD_Q}/offsets",
       body={"offsets": OFFSETS}, answer={"message": "The offsets have been altered"}),
    _e("reset_offsets", (ODD,), "DELETE", f"/connectors/{ODD_Q}/offsets",
       answer={"message": "The offsets have been reset"}),
    _e("list_connector_plugins", (), "GET", "/connector-plugins", [("connectorsOnly", "true")],
       answer=[{"class": "FileStreamSourceConnector", "type": "source", "version": "4.0.0"}]),
    _e("list_connector_plugins", (), "GET", "/connector-plugins", [("connectorsOnly", "false")],
       connectors_only=False, answer=[]),
    _e("get_plugin_config", ("my/plugin",), "GET", "/connector-plugins/my%2Fplugin/config",
       answer=[{"name": "file", "type": "STRING", "required": False}]),
    _e("validate_connector_config", ("FileStreamSource", CONFIG), "PUT",
       "/connector-plugins/FileStreamSource/config/validate", body=CONFIG, answer=VALIDATION),
    _e("list_loggers", (), "GET", "/admin/loggers",
       answer={"root": {"level": "INFO", "last_modified": None}}),
    _e("get_logger", ("worker.rest",), "GET", "/admin/loggers/worker.rest",
       answer={"level": "DEBUG", "last_modified": 1700000000000}),
    _e("set_logger_level", ("a b", "DEBUG"), "PUT", "/admin/loggers/a%20b",
       body={"level": "DEBUG"}, answer=["a b"]),
    _e("set_logger_level", ("root", "INFO"), "PUT", "/admin/loggers/root", [("scope", "cluster")],
       body={"level": "INFO"}, scope="cluster"),
    _e("get_dynamic_worker_config", (), "GET", "/admin/dynamic-worker-config", answer=OVERRIDES),
    _e("get_dynamic_worker_config", (), "GET", "/admin/dynamic-worker-config", answer={}),
    _e("validate_dynamic_worker_config", (CHANGES,), "POST",
       "/admin/dynamic-worker-config/validate", body=CHANGES, answer=DYNAMIC_VALIDATION),
    _e("validate_dynamic_worker_config", ({f"{SSL}keystore.type": "PKCS12"},), "POST",
       "/admin/dynamic-worker-config/validate", body={f"{SSL}keystore.type": "PKCS12"},
       answer={"error_count": 0, "errors": {}}),
    _e("patch_dynamic_worker_config", (CHANGES,), "PATCH", "/admin/dynamic-worker-config",
       body=CHANGES, answer=OVERRIDES),
    _e("delete_dynamic_worker_config", (f"{SSL}keystore.location",), "DELETE",
       f"/admin/dynamic-worker-config/{SSL}keystore.location"),
    _e("get_worker", (), "GET", "/admin/worker", answer=WORKER_REPORT),
    _e("get_cluster", (), "GET", "/admin/cluster", answer=CLUSTER),
    _e("get_cluster", (), "GET", "/admin/cluster", answer={"leader_url": None, "members": []}),
]


def off_the_loop(connection_class: type) -> Any:
    """``extra_dejson`` that fails when the provider reads it on the event loop (it masks
    secrets with a blocking call): aextra_dejson() where Airflow has it (3.3.2+), else a
    thread. Airflow's own reads (its secrets backends, before 3.3.2) are left alone."""
    original = connection_class.extra_dejson

    def extra(conn: Any) -> Any:
        caller = sys._getframe(1).f_code.co_filename
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return original.fget(conn)
        if "airflow_provider" not in caller:
            return original.fget(conn)
        raise AssertionError("extra_dejson read on the event loop")

    return extra
