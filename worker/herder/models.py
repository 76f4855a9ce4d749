"""What the herder returns: Kafka Connect's entities, as plain dataclasses.

The REST layer turns these into the exact JSON shapes of Apache Kafka Connect
(``ConnectorInfo``, ``ConnectorStateInfo``, ``TaskInfo``, ``ConfigInfos``, ``PluginInfo``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from worker.storage.base import TaskId


class ConnectorType(StrEnum):
    SOURCE = "source"
    SINK = "sink"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class ConnectorInfo:
    name: str
    config: dict[str, str]
    tasks: list[TaskId]
    type: ConnectorType


@dataclass(frozen=True)
class TaskInfo:
    id: TaskId
    config: dict[str, str]


@dataclass(frozen=True)
class AbstractState:
    state: str
    worker_id: str
    trace: str | None = None


@dataclass(frozen=True)
class TaskState(AbstractState):
    id: int = 0


@dataclass(frozen=True)
class ConnectorStateInfo:
    name: str
    connector: AbstractState
    tasks: list[TaskState]
    type: ConnectorType


@dataclass(frozen=True)
class ConfigKeyInfo:
    name: str
    type: str
    required: bool
    default_value: str | None
    importance: str
    documentation: str
    group: str | None
    order_in_group: int
    width: str
    display_name: str
    dependents: list[str]


@dataclass(frozen=True)
class ConfigValueInfo:
    name: str
    value: str | None
    recommended_values: list[str]
    errors: list[str]
    visible: bool = True


@dataclass(frozen=True)
class ConfigInfo:
    definition: ConfigKeyInfo
    value: ConfigValueInfo


@dataclass(frozen=True)
class ConfigInfos:
    name: str
    error_count: int
    groups: list[str]
    configs: list[ConfigInfo]


@dataclass(frozen=True)
class PluginInfo:
    class_name: str
    type: str  # source, sink, converter, header_converter, transformation, predicate
    version: str
    aliases: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class ServerInfo:
    version: str
    commit: str
    kafka_cluster_id: str | None


@dataclass(frozen=True)
class Created:
    """Result of a config write: whether it created the connector, and the connector."""

    created: bool
    info: ConnectorInfo
