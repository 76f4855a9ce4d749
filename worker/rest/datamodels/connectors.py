"""Bodies of ``/connectors``: connector info, status, task configs, and the create request.

Named after Kafka Connect's entities (``ConnectorInfo``, ``ConnectorStateInfo``,
``TaskInfo``, ``CreateConnectorRequest``). A task id travels as ``{"connector", "task"}``,
read straight off the herder's ``TaskId``; ``trace`` appears only on a failed instance.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

from pydantic import BeforeValidator, ConfigDict, Field
from pydantic.json_schema import SkipJsonSchema

from worker.herder.base import TargetState
from worker.herder.models import ConnectorType
from worker.rest.datamodels.base import (
    BodyModel,
    ConnectorConfigMap,
    ResponseModel,
    coerce_scalar,
    omit_empty,
    omit_none,
)

# --- requests ------------------------------------------------------------------------


class InitialState(StrEnum):
    """KIP-980 ``initial_state`` of ``POST /connectors`` (parsed case-insensitively)."""

    RUNNING = "RUNNING"
    PAUSED = "PAUSED"
    STOPPED = "STOPPED"

    def to_target_state(self) -> TargetState:
        """RUNNING is called STARTED in the config topic; the others keep their name."""
        if self is InitialState.RUNNING:
            return TargetState.STARTED
        return TargetState(self.value)


def _upper(value: Any) -> Any:
    return value.upper() if isinstance(value, str) else value


#: What Connect accepts as a connector name: not blank, no ISO control characters.
NAME_PATTERN = r"^[^\u0000-\u001f\u007f-\u009f]*[^\s\u0000-\u001f\u007f-\u009f]" \
               r"[^\u0000-\u001f\u007f-\u009f]*$"


def _document_name_required(schema: dict[str, Any]) -> None:
    # The model takes a missing or null name so that the herder rejects it in Connect's
    # words (a 400 naming the key); the document says what a valid request carries.
    schema["required"] = sorted({*schema.get("required", []), "name"})
    schema["properties"]["name"] = {"type": "string", "pattern": NAME_PATTERN,
                                    "title": "Name"}


class CreateConnectorBody(BodyModel):
    """Body of ``POST /connectors``: ``{"name", "config", "initial_state"?}``."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=_document_name_required)

    name: Annotated[str | None, BeforeValidator(coerce_scalar)] = None
    config: ConnectorConfigMap
    initial_state: Annotated[InitialState | None, BeforeValidator(_upper)] = None

    def target_state(self) -> TargetState | None:
        """The requested initial target state, or None for the default (running)."""
        return self.initial_state.to_target_state() if self.initial_state else None


# --- responses -----------------------------------------------------------------------

#: ``trace``: Connect prints it only for an instance that failed.
Trace = Annotated[str | SkipJsonSchema[None], Field(
    exclude_if=omit_empty, description="Stack trace of the failure; only when FAILED")]


class ConnectorTaskIdResponse(ResponseModel):
    """A task id as Connect prints it: ``{"connector", "task"}``."""

    connector: str
    task: int


class ConnectorInfoResponse(ResponseModel):
    """A connector's name, config, task ids and type."""

    name: str
    config: dict[str, str]
    tasks: list[ConnectorTaskIdResponse]
    type: ConnectorType


class TaskInfoResponse(ResponseModel):
    """One entry of ``GET /connectors/{c}/tasks``: a task's id and config."""

    id: ConnectorTaskIdResponse
    config: dict[str, str]


class AutoRestartResponse(ResponseModel):
    """Our extension of a status (``auto.restart.*``): the automatic restarts of this
    connector or task since its count last started again."""

    attempts: int = Field(description="Automatic restarts made")
    max_attempts: int = Field(description="auto.restart.max.attempts; -1: unlimited")
    next_attempt_ms: int | None = Field(
        description="When the next automatic restart is due, in epoch milliseconds; "
                    "null when none is scheduled")
    exhausted: bool = Field(description="FAILED with no automatic restart left")


#: Only for a connector with ``auto.restart.enable=true``, on the part this worker runs.
AutoRestart = Annotated[AutoRestartResponse | SkipJsonSchema[None], Field(
    exclude_if=omit_none,
    description="Our extension: automatic restarts; only with auto.restart.enable=true")]


class ConnectorStateResponse(ResponseModel):
    """The ``connector`` part of a status."""

    state: str
    worker_id: str
    trace: Trace = None
    auto_restart: AutoRestart = None


class TaskStateResponse(ResponseModel):
    """A task's status (``GET /connectors/{c}/tasks/{t}/status``)."""

    id: int
    state: str
    worker_id: str
    trace: Trace = None
    auto_restart: AutoRestart = None


class ConnectorStateInfoResponse(ResponseModel):
    """``GET /connectors/{c}/status``: the connector's and its tasks' states."""

    name: str
    connector: ConnectorStateResponse
    tasks: list[TaskStateResponse]
    type: ConnectorType


class ConnectorExpansionsResponse(ResponseModel):
    """One value of ``GET /connectors?expand=...``: only the requested keys appear."""

    status: ConnectorStateInfoResponse | SkipJsonSchema[None] = Field(
        default=None, exclude_if=omit_none)
    info: ConnectorInfoResponse | SkipJsonSchema[None] = Field(
        default=None, exclude_if=omit_none)
