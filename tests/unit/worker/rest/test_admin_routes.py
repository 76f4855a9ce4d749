"""Active topics (KIP-558), ``/admin/loggers`` (KIP-495/976), ``/health`` (KIP-1017) and
the OpenAPI document, over the FakeHerder: Kafka Connect 4.x codes and bodies."""

from __future__ import annotations

import logging
import re
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.support.connect_api import HTTP_METHODS, KAFKA_ENDPOINTS, served_endpoints
from tests.unit.worker.rest.conftest import FakeHerder
from worker.herder.models import HealthStatus, LoggerLevel, LoggerScope

# --- KIP-558 active topics ----------------------------------------------------------------


def test_active_topics_shape(client: TestClient, herder: FakeHerder) -> None:
    herder.add("src")
    herder.topics["src"] = ["orders", "audit"]

    response = client.get("/connectors/src/topics")

    assert response.status_code == 200
    assert response.json() == {"src": {"topics": ["audit", "orders"]}}


def test_unknown_connector_has_empty_topics_not_404(client: TestClient) -> None:
    # Kafka's AbstractHerder reads the status store without checking the connector, and
    # its own integration tests rely on an empty list for a deleted connector.
    response = client.get("/connectors/gone/topics")

    assert response.status_code == 200
    assert response.json() == {"gone": {"topics": []}}


def test_connector_name_is_decoded_in_the_key(client: TestClient) -> None:
    response = client.get("/connectors/my%20conn/topics")

    assert response.json() == {"my conn": {"topics": []}}


def test_reset_is_202_without_body(client: TestClient, herder: FakeHerder) -> None:
    herder.add("src")
    herder.topics["src"] = ["orders"]

    response = client.put("/connectors/src/topics/reset")

    assert response.status_code == 202
    assert response.content == b""
    assert ("reset_topics", "src") in herder.calls
    assert client.get("/connectors/src/topics").json() == {"src": {"topics": []}}


@pytest.mark.parametrize(("method", "url"), [("get", "/connectors/src/topics"),
                                             ("put", "/connectors/src/topics/reset")])
def test_tracking_disabled_is_403(client: TestClient, herder: FakeHerder, method: str,
                                  url: str) -> None:
    herder.tracking_enabled = False

    response = client.request(method.upper(), url)

    assert response.status_code == 403
    assert response.json() == {"error_code": 403, "message": "Topic tracking is disabled."}


def test_reset_disabled_is_403_on_reset_only(client: TestClient, herder: FakeHerder) -> None:
    herder.reset_allowed = False

    assert client.get("/connectors/src/topics").status_code == 200
    response = client.put("/connectors/src/topics/reset")
    assert response.status_code == 403
    assert response.json() == {"error_code": 403,
                               "message": "Topic tracking reset is disabled."}


def test_topics_reset_wrong_verb_is_405(client: TestClient) -> None:
    assert client.post("/connectors/src/topics/reset").status_code == 405


# --- /admin/loggers -----------------------------------------------------------------------


def test_list_loggers(client: TestClient, herder: FakeHerder) -> None:
    herder.levels["worker.rest"] = LoggerLevel("DEBUG", 1_700_000_000_000)

    response = client.get("/admin/loggers")

    assert response.status_code == 200
    assert response.json() == {
        "root": {"level": "INFO", "last_modified": None},
        "worker.rest": {"level": "DEBUG", "last_modified": 1_700_000_000_000},
    }


def test_list_loggers_with_trailing_slash(client: TestClient) -> None:
    # What Kafka's documentation (and many scripts) use: curl .../admin/loggers/
    assert client.get("/admin/loggers/").status_code == 200


def test_get_logger(client: TestClient) -> None:
    response = client.get("/admin/loggers/root")

    assert response.status_code == 200
    assert response.json() == {"level": "INFO", "last_modified": None}


def test_get_unknown_logger_is_404(client: TestClient) -> None:
    response = client.get("/admin/loggers/no.such.logger")

    assert response.status_code == 404
    assert response.json() == {"error_code": 404, "message": "Logger no.such.logger not found."}


def test_put_worker_scope_is_200_with_changed_loggers(client: TestClient,
                                                      herder: FakeHerder) -> None:
    response = client.put("/admin/loggers/worker.runtime", json={"level": "DEBUG"})

    assert response.status_code == 200
    assert response.json() == ["worker.runtime"]
    assert herder.calls[-1] == ("set_logger_level", "worker.runtime", "DEBUG",
                                LoggerScope.WORKER)


@pytest.mark.parametrize("scope", ["cluster", "CLUSTER", "Cluster"])
def test_put_cluster_scope_is_204(client: TestClient, herder: FakeHerder, scope: str
                                  ) -> None:
    response = client.put(f"/admin/loggers/a.b?scope={scope}", json={"level": "warn"})

    assert response.status_code == 204
    assert response.content == b""
    assert herder.calls[-1] == ("set_logger_level", "a.b", "warn", LoggerScope.CLUSTER)


@pytest.mark.parametrize("scope", ["WORKER", "galaxy", ""])
def test_other_scopes_fall_back_to_worker(client: TestClient, herder: FakeHerder,
                                          caplog: pytest.LogCaptureFixture,
                                          scope: str) -> None:
    with caplog.at_level(logging.WARNING, logger="worker.rest"):
        response = client.put(f"/admin/loggers/a?scope={scope}", json={"level": "INFO"})

    assert response.status_code == 200
    assert herder.calls[-1][-1] is LoggerScope.WORKER
    invalid = scope.lower() != "worker"
    assert ("Received invalid scope" in caplog.text) is invalid


@pytest.mark.parametrize("body", [{}, {"level": None}, {"lvl": "DEBUG"}])
def test_put_without_level_is_400(client: TestClient, body: dict[str, Any]) -> None:
    response = client.put("/admin/loggers/a", json=body)

    assert response.status_code == 400
    assert response.json() == {"error_code": 400, "message": "Desired 'level' parameter "
                                                             "was not specified in request."}


@pytest.mark.parametrize(("level", "shown"), [("LOUD", "LOUD"), (5, "5"), (True, "true")])
def test_put_invalid_level_is_kafkas_404(client: TestClient, level: Any, shown: str) -> None:
    response = client.put("/admin/loggers/a", json={"level": level})

    assert response.status_code == 404
    assert response.json() == {"error_code": 404, "message": f"invalid log level '{shown}'."}


def test_put_ignores_other_keys(client: TestClient) -> None:
    response = client.put("/admin/loggers/a", json={"level": "ERROR", "comment": "why"})

    assert response.status_code == 200


@pytest.mark.parametrize("body", [b'["DEBUG"]', b'{"level": ', b'{"level": {"x": 1}}'])
def test_put_malformed_body_is_400(client: TestClient, body: bytes) -> None:
    # Kafka answers 500 (Jackson's error reaches the mapper's catch-all); the client is at fault.
    response = client.put("/admin/loggers/a", content=body,
                          headers={"content-type": "application/json"})

    assert response.status_code == 400
    assert response.json()["message"].startswith("Cannot deserialize request body")


# --- /health ------------------------------------------------------------------------------


def test_health_healthy(client: TestClient) -> None:
    response = client.get("/health")

    assert response.status_code == 200
    assert response.json() == {"status": "healthy", "message": "Worker has completed startup "
                                                               "and is ready to handle requests."}


@pytest.mark.parametrize(("status", "code"), [("starting", 503), ("unhealthy", 500)])
def test_health_not_healthy(client: TestClient, herder: FakeHerder, status: str,
                            code: int) -> None:
    herder.health_status = HealthStatus(status, "Something.", "stack frames")

    response = client.get("/health")

    assert response.status_code == code
    # Kafka's WorkerStatus has exactly these two fields; thread details stay in the log.
    assert response.json() == {"status": status, "message": "Something."}


# --- OpenAPI ------------------------------------------------------------------------------

@pytest.fixture
def spec(client: TestClient) -> dict[str, Any]:
    response = client.get("/openapi.json")
    assert response.status_code == 200
    body: dict[str, Any] = response.json()
    return body


def test_openapi_lists_every_kafka_connect_endpoint(spec: dict[str, Any]) -> None:
    assert sorted(KAFKA_ENDPOINTS - served_endpoints(spec)) == []


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        found = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
        return found + [ref for value in node.values() for ref in _refs(value)]
    if isinstance(node, list):
        return [ref for value in node for ref in _refs(value)]
    return []


def test_openapi_document_is_well_formed(spec: dict[str, Any]) -> None:
    assert re.fullmatch(r"3\.\d+\.\d+", spec["openapi"])
    assert spec["info"]["title"] and spec["info"]["version"]
    operation_ids = []
    for path, item in spec["paths"].items():
        assert path.startswith("/")
        templated = set(re.findall(r"\{([^}]+)\}", path))
        for method, operation in item.items():
            assert method in HTTP_METHODS, (path, method)
            assert operation["responses"], (path, method)
            declared = {p["name"] for p in operation.get("parameters", [])
                        if p["in"] == "path"}
            assert declared == templated, (path, method)
            operation_ids.append(operation["operationId"])
    assert len(operation_ids) == len(set(operation_ids))
    schemas = spec.get("components", {}).get("schemas", {})
    for ref in _refs(spec):
        assert ref.startswith("#/components/schemas/"), ref
        assert ref.removeprefix("#/components/schemas/") in schemas, ref


def test_openapi_documents_the_admin_status_codes(spec: dict[str, Any]) -> None:
    put_logger = spec["paths"]["/admin/loggers/{logger}"]["put"]["responses"]
    assert {"200", "204", "400", "404"} <= set(put_logger)
    assert "403" in spec["paths"]["/connectors/{connector}/topics"]["get"]["responses"]
    reset = spec["paths"]["/connectors/{connector}/topics/reset"]["put"]["responses"]
    assert {"202", "403"} <= set(reset)
    assert {"200", "500", "503"} <= set(spec["paths"]["/health"]["get"]["responses"])
