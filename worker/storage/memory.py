"""In-memory storage backends: for tests and throwaway workers; nothing survives the process.

Each store guards its state with its own lock because task threads, the herder and REST
threads call it concurrently. Values cross the store boundary as copies in both directions,
so neither a later write nor a caller mutating what it passed in or got back can change
what another caller sees.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from worker.api.task import partition_key
from worker.errors import StorageError
from worker.storage.base import (
    ClusterConfigState,
    ConfigBackingStore,
    ConnectorStatus,
    OffsetBackingStore,
    StatusBackingStore,
    TargetState,
    TaskId,
    TaskStatus,
    TopicStatus,
    WorkerConfigOverrides,
    string_map,
)


class MemoryConfigBackingStore(ConfigBackingStore):
    """Connector configs, task configs, target states and worker-config overrides held in
    dicts; the overrides' version counts writes, as the SQL store's revision does."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._state = ClusterConfigState()
        self._worker_config = WorkerConfigOverrides(0)

    def snapshot(self) -> ClusterConfigState:
        with self._lock:
            state = self._state
            return ClusterConfigState(
                connector_configs={c: dict(cfg) for c, cfg in state.connector_configs.items()},
                target_states=dict(state.target_states),
                task_configs={c: [dict(t) for t in tasks]
                              for c, tasks in state.task_configs.items()},
            )

    def put_connector_config(self, connector: str, config: Mapping[str, str],
                             target_state: TargetState | None = None) -> None:
        copied = dict(config)
        with self._lock:
            self._state.connector_configs[connector] = copied
            if target_state is not None:
                self._state.target_states[connector] = TargetState(target_state)

    def remove_connector_config(self, connector: str) -> None:
        with self._lock:
            self._state.connector_configs.pop(connector, None)
            self._state.task_configs.pop(connector, None)
            self._state.target_states.pop(connector, None)

    def put_task_configs(self, connector: str, configs: Sequence[Mapping[str, str]]) -> None:
        copied = [dict(c) for c in configs]
        with self._lock:
            # No tasks and "never had tasks" look the same in every backend (the SQL one
            # has no row to tell them apart), so an empty list drops the entry.
            if copied:
                self._state.task_configs[connector] = copied
            else:
                self._state.task_configs.pop(connector, None)

    def put_target_state(self, connector: str, state: TargetState) -> None:
        with self._lock:
            self._state.target_states[connector] = TargetState(state)

    def worker_config(self) -> WorkerConfigOverrides:
        with self._lock:
            stored = self._worker_config
        return WorkerConfigOverrides(stored.version, dict(stored.properties))

    def put_worker_config(self, properties: Mapping[str, str]) -> None:
        copied = string_map(properties, "worker config")
        with self._lock:
            self._worker_config = WorkerConfigOverrides(self._worker_config.version + 1, copied)


def _encode(value: Mapping[str, Any], what: str) -> str:
    """JSON-encode like the persistent backends do, so every backend accepts the same values."""
    try:
        return json.dumps(value, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise StorageError(f"{what} is not JSON-serialisable") from exc


class MemoryOffsetBackingStore(OffsetBackingStore):
    """Source offsets held as JSON text, so every read hands out a fresh copy."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # connector -> partition_key -> offset JSON; the key itself is the partition's JSON.
        self._offsets: dict[str, dict[str, str]] = {}

    def get(self, connector: str, partitions: Iterable[Mapping[str, Any]]
            ) -> dict[str, dict[str, Any]]:
        keys = [partition_key(p) for p in partitions]
        with self._lock:
            stored = self._offsets.get(connector, {})
            found = {k: stored[k] for k in keys if k in stored}
        return {k: json.loads(v) for k, v in found.items()}

    def get_all(self, connector: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        with self._lock:
            items = list(self._offsets.get(connector, {}).items())
        return [(json.loads(k), json.loads(v)) for k, v in items]

    def put(self, connector: str,
            offsets: Iterable[tuple[Mapping[str, Any], Mapping[str, Any] | None]]) -> None:
        # Encode everything before taking the lock: a bad value must leave no partial write.
        changes: dict[str, str | None] = {}
        for partition, offset in offsets:
            key = partition_key(partition)
            changes[key] = None if offset is None else _encode(offset, "source offset")
        with self._lock:
            stored = self._offsets.setdefault(connector, {})
            for key, value in changes.items():
                if value is None:
                    stored.pop(key, None)
                else:
                    stored[key] = value
            if not stored:
                del self._offsets[connector]


class MemoryStatusBackingStore(StatusBackingStore):
    """Connector, task and active-topic statuses held in dicts (statuses are immutable)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._connectors: dict[str, ConnectorStatus] = {}
        self._tasks: dict[str, dict[int, TaskStatus]] = {}
        self._topics: dict[str, dict[str, TopicStatus]] = {}

    def put_connector(self, status: ConnectorStatus) -> None:
        with self._lock:
            self._connectors[status.connector] = status

    def put_task(self, status: TaskStatus) -> None:
        with self._lock:
            self._tasks.setdefault(status.id.connector, {})[status.id.task] = status

    def get_connector(self, connector: str) -> ConnectorStatus | None:
        with self._lock:
            return self._connectors.get(connector)

    def get_task(self, task: TaskId) -> TaskStatus | None:
        with self._lock:
            return self._tasks.get(task.connector, {}).get(task.task)

    def get_tasks(self, connector: str) -> list[TaskStatus]:
        with self._lock:
            tasks = self._tasks.get(connector, {})
            return [tasks[n] for n in sorted(tasks)]

    def delete_connector(self, connector: str) -> None:
        with self._lock:
            self._connectors.pop(connector, None)
            self._tasks.pop(connector, None)

    def delete_task(self, task: TaskId) -> None:
        with self._lock:
            tasks = self._tasks.get(task.connector)
            if tasks is not None:
                tasks.pop(task.task, None)
                if not tasks:
                    del self._tasks[task.connector]

    def put_topic(self, status: TopicStatus) -> None:
        with self._lock:
            # KIP-558: the discover timestamp is the first time the topic was seen.
            self._topics.setdefault(status.connector, {}).setdefault(status.topic, status)

    def get_topics(self, connector: str) -> list[TopicStatus]:
        with self._lock:
            topics = self._topics.get(connector, {})
            return [topics[name] for name in sorted(topics)]

    def delete_topics(self, connector: str) -> None:
        with self._lock:
            self._topics.pop(connector, None)
