"""``GET/PATCH/DELETE /connectors/{c}/offsets`` against the FakeHerder.

Status codes and bodies are Apache Kafka Connect's (see Kafka's
``OffsetsApiIntegrationTest.test*InvalidRequestBody``), except for bodies of the wrong
shape: Kafka answers 500 (Jackson's error reaches its mapper's catch-all), we answer 400.
"""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.unit.worker.rest.conftest import FakeHerder
from worker.herder.base import TargetState
from worker.herder.models import ConnectorOffset

URL = "/connectors/src/offsets"
NOT_STOPPED = ("Connectors must be in the STOPPED state before their offsets can be "
               "modified. This can be done for the specified connector by issuing a 'PUT' "
               "request to the '/connectors/src/stop' endpoint")
NO_OFFSETS = "Partitions / offsets need to be provided for an alter offsets request"


@pytest.fixture
def stopped(herder: FakeHerder) -> FakeHerder:
    herder.add("src")
    herder.targets["src"] = TargetState.STOPPED
    herder.offsets["src"] = [ConnectorOffset({"filename": "/in"}, {"position": 42})]
    return herder


def error(response: Any, status: int) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error_code", "message"} and body["error_code"] == status
    message: str = body["message"]
    return message


def test_get_offsets(client: TestClient, stopped: FakeHerder) -> None:
    response = client.get(URL)
    assert response.status_code == 200
    assert response.json() == {"offsets": [{"partition": {"filename": "/in"},
                                            "offset": {"position": 42}}]}


def test_get_offsets_works_in_any_state(client: TestClient, herder: FakeHerder) -> None:
    herder.add("src")
    assert client.get(URL).json() == {"offsets": []}


def test_unknown_connector_is_404(client: TestClient) -> None:
    assert error(client.get("/connectors/nope/offsets"), 404) == "Connector nope not found"
    body = {"offsets": [{"partition": {"a": 1}, "offset": None}]}
    assert error(client.patch("/connectors/nope/offsets", json=body), 404)
    assert error(client.delete("/connectors/nope/offsets"), 404)


def test_patch_alters_and_answers_with_a_message(client: TestClient,
                                                 stopped: FakeHerder) -> None:
    body = {"offsets": [{"partition": {"filename": "/in"}, "offset": {"position": 7}},
                        {"partition": {"filename": "/other"}, "offset": None}]}
    response = client.patch(URL, json=body)
    assert response.status_code == 200
    assert response.json() == {
        "message": "The offsets for this connector have been altered successfully"}
    assert stopped.calls[-1] == ("alter_offsets", "src", [
        ConnectorOffset({"filename": "/in"}, {"position": 7}),
        ConnectorOffset({"filename": "/other"}, None)])
    assert client.get(URL).json()["offsets"] == [{"partition": {"filename": "/in"},
                                                  "offset": {"position": 7}}]


def test_delete_resets_and_is_idempotent(client: TestClient, stopped: FakeHerder) -> None:
    for _ in range(2):
        response = client.delete(URL)
        assert response.status_code == 200
        assert response.json()["message"].startswith(
            "The Connect framework-managed offsets for this connector have been reset "
            "successfully.")
    assert client.get(URL).json() == {"offsets": []}


@pytest.mark.parametrize("state", [TargetState.STARTED, TargetState.PAUSED])
def test_writes_refused_unless_stopped(client: TestClient, stopped: FakeHerder,
                                       state: TargetState) -> None:
    stopped.targets["src"] = state
    body = {"offsets": [{"partition": {"filename": "/in"}, "offset": {"position": 1}}]}
    assert error(client.patch(URL, json=body), 400) == NOT_STOPPED
    assert error(client.delete(URL), 400) == NOT_STOPPED
    assert client.get(URL).json()["offsets"][0]["offset"] == {"position": 42}


@pytest.mark.parametrize("body", [{}, {"offsets": []}, {"offsets": None}])
def test_no_offsets_is_400(client: TestClient, stopped: FakeHerder, body: Any) -> None:
    assert error(client.patch(URL, json=body), 400) == NO_OFFSETS


def test_no_offsets_is_400_before_the_connector_is_looked_up(client: TestClient) -> None:
    assert error(client.patch("/connectors/nope/offsets", json={"offsets": []}), 400) == \
        NO_OFFSETS


@pytest.mark.parametrize(("body", "fragment"), [
    ([], "Input should be a valid dictionary"),
    ({"key": []}, "key: Extra inputs are not permitted"),
    ({"offsets": {}}, "offsets: Input should be a valid list"),
    ({"offsets": [123]}, "offsets.0: Input should be a valid dictionary"),
    ({"offsets": [{"key": "val"}]}, "offsets.0.key: Extra inputs are not permitted"),
    ({"offsets": [{"partition": []}]}, "offsets.0.partition: Input should be a valid "
                                       "dictionary"),
])
def test_bodies_of_the_wrong_shape_are_400(client: TestClient,
                                                             stopped: FakeHerder, body: Any,
                                                             fragment: str) -> None:
    message = error(client.patch(URL, json=body), 400)
    assert message.startswith("Cannot deserialize request body")
    assert fragment in message
    assert stopped.offsets["src"][0].offset == {"position": 42}


def test_bad_source_offsets_are_400_naming_the_field(client: TestClient,
                                                     stopped: FakeHerder) -> None:
    body = {"offsets": [{"partition": {"filename": "/in"}, "offset": {"position": [1]}}]}
    assert "field position contains ARRAY" in error(client.patch(URL, json=body), 400)
    body = {"offsets": [{"partition": None, "offset": {"position": 1}}]}
    assert "partition for a source connector offset cannot be null" in error(
        client.patch(URL, json=body), 400)
    assert stopped.offsets["src"][0].offset == {"position": 42}


def test_bad_sink_offsets_are_400_naming_the_field(client: TestClient,
                                                   herder: FakeHerder) -> None:
    herder.add("snk", **{"connector.class": "FileStreamSink"})
    herder.targets["snk"] = TargetState.STOPPED
    body = {"offsets": [{"partition": {"kafka_topic": "t", "kafka_partition": "x"},
                         "offset": None}]}
    assert "Partition values for sink connectors need to be integers" in error(
        client.patch("/connectors/snk/offsets", json=body), 400)


def test_patch_without_json_content_type_is_415(client: TestClient,
                                                stopped: FakeHerder) -> None:
    response = client.patch(URL, content=b"offsets", headers={"content-type": "text/plain"})
    assert error(response, 415)
