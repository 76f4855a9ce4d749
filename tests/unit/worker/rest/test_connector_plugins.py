"""``/connector-plugins``: listing, config definitions and config validation."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

FILE_SINK = "org.apache.kafka.connect.file.FileStreamSinkConnector"
NAME_DEFINITION = {"name": "name", "type": "STRING", "required": True, "default_value": None,
                   "importance": "HIGH", "documentation": "Connector name", "group": "Common",
                   "width": "MEDIUM", "display_name": "Connector name", "dependents": [],
                   "order": 1}


def test_list_plugins_defaults_to_connectors_only(client: TestClient, herder) -> None:
    response = client.get("/connector-plugins")
    assert response.status_code == 200
    assert response.json() == [
        {"class": FILE_SINK, "type": "sink", "version": "4.0.0"},
        {"class": "org.apache.kafka.connect.file.FileStreamSourceConnector", "type": "source",
         "version": "4.0.0"}]
    assert herder.calls == [("plugins", True)]


def test_list_all_plugins_omits_undefined_version(client: TestClient, herder) -> None:
    response = client.get("/connector-plugins?connectorsOnly=false")
    assert response.status_code == 200
    assert response.json()[-1] == {"class": "org.apache.kafka.connect.json.JsonConverter",
                                   "type": "converter"}
    assert herder.calls == [("plugins", False)]


def test_plugin_config_definition(client: TestClient) -> None:
    response = client.get(f"/connector-plugins/{FILE_SINK}/config")
    assert response.status_code == 200
    assert response.json() == [NAME_DEFINITION]


def test_unknown_plugin_config_is_404(client: TestClient) -> None:
    response = client.get("/connector-plugins/Nope/config")
    assert response.status_code == 404
    assert response.json() == {"error_code": 404, "message": "Unknown plugin Nope."}


def test_validate_returns_config_infos(client: TestClient, herder) -> None:
    response = client.put("/connector-plugins/FileStreamSink/config/validate",
                          json={"connector.class": FILE_SINK, "tasks.max": 1})
    assert response.status_code == 200
    assert response.json() == {
        "name": FILE_SINK, "error_count": 1, "groups": ["Common"],
        "configs": [{"definition": NAME_DEFINITION,
                     "value": {"name": "name", "value": None, "recommended_values": [],
                               "errors": ['Missing required configuration "name" which has '
                                          "no default value."],
                               "visible": True}}]}
    assert herder.calls == [("validate", {"connector.class": FILE_SINK, "tasks.max": "1"})]


@pytest.mark.parametrize(("path_name", "included"), [
    ("FileStreamSink", FILE_SINK),
    ("FileStreamSinkConnector", FILE_SINK),
    (FILE_SINK, FILE_SINK),
    ("FileStreamSink", "FileStreamSink"),
])
def test_validate_accepts_matching_plugin_names(client: TestClient, path_name: str,
                                                included: str) -> None:
    response = client.put(f"/connector-plugins/{path_name}/config/validate",
                          json={"connector.class": included, "name": "x"})
    assert response.status_code == 200
    assert response.json()["error_count"] == 0


def test_validate_rejects_mismatched_connector_class(client: TestClient, herder) -> None:
    response = client.put("/connector-plugins/FileStreamSource/config/validate",
                          json={"connector.class": FILE_SINK})
    assert response.status_code == 400
    assert response.json() == {
        "error_code": 400,
        "message": f"Included connector type {FILE_SINK} does not match request type "
                   "FileStreamSource"}
    assert herder.calls == []


def test_validate_without_connector_class_is_400(client: TestClient) -> None:
    response = client.put("/connector-plugins/FileStreamSink/config/validate",
                          json={"topics": "t"})
    assert response.status_code == 400
    assert response.json() == {"error_code": 400,
                               "message": "Connector config {topics} contains no connector "
                                          "type"}


def test_validate_body_values_must_be_strings(client: TestClient, herder) -> None:
    response = client.put("/connector-plugins/FileStreamSink/config/validate",
                          json={"connector.class": FILE_SINK, "topics": {"a": 1}})
    assert response.status_code == 400
    assert response.json() == {"error_code": 400,
                               "message": "Cannot deserialize request body: topics: Input "
                                          "should be a valid string"}
    assert herder.calls == []
