"""``GET /admin/cluster``'s ``held`` (our extension): the work the leader holds for workers
that left, as the body shows it, and its place in the OpenAPI document."""

from __future__ import annotations

from datetime import UTC, datetime

from worker.herder.models import ClusterInfo, ClusterMemberInfo, HeldWorkInfo
from worker.rest.datamodels.admin import ClusterResponse
from worker.storage.base import TaskId


def test_held_work_in_the_body() -> None:
    info = ClusterInfo(
        "http://127.0.0.1:8083", [ClusterMemberInfo("127.0.0.1:8083", "http://127.0.0.1:8083")],
        [HeldWorkInfo("127.0.0.1:8084", "http://127.0.0.1:8084", ["sink"],
                      [TaskId("sink", 0), TaskId("src", 1)],
                      datetime(2026, 1, 1, 0, 5, 10, 250000, tzinfo=UTC))])
    assert ClusterResponse.model_validate(info).model_dump(mode="json") == {
        "leader_url": "http://127.0.0.1:8083",
        "members": [{"worker_id": "127.0.0.1:8083", "url": "http://127.0.0.1:8083"}],
        "held": [{"worker_id": "127.0.0.1:8084", "url": "http://127.0.0.1:8084",
                  "connectors": ["sink"],
                  "tasks": [{"connector": "sink", "task": 0}, {"connector": "src", "task": 1}],
                  "until": "2026-01-01T00:05:10.250000Z"}]}


def test_nothing_held_is_an_empty_list() -> None:
    body = ClusterResponse.model_validate(ClusterInfo(None, [])).model_dump(mode="json")
    assert body == {"leader_url": None, "members": [], "held": []}


def test_the_schema_documents_held_work() -> None:
    schema = ClusterResponse.model_json_schema(mode="serialization")
    assert "held" in schema["required"]
    held = schema["$defs"]["HeldWorkResponse"]
    assert set(held["properties"]) == {"worker_id", "url", "connectors", "tasks", "until"}
    assert "ISO-8601" in held["properties"]["until"]["description"]
