"""Request parsing and response JSON shapes of ``worker.rest.datamodels``."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from worker.herder import models as domain
from worker.herder.base import TargetState, TaskId
from worker.rest.datamodels.connector_plugins import PluginInfoResponse
from worker.rest.datamodels.connectors import (
    ConnectorInfoResponse,
    ConnectorStateInfoResponse,
    CreateConnectorBody,
    InitialState,
    TaskStateResponse,
)


def test_initial_state_maps_running_to_started() -> None:
    assert InitialState.RUNNING.to_target_state() is TargetState.STARTED
    assert InitialState.PAUSED.to_target_state() is TargetState.PAUSED
    assert InitialState.STOPPED.to_target_state() is TargetState.STOPPED


def test_create_request_defaults() -> None:
    request = CreateConnectorBody.model_validate({"config": {}})
    assert (request.name, request.initial_state, request.target_state()) == (None, None, None)


def test_create_request_coerces_numeric_name_like_jackson() -> None:
    assert CreateConnectorBody.model_validate({"name": 42, "config": {}}).name == "42"


def test_create_request_requires_config() -> None:
    with pytest.raises(ValidationError) as info:
        CreateConnectorBody.model_validate({"name": "a", "config": None})
    assert info.value.errors()[0]["loc"] == ("config",)


def test_task_state_omits_empty_trace() -> None:
    state = domain.TaskState("RUNNING", "w", "", 3)
    assert TaskStateResponse.model_validate(state).model_dump(mode="json") == {
        "id": 3, "state": "RUNNING", "worker_id": "w"}


def test_connector_state_info_shape() -> None:
    info = domain.ConnectorStateInfo(
        "c", domain.AbstractState("FAILED", "w", "trace!"), [], domain.ConnectorType.SINK)
    assert ConnectorStateInfoResponse.model_validate(info).model_dump(mode="json") == {
        "name": "c", "connector": {"state": "FAILED", "worker_id": "w", "trace": "trace!"},
        "tasks": [], "type": "sink"}


def test_connector_info_type_unknown() -> None:
    info = domain.ConnectorInfo("c", {"a": "b"}, [TaskId("c", 0)],
                                domain.ConnectorType.UNKNOWN)
    assert ConnectorInfoResponse.model_validate(info).model_dump(mode="json") == {
        "name": "c", "config": {"a": "b"}, "tasks": [{"connector": "c", "task": 0}],
        "type": "unknown"}


@pytest.mark.parametrize(("version", "expected"), [
    ("1.2.3", {"class": "x.Y", "type": "transformation", "version": "1.2.3"}),
    ("undefined", {"class": "x.Y", "type": "transformation"}),
    ("", {"class": "x.Y", "type": "transformation"}),
])
def test_plugin_info_version_omitted_when_undefined(version: str, expected: dict) -> None:
    plugin = domain.PluginInfo("x.Y", "transformation", version, ["Y"])
    assert PluginInfoResponse.model_validate(plugin).model_dump(mode="json") == expected
