"""Request parsing and response JSON shapes of ``worker.rest.models``."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from worker.herder import models as domain
from worker.herder.base import TargetState, TaskId
from worker.rest.models import (
    ConnectorInfo,
    ConnectorStateInfo,
    CreateConnectorRequest,
    InitialState,
    PluginInfo,
    TaskState,
)


def test_initial_state_maps_running_to_started() -> None:
    assert InitialState.RUNNING.to_target_state() is TargetState.STARTED
    assert InitialState.PAUSED.to_target_state() is TargetState.PAUSED
    assert InitialState.STOPPED.to_target_state() is TargetState.STOPPED


def test_create_request_defaults() -> None:
    request = CreateConnectorRequest.model_validate({"config": {}})
    assert (request.name, request.initial_state, request.target_state()) == (None, None, None)


def test_create_request_coerces_numeric_name_like_jackson() -> None:
    assert CreateConnectorRequest.model_validate({"name": 42, "config": {}}).name == "42"


def test_create_request_requires_config() -> None:
    with pytest.raises(ValidationError) as info:
        CreateConnectorRequest.model_validate({"name": "a", "config": None})
    assert info.value.errors()[0]["loc"] == ("config",)


def test_task_state_omits_empty_trace() -> None:
    assert TaskState.from_domain(domain.TaskState("RUNNING", "w", "", 3)).dump() == {
        "id": 3, "state": "RUNNING", "worker_id": "w"}


def test_connector_state_info_shape() -> None:
    info = domain.ConnectorStateInfo(
        "c", domain.AbstractState("FAILED", "w", "trace!"), [], domain.ConnectorType.SINK)
    assert ConnectorStateInfo.from_domain(info).dump() == {
        "name": "c", "connector": {"state": "FAILED", "worker_id": "w", "trace": "trace!"},
        "tasks": [], "type": "sink"}


def test_connector_info_type_unknown() -> None:
    info = domain.ConnectorInfo("c", {"a": "b"}, [TaskId("c", 0)],
                                domain.ConnectorType.UNKNOWN)
    assert ConnectorInfo.from_domain(info).dump() == {
        "name": "c", "config": {"a": "b"}, "tasks": [{"connector": "c", "task": 0}],
        "type": "unknown"}


@pytest.mark.parametrize(("version", "expected"), [
    ("1.2.3", {"class": "x.Y", "type": "transformation", "version": "1.2.3"}),
    ("undefined", {"class": "x.Y", "type": "transformation"}),
    ("", {"class": "x.Y", "type": "transformation"}),
])
def test_plugin_info_version_omitted_when_undefined(version: str, expected: dict) -> None:
    plugin = domain.PluginInfo("x.Y", "transformation", version, ["Y"])
    assert PluginInfo.from_domain(plugin).dump() == expected
