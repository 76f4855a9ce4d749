"""The typed REST answers: built from Kafka Connect's JSON, refused when malformed, and
back to the same JSON for XCom."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from airflow_provider.exceptions import MalformedResponseError
from airflow_provider.hooks.results import (
    ConfigValidation,
    ConnectorInfo,
    ConnectorOffset,
    ConnectorOffsets,
    ConnectorState,
    ConnectorStatus,
    Message,
    PluginInfo,
    ServerInfo,
    TaskId,
    TaskInfo,
    TaskStatus,
    WorkerHealth,
)
from airflow_provider.utils.connector_state import TaskState
from tests.unit.airflow_provider.hooks._fakes import INFO, STATUS, VALIDATION

ANSWERS: list[tuple[type[Any], dict[str, Any]]] = [
    (ServerInfo, {"version": "4.0.0", "commit": "abc", "kafka_cluster_id": "kc"}),
    (WorkerHealth, {"status": "healthy", "message": "ready"}),
    (ConnectorInfo, INFO),
    (ConnectorStatus, STATUS),
    (TaskStatus, {"id": 1, "state": "RUNNING", "worker_id": "w:8083"}),
    (TaskInfo, {"id": {"connector": "c", "task": 0}, "config": {"task.class": "T"}}),
    (ConnectorOffsets, {"offsets": [{"partition": {"filename": "f"}, "offset": None}]}),
    (Message, {"message": "The offsets for this connector have been reset successfully"}),
    (ConfigValidation, VALIDATION),
    (PluginInfo, {"class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
                  "type": "source", "version": "4.0.0"}),
    (PluginInfo, {"class": "acme.Source", "type": "source"}),
]


@pytest.mark.parametrize(("cls", "body"), ANSWERS, ids=lambda x: getattr(x, "__name__", ""))
def test_to_dict_is_the_answer_as_sent(cls: type[Any], body: dict[str, Any]) -> None:
    answer = cls.from_json(json.loads(json.dumps(body)))
    assert answer.to_dict() == body
    json.dumps(answer.to_dict())  # XCom-ready
    answer.to_dict().clear()  # a copy: the answer is unchanged
    assert answer.to_dict() == body
    with pytest.raises(dataclasses.FrozenInstanceError):
        answer.raw = {}


def test_connector_status_fields() -> None:
    status = ConnectorStatus.from_json(STATUS)
    assert status == ConnectorStatus(
        "a/b c", ConnectorState("RUNNING", "w:8083"),
        (TaskStatus("FAILED", "w:8083", "boom", id=0),), "source")
    assert status.state == "RUNNING"
    assert status.task_states() == {0: TaskState("FAILED", "boom", "w:8083")}
    assert status.to_dict()["version"] == "4.0.0"  # kept, though not modelled


def test_answers_built_by_hand_render_connects_json() -> None:
    status = ConnectorStatus("c", ConnectorState("PAUSED"), (TaskStatus("PAUSED", "w", id=0),))
    assert status.to_dict() == {"name": "c", "connector": {"state": "PAUSED"},
                                "tasks": [{"id": 0, "state": "PAUSED", "worker_id": "w"}]}
    replaced = dataclasses.replace(ConnectorStatus.from_json(STATUS),
                                   connector=ConnectorState("STOPPED"))
    assert replaced.to_dict()["connector"] == {"state": "STOPPED"}
    offsets = ConnectorOffsets((ConnectorOffset({"kafka_topic": "t", "kafka_partition": 0},
                                                {"kafka_offset": 4}),))
    assert offsets.to_list() == [{"partition": {"kafka_topic": "t", "kafka_partition": 0},
                                  "offset": {"kafka_offset": 4}}]
    assert ConnectorInfo("c", {"a": "b"}, (TaskId("c", 0),)).to_dict() == {
        "name": "c", "config": {"a": "b"}, "tasks": [{"connector": "c", "task": 0}]}


def test_validation_errors_are_listed() -> None:
    validation = ConfigValidation.from_json(VALIDATION)
    assert (validation.name, validation.error_count, validation.groups) == (
        "FileStreamSource", 1, ("Common",))
    assert validation.errors == ["tasks.max: Invalid value x"]


@pytest.mark.parametrize(("cls", "body", "detail"), [
    (ConnectorStatus, [], "the connector status is not a JSON object"),
    (ConnectorStatus, {"name": "c", "connector": {"state": "RUNNING"}},
     "the connector status: 'tasks' is missing or not a JSON array"),
    (ConnectorStatus, {"name": "c", "connector": {"state": "RUNNING"},
                       "tasks": [{"id": "0", "state": "RUNNING"}]},
     "a task's status: 'id' is missing or not an integer"),
    (ConnectorStatus, {"name": "c", "connector": {"state": "RUNNING"},
                       "tasks": [{"id": True, "state": "RUNNING"}]},
     "a task's status: 'id' is missing or not an integer"),
    (ConnectorStatus, {"name": "c", "connector": {"state": "RUNNING", "trace": 1},
                       "tasks": []}, "the connector's status: 'trace' is not a string"),
    (ConnectorInfo, {"name": "c", "config": {"tasks.max": 1}, "tasks": []},
     "the connector info's config has values that are not strings"),
    (ConnectorInfo, {"name": "c", "config": {}, "tasks": [{"connector": "c"}]},
     "a task id: 'task' is missing or not an integer"),
    (ConnectorOffsets, {"offsets": [{"partition": {"f": 1}, "offset": 3}]},
     "an offset entry's offset is not a JSON object"),
    (ConnectorOffsets, {}, "the offsets: 'offsets' is missing or not a JSON array"),
    (Message, None, "the answer is not a JSON object"),
    (ConfigValidation, {"error_count": 0, "groups": [1], "configs": []},
     "the validation result: 'groups' is not a list of strings"),
    (WorkerHealth, {"message": "?"}, "the worker health: 'status' is missing"),
    (PluginInfo, {"type": "source", "version": "1"}, "a connector plugin: 'class' is missing"),
    (PluginInfo, {"class": "a.B", "type": "source", "version": 1},
     "a connector plugin: 'version' is not a string"),
])
def test_malformed_answers_say_what_is_wrong(cls: type[Any], body: Any, detail: str) -> None:
    with pytest.raises(MalformedResponseError) as caught:
        cls.from_json(body)
    assert str(caught.value).startswith(detail) and caught.value.detail == str(caught.value)


def test_plugin_info_names_the_class_field_class() -> None:
    plugin = PluginInfo.from_json({"class": "a.B", "type": "sink", "version": "2"})
    assert (plugin.class_name, plugin.type, plugin.version) == ("a.B", "sink", "2")
    assert PluginInfo("a.C", "converter").to_dict() == {"class": "a.C", "type": "converter"}
