"""Request and response bodies of the REST API, named after Kafka Connect's ``entities``.

Response models reproduce the JSON that Apache Kafka Connect's Jackson mapping produces:
field names (``worker_id``, ``error_count``, ``class``, ``order`` ...), ``trace`` left out
when empty (``@JsonInclude(NON_EMPTY)``), a plugin ``version`` left out when it is
``"undefined"``. Each has a ``from_domain`` converter from the herder's dataclasses.

Request models forbid unknown fields, as Jackson's default ``FAIL_ON_UNKNOWN_PROPERTIES``
does, and accept JSON numbers and booleans where Connect expects strings, as Jackson
coerces them (``"tasks.max": 1`` is a common, valid request).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from worker.herder import models as domain
from worker.herder.base import TargetState

#: What Connect prints for a plugin without a version (``PluginDesc.UNDEFINED_VERSION``).
UNDEFINED_VERSION = "undefined"


def _coerce_scalar(value: Any) -> Any:
    """Turn a JSON number or boolean into the string Jackson would have made of it."""
    if isinstance(value, bool):  # before int: bool is an int subclass
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return value


#: A config value: a JSON string, or a number/boolean coerced to one.
ConfigValue = Annotated[str, BeforeValidator(_coerce_scalar)]
#: A connector config as sent by clients.
ConfigMap = dict[str, ConfigValue]
#: A ``PATCH .../config`` body: a null value removes the key.
ConfigPatch = dict[str, ConfigValue | None]


class _Response(BaseModel):
    """Base of response models: serialize by the JSON names Connect uses."""

    model_config = ConfigDict(serialize_by_alias=True, validate_by_name=True, frozen=True)

    def dump(self) -> dict[str, Any]:
        """The JSON-ready dict of this entity, exactly as it goes on the wire."""
        return self.model_dump(mode="json")


def _empty(value: str | None) -> bool:
    return not value


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


class CreateConnectorRequest(BaseModel):
    """Body of ``POST /connectors``: ``{"name", "config", "initial_state"?}``."""

    model_config = ConfigDict(extra="forbid")

    name: Annotated[str | None, BeforeValidator(_coerce_scalar)] = None
    config: ConfigMap
    initial_state: Annotated[InitialState | None, BeforeValidator(_upper)] = None

    def target_state(self) -> TargetState | None:
        """The requested initial target state, or None for the default (running)."""
        return self.initial_state.to_target_state() if self.initial_state else None


# --- responses -----------------------------------------------------------------------


class ErrorMessage(_Response):
    """Every error response: ``{"error_code", "message"}``."""

    error_code: int
    message: str | None


class ServerInfo(_Response):
    """``GET /``."""

    version: str
    commit: str
    kafka_cluster_id: str | None

    @classmethod
    def from_domain(cls, info: domain.ServerInfo) -> ServerInfo:
        return cls(version=info.version, commit=info.commit,
                   kafka_cluster_id=info.kafka_cluster_id)


class ConnectorTaskId(_Response):
    """A task id as Connect prints it: ``{"connector", "task"}``."""

    connector: str
    task: int


class ConnectorInfo(_Response):
    """A connector's name, config, task ids and type."""

    name: str
    config: dict[str, str]
    tasks: list[ConnectorTaskId]
    type: str

    @classmethod
    def from_domain(cls, info: domain.ConnectorInfo) -> ConnectorInfo:
        return cls(name=info.name, config=dict(info.config),
                   tasks=[ConnectorTaskId(connector=t.connector, task=t.task)
                          for t in info.tasks],
                   type=domain.ConnectorType(info.type).value)


class TaskInfo(_Response):
    """One entry of ``GET /connectors/{c}/tasks``."""

    id: ConnectorTaskId
    config: dict[str, str]

    @classmethod
    def from_domain(cls, info: domain.TaskInfo) -> TaskInfo:
        return cls(id=ConnectorTaskId(connector=info.id.connector, task=info.id.task),
                   config=dict(info.config))


class ConnectorState(_Response):
    """The ``connector`` part of a status; ``trace`` only when there is one."""

    state: str
    worker_id: str
    trace: str | None = Field(default=None, exclude_if=_empty)

    @classmethod
    def from_domain(cls, state: domain.AbstractState) -> ConnectorState:
        return cls(state=state.state, worker_id=state.worker_id, trace=state.trace)


class TaskState(_Response):
    """A task's status (``GET /connectors/{c}/tasks/{t}/status``)."""

    id: int
    state: str
    worker_id: str
    trace: str | None = Field(default=None, exclude_if=_empty)

    @classmethod
    def from_domain(cls, state: domain.TaskState) -> TaskState:
        return cls(id=state.id, state=state.state, worker_id=state.worker_id,
                   trace=state.trace)


class ConnectorStateInfo(_Response):
    """``GET /connectors/{c}/status``."""

    name: str
    connector: ConnectorState
    tasks: list[TaskState]
    type: str

    @classmethod
    def from_domain(cls, info: domain.ConnectorStateInfo) -> ConnectorStateInfo:
        return cls(name=info.name, connector=ConnectorState.from_domain(info.connector),
                   tasks=[TaskState.from_domain(t) for t in info.tasks],
                   type=domain.ConnectorType(info.type).value)


class ConnectorExpansions(_Response):
    """One value of ``GET /connectors?expand=...``: only the requested keys appear."""

    status: ConnectorStateInfo | None = Field(default=None, exclude_if=lambda v: v is None)
    info: ConnectorInfo | None = Field(default=None, exclude_if=lambda v: v is None)


class PluginInfo(_Response):
    """One installed plugin: ``{"class", "type", "version"}``."""

    class_name: str = Field(alias="class")
    type: str
    version: str | None = Field(default=None,
                                exclude_if=lambda v: not v or v == UNDEFINED_VERSION)

    @classmethod
    def from_domain(cls, info: domain.PluginInfo) -> PluginInfo:
        return cls(class_name=info.class_name, type=info.type, version=info.version)


class ConfigKeyInfo(_Response):
    """A config key's definition. Connect serializes ``order_in_group`` as ``order``."""

    name: str
    type: str
    required: bool
    default_value: str | None
    importance: str
    documentation: str | None
    group: str | None
    width: str
    display_name: str
    dependents: list[str]
    order: int

    @classmethod
    def from_domain(cls, key: domain.ConfigKeyInfo) -> ConfigKeyInfo:
        return cls(name=key.name, type=key.type, required=key.required,
                   default_value=key.default_value, importance=key.importance,
                   documentation=key.documentation, group=key.group, width=key.width,
                   display_name=key.display_name, dependents=list(key.dependents),
                   order=key.order_in_group)


class ConfigValueInfo(_Response):
    """A config key's validated value, recommendations and errors."""

    name: str
    value: str | None
    recommended_values: list[str]
    errors: list[str]
    visible: bool

    @classmethod
    def from_domain(cls, value: domain.ConfigValueInfo) -> ConfigValueInfo:
        return cls(name=value.name, value=value.value,
                   recommended_values=list(value.recommended_values),
                   errors=list(value.errors), visible=value.visible)


class ConfigInfo(_Response):
    """A key's definition together with its validated value."""

    definition: ConfigKeyInfo
    value: ConfigValueInfo


class ConfigInfos(_Response):
    """Result of ``PUT /connector-plugins/{p}/config/validate``."""

    name: str
    error_count: int
    groups: list[str]
    configs: list[ConfigInfo]

    @classmethod
    def from_domain(cls, infos: domain.ConfigInfos) -> ConfigInfos:
        return cls(name=infos.name, error_count=infos.error_count, groups=list(infos.groups),
                   configs=[ConfigInfo(definition=ConfigKeyInfo.from_domain(c.definition),
                                       value=ConfigValueInfo.from_domain(c.value))
                            for c in infos.configs])
