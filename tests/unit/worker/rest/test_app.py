"""``GET /``, OpenAPI, and the error mapping shared by every route."""

from __future__ import annotations

import logging

import pytest
from fastapi.testclient import TestClient

from worker.errors import (
    ConflictError,
    ForbiddenError,
    NotLeaderError,
    StorageError,
    WorkerError,
)
from worker.rest.app import TITLE


def test_root_returns_server_info(client: TestClient) -> None:
    response = client.get("/")
    assert response.status_code == 200
    assert response.json() == {"version": "4.0.0", "commit": "0123456789abcdef",
                               "kafka_cluster_id": "cluster-1"}


def test_openapi_is_served_with_title(client: TestClient) -> None:
    response = client.get("/openapi.json")
    assert response.status_code == 200
    spec = response.json()
    assert spec["info"]["title"] == TITLE == "Kafka Connect REST API (connect-plane)"
    assert "/connectors/{connector}/tasks/{task}/status" in spec["paths"]


def test_unknown_route_is_jersey_style_404(client: TestClient) -> None:
    response = client.get("/no/such/thing")
    assert response.status_code == 404
    assert response.json() == {"error_code": 404, "message": "HTTP 404 Not Found"}


def test_wrong_method_is_405(client: TestClient) -> None:
    response = client.delete("/connectors")
    assert response.status_code == 405
    assert response.json() == {"error_code": 405, "message": "HTTP 405 Method Not Allowed"}
    assert "GET" in response.headers["allow"]


@pytest.mark.parametrize(("error", "status"), [
    (ConflictError("Cannot complete request because of a conflicting operation"), 409),
    (ForbiddenError("Topic tracking is disabled."), 403),
    (StorageError("database is locked"), 500),
    (WorkerError("Request timed out"), 500),
])
def test_domain_errors_map_to_their_status(client: TestClient, herder, monkeypatch,
                                           error: WorkerError, status: int) -> None:
    def fail() -> list[str]:
        raise error

    monkeypatch.setattr(herder, "connectors", fail)
    response = client.get("/connectors")
    assert response.status_code == status
    assert response.json() == {"error_code": status, "message": str(error)}


@pytest.mark.parametrize(("query", "message"), [
    ("", "Cannot complete request momentarily due to no known leader URL, likely because a "
         "rebalance was underway."),
    ("?forward=false", "Cannot complete request because of a conflicting operation (e.g. "
                       "worker rebalance)"),
])
def test_request_for_another_worker_that_cannot_be_forwarded_is_409(
        client: TestClient, herder, monkeypatch, query: str, message: str) -> None:
    def not_leader(*_args: object, **_kwargs: object) -> None:
        raise NotLeaderError("not the leader", None if not query else "http://leader:8083")

    monkeypatch.setattr(herder, "pause_connector", not_leader)
    response = client.put(f"/connectors/x/pause{query}")
    assert response.status_code == 409
    assert response.json() == {"error_code": 409, "message": message}


def test_unexpected_exception_is_500_and_logged(client: TestClient, herder, monkeypatch,
                                                caplog: pytest.LogCaptureFixture) -> None:
    def fail() -> list[str]:
        raise RuntimeError("kaboom")

    monkeypatch.setattr(herder, "connectors", fail)
    with caplog.at_level(logging.ERROR, logger="worker.rest"):
        response = client.get("/connectors")
    assert response.status_code == 500
    assert response.json() == {"error_code": 500, "message": "kaboom"}
    [record] = [r for r in caplog.records if r.name == "worker.rest"]
    assert record.exc_info is not None and record.exc_info[0] is RuntimeError


def test_unexpected_exception_without_message_names_its_type(client: TestClient, herder,
                                                             monkeypatch) -> None:
    def fail() -> list[str]:
        raise KeyError()

    monkeypatch.setattr(herder, "connectors", fail)
    response = client.get("/connectors")
    assert response.json() == {"error_code": 500, "message": "KeyError"}


def test_requests_are_logged_at_debug(client: TestClient, herder,
                                      caplog: pytest.LogCaptureFixture) -> None:
    herder.add("a")
    with caplog.at_level(logging.DEBUG, logger="worker.rest"):
        client.get("/connectors/a/status?forward=false")
    messages = [r.getMessage() for r in caplog.records if r.name == "worker.rest"]
    assert any('"GET /connectors/a/status?forward=false" 200' in m for m in messages)
