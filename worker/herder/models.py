"""What the herder returns: Kafka Connect's entities, as plain dataclasses.

The REST layer turns these into the exact JSON shapes of Apache Kafka Connect
(``ConnectorInfo``, ``ConnectorStateInfo``, ``TaskInfo``, ``ConfigInfos``, ``PluginInfo``),
and of our ``/admin/`` extensions (``WorkerConfigValidation``, ``WorkerInfo``,
``ClusterInfo``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from worker.config.dynamic import DynamicConfigState
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
class AutoRestartState:
    """Our extension of a status: the automatic restarts of a connector or task
    (``auto.restart.*``). ``max_attempts`` -1: unlimited; ``next_attempt_ms``: when the next
    is due (epoch milliseconds; None: none scheduled); ``exhausted``: FAILED with no
    attempt left."""

    attempts: int
    max_attempts: int
    next_attempt_ms: int | None = None
    exhausted: bool = False


@dataclass(frozen=True)
class AbstractState:
    state: str
    worker_id: str
    trace: str | None = None
    #: Only where the connector has automatic restart on and this worker runs the part.
    auto_restart: AutoRestartState | None = field(default=None, kw_only=True)


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


@dataclass(frozen=True)
class ConnectorOffset:
    """KIP-875: one partition's offset. Sources: the connector's own partition/offset maps;
    sinks: ``{"kafka_topic", "kafka_partition"}`` / ``{"kafka_offset"}``. None = reset.

    ``partition`` is None only in an alter request that left it out or null: the herder
    answers that with Kafka's 400, so it travels this far."""

    partition: dict[str, Any] | None
    offset: dict[str, Any] | None


@dataclass(frozen=True)
class ConnectorOffsets:
    offsets: list[ConnectorOffset]


@dataclass(frozen=True)
class Message:
    """A ``{"message": ...}`` body (KIP-875's alter/reset responses)."""

    message: str


@dataclass(frozen=True)
class LoggerLevel:
    """KIP-495: a logger's effective level and when it was last set through the API."""

    level: str
    last_modified: int | None = None


class LoggerScope(StrEnum):
    WORKER = "worker"
    CLUSTER = "cluster"


@dataclass(frozen=True)
class HealthStatus:
    """KIP-1017: ``status`` is ``healthy``, ``starting`` or ``unhealthy``."""

    status: str
    message: str
    worker_thread_details: str | None = None


# --- our /admin/ extensions: the dynamic worker configuration, workers, the cluster -------


@dataclass(frozen=True)
class WorkerConfigValidation:
    """``POST /admin/dynamic-worker-config/validate``: the problems per key."""

    error_count: int
    errors: dict[str, list[str]]


@dataclass(frozen=True)
class WorkerInfo:
    """``GET /admin/worker``, herder part: who this worker is, what it applied."""

    worker_id: str
    url: str
    dynamic_config: DynamicConfigState


@dataclass(frozen=True)
class ClusterMemberInfo:
    worker_id: str
    url: str


@dataclass(frozen=True)
class HeldWorkInfo:
    """Work the leader holds for a worker that left the group, until ``until`` (UTC): it
    goes back to that worker if it rejoins by then, else to the others."""

    worker_id: str
    url: str
    connectors: list[str]
    tasks: list[TaskId]
    until: datetime


@dataclass(frozen=True)
class ClusterInfo:
    """``GET /admin/cluster``: the leader's URL (None while unknown), every member, and the
    work held for workers that left (distributed mode)."""

    leader_url: str | None
    members: list[ClusterMemberInfo]
    held: list[HeldWorkInfo] = field(default_factory=list)
