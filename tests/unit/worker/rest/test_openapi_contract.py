"""The OpenAPI contract over the in-process app, for what a standalone worker cannot do.

``FAKE_CASES`` (``openapi_contract.py``) make ``FakeHerder`` fail the way a real herder
can, but not on demand: a failing store (500 on every route), a rebalance in distributed
mode (409 on every write), a worker starting or stuck (503/500 on ``/health``), topic
tracking disabled (403). Everything else runs against a real worker in
``tests/integration/test_openapi_contract.py``, which also checks that all cases together
cover every operation and every declared status.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from prometheus_client.registry import Collector, CollectorRegistry

from tests.unit.worker.rest.conftest import FakeHerder
from tests.unit.worker.rest.openapi_contract import (
    BAD_SIGNATURE,
    BODY_OPERATIONS,
    FAKE_CASES,
    HERDER_DOWN,
    LEADER,
    METRICS_BROKEN,
    METRICS_DISABLED,
    NO_HERDER_CALL,
    NO_SESSION_KEY,
    NO_TRACKING,
    REBALANCE,
    SAMPLES,
    SLOW_BODY,
    STARTING,
    TOO_LARGE,
    UNHEALTHY,
    Case,
    case_id,
    check_answer,
    declared,
    operations,
)
from worker.config.rest_limits import RestLimits
from worker.errors import RebalanceNeededError, StorageError
from worker.herder.base import Herder
from worker.herder.models import HealthStatus
from worker.herder.request_signing import InvalidSignatureError, SessionKeyUnavailableError
from worker.rest.app import create_app
from worker.rest.routes.metrics import METRICS_REGISTRY

#: Every call REST can make on a herder.
HERDER_API = sorted(name for name, member in vars(Herder).items()
                    if callable(member) and not name.startswith("_")
                    and name not in ("start", "stop"))


def _every_call_raises(error: Callable[[], Exception]) -> Callable[[FakeHerder], None]:
    def apply(herder: FakeHerder) -> None:
        def fail(*_args: object, **_kwargs: object) -> Any:
            raise error()
        for name in HERDER_API:
            setattr(herder, name, fail)
    return apply


def _health(status: HealthStatus) -> Callable[[FakeHerder], None]:
    def apply(herder: FakeHerder) -> None:
        herder.health_status = status
    return apply


def _no_tracking(herder: FakeHerder) -> None:
    herder.tracking_enabled = False


def _leader(herder: FakeHerder) -> None:
    def store(name: str, configs: list[dict[str, str]]) -> None:
        herder.calls.append(("put_task_configs", name, configs))
    herder.put_task_configs = store  # type: ignore[method-assign]


FAULTS: dict[str, Callable[[FakeHerder], None]] = {
    HERDER_DOWN: _every_call_raises(lambda: StorageError("database is locked")),
    REBALANCE: _every_call_raises(RebalanceNeededError),
    STARTING: _health(HealthStatus("starting", "Worker is starting")),
    UNHEALTHY: _health(HealthStatus("unhealthy", "Worker's herder thread is stuck")),
    NO_TRACKING: _no_tracking,
    LEADER: _leader,
    BAD_SIGNATURE: _every_call_raises(InvalidSignatureError),
    NO_SESSION_KEY: _every_call_raises(SessionKeyUnavailableError),
    TOO_LARGE: lambda herder: None,  # the default limits, a body over them
}


class _BrokenCollector(Collector):
    def collect(self) -> Any:
        raise RuntimeError("collector bug")


def _broken_metrics(app: FastAPI) -> None:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_BrokenCollector())
    setattr(app.state, METRICS_REGISTRY, registry)


#: Faults of the app rather than the herder (/metrics reads its registry from app.state).
APP_FAULTS: dict[str, Callable[[FastAPI], None]] = {
    METRICS_DISABLED: lambda app: None,  # create_app without a registry: disabled
    METRICS_BROKEN: _broken_metrics,
}


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    return create_app(FakeHerder()).openapi()


@pytest.mark.parametrize("case", FAKE_CASES, ids=case_id)
def test_answer_matches_the_document(client: TestClient, herder: FakeHerder,
                                     document: dict[str, Any], case: Case) -> None:
    assert case.fault is not None
    if case.fault == SLOW_BODY:
        # The body's deadline passes before its first byte is read.
        with TestClient(create_app(herder, limits=RestLimits(body_timeout_s=0))) as slow:
            check_answer(document, case, case.send(slow))
        return
    if case.fault in APP_FAULTS:
        APP_FAULTS[case.fault](client.app)  # type: ignore[arg-type]
    else:
        FAULTS[case.fault](herder)
    check_answer(document, case, case.send(client))


def test_every_operation_has_a_sample_request(document: dict[str, Any]) -> None:
    assert set(SAMPLES) | NO_HERDER_CALL == operations(document)


def test_every_operation_with_a_body_is_bounded(document: dict[str, Any]) -> None:
    with_body = {f"{method.upper()} {path}" for path, item in document["paths"].items()
                 for method, operation in item.items() if "requestBody" in operation}
    assert with_body == set(BODY_OPERATIONS)


def test_document_has_no_validation_errors(document: dict[str, Any]) -> None:
    # The app answers 400/404/415 for invalid requests (worker.rest.errors), never 422.
    assert "422" not in json.dumps(document)
    assert not {"HTTPValidationError", "ValidationError"} & set(
        document["components"]["schemas"])


def test_every_error_status_has_the_error_body(document: dict[str, Any]) -> None:
    error_ref = {"$ref": "#/components/schemas/ErrorResponse"}
    for operation in operations(document):
        for status, response in declared(document, operation).items():
            if int(status) < 400 or (operation, status) == ("GET /health", "503"):
                continue  # KIP-1017: a starting worker answers its status, not an error
            schema = response["content"]["application/json"]["schema"]
            assert schema == error_ref or error_ref in schema.get("anyOf", []), (
                operation, status, schema)
