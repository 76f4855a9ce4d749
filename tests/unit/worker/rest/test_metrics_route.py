"""``GET /metrics``: served from the app's registry, 404 when disabled or on an admin
listener (the listener roles of ``worker.rest.app``)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import CollectorRegistry
from starlette.types import Receive, Scope, Send

from tests.unit.worker.rest.conftest import FakeHerder
from worker.rest.app import LISTENER_ROLE_KEY, ListenerRole, create_app
from worker.rest.routes.metrics import CONTENT_TYPE, DISABLED
from worker.runtime.metrics.collector import ConnectMetricsCollector
from worker.runtime.metrics.worker import WorkerMetrics


def registry() -> CollectorRegistry:
    worker = SimpleNamespace(tasks={}, connectors={}, metrics=WorkerMetrics())
    result = CollectorRegistry(auto_describe=False)
    result.register(ConnectMetricsCollector(worker, lambda: 0.0))  # type: ignore[arg-type]
    return result


class OnListener:
    """The app as the REST server runs it on a listener of ``role``."""

    def __init__(self, app: FastAPI, role: ListenerRole) -> None:
        self.app, self.role = app, role

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app({**scope, LISTENER_ROLE_KEY: self.role}, receive, send)


def get(app: Any) -> Any:
    return TestClient(app).get("/metrics")


def test_served_in_prometheus_text_format() -> None:
    response = get(create_app(FakeHerder(), metrics_registry=registry()))
    assert response.status_code == 200
    assert response.headers["content-type"] == CONTENT_TYPE
    names = {f.name for f in text_string_to_metric_families(response.text)}
    assert "kafka_connect_connect_worker_metrics_connector_count" in names


def test_disabled_is_404_with_the_reason() -> None:
    response = get(create_app(FakeHerder()))
    assert response.status_code == 404
    assert response.json() == {"error_code": 404, "message": DISABLED}


@pytest.mark.parametrize(("role", "status"), [
    (ListenerRole.ALL, 200), (ListenerRole.API, 200), (ListenerRole.ADMIN, 404)])
def test_not_on_an_admin_listener(role: ListenerRole, status: int) -> None:
    app = create_app(FakeHerder(), metrics_registry=registry())
    assert get(OnListener(app, role)).status_code == status
