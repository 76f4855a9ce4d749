"""Storage ABCs: connector configs (+ target states), source offsets, statuses.

Three implementations share one contract suite (``tests/unit/worker/storage``): ``memory``,
``sql`` (SQLAlchemy; the standalone default) and, in distributed mode, ``kafka``
(compacted topics in Apache Kafka Connect's record formats). Implementations translate
their library's errors into ``worker.errors.StorageError``.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, NamedTuple

from worker.errors import StorageError


class TargetState(StrEnum):
    """What the user asked a connector to be (KIP-875 adds STOPPED)."""

    STARTED = "STARTED"
    PAUSED = "PAUSED"
    STOPPED = "STOPPED"


class State(StrEnum):
    """What a connector or task actually is, as reported in its status."""

    UNASSIGNED = "UNASSIGNED"
    RUNNING = "RUNNING"
    PAUSED = "PAUSED"
    FAILED = "FAILED"
    RESTARTING = "RESTARTING"
    STOPPED = "STOPPED"
    DESTROYED = "DESTROYED"


class TaskId(NamedTuple):
    connector: str
    task: int


@dataclass(frozen=True)
class ConnectorStatus:
    connector: str
    state: State
    worker_id: str
    generation: int = 0
    trace: str | None = None


@dataclass(frozen=True)
class TaskStatus:
    id: TaskId
    state: State
    worker_id: str
    generation: int = 0
    trace: str | None = None


@dataclass(frozen=True)
class TopicStatus:
    """KIP-558: a topic a connector's task produced to or consumed from."""

    topic: str
    connector: str
    task: int
    discover_timestamp: int = field(default_factory=lambda: int(time.time() * 1000))


@dataclass
class ClusterConfigState:
    """A consistent snapshot of the config store."""

    connector_configs: dict[str, dict[str, str]] = field(default_factory=dict)
    target_states: dict[str, TargetState] = field(default_factory=dict)
    task_configs: dict[str, list[dict[str, str]]] = field(default_factory=dict)

    def contains(self, connector: str) -> bool:
        return connector in self.connector_configs

    def target_state(self, connector: str) -> TargetState:
        return self.target_states.get(connector, TargetState.STARTED)

    def tasks(self, connector: str) -> list[dict[str, str]]:
        return self.task_configs.get(connector, [])


@dataclass(frozen=True)
class WorkerConfigOverrides:
    """The dynamic worker configuration stored for the whole cluster: the overrides of
    worker properties set through ``/admin/dynamic-worker-config`` (raw values: a
    ``${provider:path:key}`` placeholder is stored as written).

    ``version`` increases with every write, a clear included: the SQL and memory stores
    count revisions (0: never written); the Kafka store gives the config-topic offset of
    the last ``worker-config`` record (-1: none).
    """

    version: int
    properties: dict[str, str] = field(default_factory=dict)


def string_map(properties: Mapping[str, str], what: str) -> dict[str, str]:
    """A copy of ``properties``; StorageError (naming ``what``, no value) unless every key
    and value is a string, so that every backend accepts and rejects the same input."""
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in properties.items()):
        raise StorageError(f"{what} keys and values must be strings")
    return dict(properties)


class ConfigBackingStore(ABC):
    """Connector configs, task configs and target states; the worker-config overrides."""

    def start(self) -> None:
        """Open connections / read the store to its end."""

    def stop(self) -> None:
        """Release resources."""

    @abstractmethod
    def snapshot(self) -> ClusterConfigState:
        """A copy of the current state; later writes do not change it."""

    def view(self) -> ClusterConfigState:
        """The current state for reading only: callers must not modify it. Stores that can
        share one snapshot between readers until the next write return the same object
        (no copy per read: status and info requests stay cheap with hundreds of
        connectors); this default copies."""
        return self.snapshot()

    @abstractmethod
    def put_connector_config(self, connector: str, config: Mapping[str, str],
                             target_state: TargetState | None = None) -> None:
        """Create or replace a connector's config; ``target_state`` set it too (on create)."""

    @abstractmethod
    def remove_connector_config(self, connector: str) -> None:
        """Remove the connector's config, task configs and target state."""

    @abstractmethod
    def put_task_configs(self, connector: str, configs: Sequence[Mapping[str, str]]) -> None:
        """Replace all task configs of a connector (an empty list = no tasks, e.g. STOPPED)."""

    @abstractmethod
    def put_target_state(self, connector: str, state: TargetState) -> None:
        """Set a connector's target state."""

    @abstractmethod
    def worker_config(self) -> WorkerConfigOverrides:
        """The stored worker-config overrides (a copy) and their version."""

    @abstractmethod
    def put_worker_config(self, properties: Mapping[str, str]) -> None:
        """Replace all worker-config overrides with ``properties`` and bump the version; an
        empty mapping clears them (the Kafka store writes a tombstone). Raises StorageError
        (nothing written) for a key or value that is not a string."""

    def clear_worker_config(self) -> None:
        """Remove every worker-config override (a new version with none)."""
        self.put_worker_config({})


class OffsetBackingStore(ABC):
    """Source connector offsets, namespaced by connector name."""

    def start(self) -> None:
        """Open connections / read the store to its end."""

    def stop(self) -> None:
        """Release resources."""

    @abstractmethod
    def get(self, connector: str, partitions: Iterable[Mapping[str, Any]]
            ) -> dict[str, dict[str, Any]]:
        """Offsets of the given partitions keyed by ``partition_key``; unknown ones omitted."""

    @abstractmethod
    def get_all(self, connector: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        """Every (partition, offset) pair stored for the connector."""

    @abstractmethod
    def put(self, connector: str,
            offsets: Iterable[tuple[Mapping[str, Any], Mapping[str, Any] | None]]) -> None:
        """Write offsets atomically; an offset of None removes that partition (reset)."""


class StatusBackingStore(ABC):
    """Connector, task and active-topic statuses."""

    def start(self) -> None:
        """Open connections / read the store to its end."""

    def stop(self) -> None:
        """Release resources."""

    @abstractmethod
    def put_connector(self, status: ConnectorStatus) -> None: ...

    @abstractmethod
    def put_task(self, status: TaskStatus) -> None: ...

    @abstractmethod
    def get_connector(self, connector: str) -> ConnectorStatus | None: ...

    @abstractmethod
    def get_task(self, task: TaskId) -> TaskStatus | None: ...

    @abstractmethod
    def get_tasks(self, connector: str) -> list[TaskStatus]:
        """Statuses of the connector's tasks, ordered by task number."""

    @abstractmethod
    def delete_connector(self, connector: str) -> None:
        """Forget the connector's status and all its task statuses."""

    @abstractmethod
    def delete_task(self, task: TaskId) -> None: ...

    @abstractmethod
    def put_topic(self, status: TopicStatus) -> None:
        """Record an active topic; a topic already recorded for the connector is kept."""

    @abstractmethod
    def get_topics(self, connector: str) -> list[TopicStatus]:
        """Active topics of the connector, ordered by topic name."""

    @abstractmethod
    def delete_topics(self, connector: str) -> None:
        """Forget every active topic of the connector."""
