"""The OpenAPI contract: what ``/openapi.json`` declares against what the server answers.

A :class:`Case` is one request to one operation (``"GET /connectors/{connector}"``) and the
status it must answer. :func:`check_answer` asserts that status, that the document declares
it for that operation, and that the body validates against the declared schema (JSON
Schema 2020-12, which OpenAPI 3.1 schemas are; ``$ref``\\ s resolve into
``components/schemas``) or is empty where no body is declared. :func:`uncovered` lists the
operations without a case and the declared statuses no case produces.

The cases run in two places:

* ``tests/integration/test_openapi_contract.py``: against a real standalone worker over
  HTTP, for everything such a worker answers on demand; it also checks the coverage of
  all cases together;
* ``tests/unit/worker/rest/test_openapi_contract.py``: :data:`FAKE_CASES`, against the
  in-process app over ``FakeHerder`` made to fail (``Case.fault``), for the statuses a
  standalone worker cannot be made to answer: a herder failure (500 on every route), a
  distributed-mode conflict (409 on every write), a worker still starting or unhealthy
  (503/500 on ``/health``), and topic tracking disabled (403, a different worker config).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import httpx
from jsonschema import Draft202012Validator

from worker.config.rest_limits import RestLimits
from worker.rest.body_limits import body_limit

#: Marks a case without a JSON body (a JSON ``null`` body is a valid request too).
NO_BODY: Any = object()

# Faults of FakeHerder (see test_openapi_contract.py): why the real worker can't do these.
HERDER_DOWN = "herder_down"  # every herder call raises StorageError: 500
REBALANCE = "rebalance"  # every herder call raises RebalanceNeededError: 409
STARTING = "starting"  # health() says starting: 503
UNHEALTHY = "unhealthy"  # health() says unhealthy: 500
NO_TRACKING = "no_tracking"  # topic.tracking.enable=false: 403
LEADER = "leader"  # a distributed leader stores the task configs a follower sends: 204
BAD_SIGNATURE = "bad_signature"  # an internal request's signature does not match: 403
NO_SESSION_KEY = "no_session_key"  # no session key read yet (KIP-507): 503
METRICS_DISABLED = "metrics_disabled"  # the app has no metrics registry: /metrics 404
METRICS_BROKEN = "metrics_broken"  # a metrics collector raises: /metrics 500
# Bodies over their route's limit (413) are cheaper to send in process than over HTTP; a body
# slower than rest.request.body.timeout.ms (408) needs an app made with a zero timeout.
TOO_LARGE = "too_large"
SLOW_BODY = "slow_body"


class Client(Protocol):
    """What both ``httpx.Client`` and FastAPI's ``TestClient`` offer."""

    def request(self, method: str, url: str, **kwargs: Any) -> httpx.Response: ...


@dataclass(frozen=True)
class Case:
    """``operation`` as ``"METHOD /path/{template}"``, the concrete ``path`` (with any
    query) and body to send, and the ``status`` the answer must have."""

    operation: str
    path: str
    status: int
    json: Any = NO_BODY
    content: bytes | None = None
    content_type: str | None = None
    fault: str | None = None

    @property
    def method(self) -> str:
        return self.operation.split(" ", 1)[0]

    def send(self, client: Client) -> httpx.Response:
        body = {"content": self.content} if self.json is NO_BODY else {"json": self.json}
        headers = {"content-type": self.content_type} if self.content_type else {}
        return client.request(self.method, self.path, headers=headers, **body)

    def __str__(self) -> str:
        return f"{self.status} {self.method} {self.path}" + (f" [{self.fault}]"
                                                              if self.fault else "")


def case_id(case: Case) -> str:
    """A readable pytest id."""
    return str(case)


def operations(document: Mapping[str, Any]) -> set[str]:
    """Every operation of ``document`` as ``"METHOD /path"``."""
    return {f"{method.upper()} {path}" for path, item in document["paths"].items()
            for method in item}


def declared(document: Mapping[str, Any], operation: str) -> dict[str, Any]:
    """The declared responses of ``operation``, by status (a string, as in OpenAPI)."""
    method, path = operation.split(" ", 1)
    responses: dict[str, Any] = document["paths"][path][method.lower()]["responses"]
    return responses


def check_answer(document: Mapping[str, Any], case: Case, response: httpx.Response) -> None:
    """Assert that ``response`` is what ``case`` expects and what ``document`` declares."""
    assert response.status_code == case.status, f"{case}: {response.text}"
    responses = declared(document, case.operation)
    assert str(case.status) in responses, f"{case}: status not declared ({sorted(responses)})"
    content = responses[str(case.status)].get("content")
    if content is None:
        assert response.content == b"", f"{case}: undeclared body {response.text}"
        return
    if "application/json" not in content:
        # A text answer (/metrics): the media type declared; its body is any string.
        assert response.headers["content-type"] in content, case
        return
    assert response.headers["content-type"] == "application/json", case
    schema = content["application/json"]["schema"]
    # ``#/components/...`` references resolve against the root schema: give it them.
    validator = Draft202012Validator({**schema, "components": document["components"]})
    errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
              for e in validator.iter_errors(response.json())]
    assert not errors, f"{case}: body does not fit the declared schema: {errors}"


def uncovered(document: Mapping[str, Any], cases: Iterable[Case]) -> list[str]:
    """Operations without a case, and declared statuses that no case produces."""
    produced = {(c.operation, str(c.status)) for c in cases}
    by_operation = {operation for operation, _ in produced}
    missing = [f"{op}: no case" for op in sorted(operations(document) - by_operation)]
    missing += [f"{op}: {status} declared, never produced"
                for op in sorted(operations(document) & by_operation)
                for status in sorted(declared(document, op)) if (op, status) not in produced]
    return missing


# --- the cases a standalone worker cannot produce on demand -----------------------------

#: For each operation, a path (and body) it accepts up to its herder call.
SAMPLES: dict[str, str | tuple[str, Any]] = {
    "GET /": "/",
    "GET /health": "/health",
    "GET /connectors": "/connectors",
    "POST /connectors": ("/connectors", {"name": "c",
                                         "config": {"connector.class": "FileStreamSource"}}),
    "GET /connectors/{connector}": "/connectors/c",
    "DELETE /connectors/{connector}": "/connectors/c",
    "GET /connectors/{connector}/config": "/connectors/c/config",
    "PUT /connectors/{connector}/config": ("/connectors/c/config",
                                           {"connector.class": "FileStreamSource"}),
    "PATCH /connectors/{connector}/config": ("/connectors/c/config", {"topic": "t"}),
    "GET /connectors/{connector}/status": "/connectors/c/status",
    "POST /connectors/{connector}/restart": "/connectors/c/restart",
    "PUT /connectors/{connector}/pause": "/connectors/c/pause",
    "PUT /connectors/{connector}/resume": "/connectors/c/resume",
    "PUT /connectors/{connector}/stop": "/connectors/c/stop",
    "GET /connectors/{connector}/tasks": "/connectors/c/tasks",
    "GET /connectors/{connector}/tasks/{task}/status": "/connectors/c/tasks/0/status",
    "POST /connectors/{connector}/tasks/{task}/restart": "/connectors/c/tasks/0/restart",
    "GET /connectors/{connector}/offsets": "/connectors/c/offsets",
    "PATCH /connectors/{connector}/offsets": (
        "/connectors/c/offsets", {"offsets": [{"partition": {"p": 0}, "offset": {"o": 1}}]}),
    "DELETE /connectors/{connector}/offsets": "/connectors/c/offsets",
    "GET /connectors/{connector}/topics": "/connectors/c/topics",
    "PUT /connectors/{connector}/topics/reset": "/connectors/c/topics/reset",
    "POST /connectors/{connector}/tasks": ("/connectors/c/tasks", [{"task.class": "T"}]),
    "GET /connector-plugins": "/connector-plugins",
    "GET /connector-plugins/{plugin}/config": "/connector-plugins/FileStreamSource/config",
    "PUT /connector-plugins/{plugin}/config/validate": (
        "/connector-plugins/FileStreamSource/config/validate",
        {"connector.class": "FileStreamSource"}),
    "GET /admin/loggers": "/admin/loggers",
    "GET /admin/loggers/{logger}": "/admin/loggers/root",
    "PUT /admin/loggers/{logger}": ("/admin/loggers/root", {"level": "INFO"}),
    "GET /admin/dynamic-worker-config": "/admin/dynamic-worker-config",
    "POST /admin/dynamic-worker-config/validate": (
        "/admin/dynamic-worker-config/validate",
        {"listeners.https.ssl.keystore.location": "/etc/tls/ks.p12"}),
    "PATCH /admin/dynamic-worker-config": (
        "/admin/dynamic-worker-config",
        {"listeners.https.ssl.keystore.location": "/etc/tls/ks.p12"}),
    "DELETE /admin/dynamic-worker-config/{name}":
        "/admin/dynamic-worker-config/listeners.https.ssl.keystore.location",
    "GET /admin/worker": "/admin/worker",
    "GET /admin/cluster": "/admin/cluster",
}

#: Operations that make no herder call, so no herder fault reaches them (their cases are
#: listed one by one in FAKE_CASES).
NO_HERDER_CALL = frozenset({"GET /metrics"})

#: Writes a distributed worker answers 409 while a rebalance is under way or when it cannot
#: forward the request (POST /connectors is not here: a standalone worker answers it 409
#: for a duplicate name).
DISTRIBUTED_WRITES = [
    "DELETE /connectors/{connector}",
    "PUT /connectors/{connector}/config",
    "PATCH /connectors/{connector}/config",
    "POST /connectors/{connector}/restart",
    "PUT /connectors/{connector}/pause",
    "PUT /connectors/{connector}/resume",
    "PUT /connectors/{connector}/stop",
    "POST /connectors/{connector}/tasks/{task}/restart",
    "PATCH /connectors/{connector}/offsets",
    "DELETE /connectors/{connector}/offsets",
    "PATCH /admin/dynamic-worker-config",
    "DELETE /admin/dynamic-worker-config/{name}",
    "POST /connectors/{connector}/tasks",
]


#: Operations that take a request body (worker.rest.body_limits bounds them).
BODY_OPERATIONS = [
    "POST /connectors",
    "PUT /connectors/{connector}/config",
    "PATCH /connectors/{connector}/config",
    "PATCH /connectors/{connector}/offsets",
    "POST /connectors/{connector}/tasks",
    "PUT /connector-plugins/{plugin}/config/validate",
    "PUT /admin/loggers/{logger}",
    "POST /admin/dynamic-worker-config/validate",
    "PATCH /admin/dynamic-worker-config",
]


def _oversized(operation: str) -> Case:
    """A body one byte over the route's default limit."""
    method = operation.split(" ", 1)[0]
    sample = SAMPLES[operation]
    path = sample[0] if isinstance(sample, tuple) else sample
    limit, _ = body_limit(RestLimits(), method, path)
    return Case(operation, path, 413, content=b" " * (limit + 1),
                content_type="application/json", fault=TOO_LARGE)


def _faulty(operation: str, status: int, fault: str) -> Case:
    sample = SAMPLES[operation]
    path, body = sample if isinstance(sample, tuple) else (sample, NO_BODY)
    return Case(operation, path, status, json=body, fault=fault)


FAKE_CASES: list[Case] = [
    *(_faulty(operation, 500, HERDER_DOWN) for operation in SAMPLES),
    *(_faulty(operation, 409, REBALANCE) for operation in DISTRIBUTED_WRITES),
    _faulty("GET /health", 503, STARTING),
    _faulty("GET /health", 500, UNHEALTHY),
    _faulty("GET /connectors/{connector}/topics", 403, NO_TRACKING),
    _faulty("PUT /connectors/{connector}/topics/reset", 403, NO_TRACKING),
    _faulty("POST /connectors/{connector}/tasks", 204, LEADER),
    _faulty("POST /connectors/{connector}/tasks", 403, BAD_SIGNATURE),
    _faulty("POST /connectors/{connector}/tasks", 503, NO_SESSION_KEY),
    # rest.metrics.enabled=false is a different worker config; a collector that raises
    # (a bug) cannot be made to happen in a real worker.
    Case("GET /metrics", "/metrics", 404, fault=METRICS_DISABLED),
    Case("GET /metrics", "/metrics", 500, fault=METRICS_BROKEN),
    *(_oversized(operation) for operation in BODY_OPERATIONS),
    *(_faulty(operation, 408, SLOW_BODY) for operation in BODY_OPERATIONS),
]
