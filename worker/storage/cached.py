"""Read caches for stores that have exactly one writing process (the standalone worker).

The REST API reads configs and statuses far more often than anything writes them (status
polling by operators, Airflow sensors, dashboards); against SQL each read costs several
queries. These decorators serve reads from memory and write through to the wrapped store.
They are only correct when no other process writes the same database, which is the
standalone worker's contract; distributed mode reads the Kafka topics into memory anyway.

A version counter guards the only race: a reader that loaded from the backing store while
a writer was writing does not cache what it read.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence

from worker.storage.base import (
    ClusterConfigState,
    ConfigBackingStore,
    ConnectorStatus,
    StatusBackingStore,
    TargetState,
    TaskId,
    TaskStatus,
    TopicStatus,
    WorkerConfigOverrides,
)


class CachedConfigBackingStore(ConfigBackingStore):
    """Caches ``snapshot()`` and ``worker_config()``; every write invalidates both. Callers
    get their own copy (a few dict copies, far cheaper than the queries it saves), as the
    ABC promises."""

    def __init__(self, inner: ConfigBackingStore) -> None:
        self._inner = inner
        self._lock = threading.Lock()
        self._version = 0
        self._snapshot: ClusterConfigState | None = None
        self._worker_config: WorkerConfigOverrides | None = None

    def start(self) -> None:
        self._inner.start()

    def stop(self) -> None:
        self._inner.stop()

    def view(self) -> ClusterConfigState:
        """The cached snapshot itself (shared by every reader until the next write)."""
        with self._lock:
            cached, version = self._snapshot, self._version
        if cached is None:
            cached = self._inner.snapshot()
            with self._lock:
                if self._version == version:
                    self._snapshot = cached
        return cached

    def snapshot(self) -> ClusterConfigState:
        cached = self.view()
        return ClusterConfigState(
            {name: dict(config) for name, config in cached.connector_configs.items()},
            dict(cached.target_states),
            {name: [dict(t) for t in tasks] for name, tasks in cached.task_configs.items()})

    def worker_config(self) -> WorkerConfigOverrides:
        with self._lock:
            cached, version = self._worker_config, self._version
        if cached is None:
            cached = self._inner.worker_config()
            with self._lock:
                if self._version == version:
                    self._worker_config = cached
        return WorkerConfigOverrides(cached.version, dict(cached.properties))

    def _invalidate(self) -> None:
        with self._lock:
            self._version += 1
            self._snapshot = None
            self._worker_config = None

    def put_connector_config(self, connector: str, config: Mapping[str, str],
                             target_state: TargetState | None = None) -> None:
        try:
            self._inner.put_connector_config(connector, config, target_state)
        finally:
            self._invalidate()

    def remove_connector_config(self, connector: str) -> None:
        try:
            self._inner.remove_connector_config(connector)
        finally:
            self._invalidate()

    def put_task_configs(self, connector: str, configs: Sequence[Mapping[str, str]]) -> None:
        try:
            self._inner.put_task_configs(connector, configs)
        finally:
            self._invalidate()

    def put_target_state(self, connector: str, state: TargetState) -> None:
        try:
            self._inner.put_target_state(connector, state)
        finally:
            self._invalidate()

    def put_worker_config(self, properties: Mapping[str, str]) -> None:
        try:
            self._inner.put_worker_config(properties)
        finally:
            self._invalidate()


class _Entry:
    """What is cached of one connector: its status and its tasks' statuses."""

    __slots__ = ("connector", "tasks")

    def __init__(self, connector: ConnectorStatus | None, tasks: list[TaskStatus]) -> None:
        self.connector = connector
        self.tasks = {t.id.task: t for t in tasks}


class CachedStatusBackingStore(StatusBackingStore):
    """Caches connector and task statuses per connector; writes go through, then update the
    cached entry (if any). Topics are read rarely and are passed straight through."""

    def __init__(self, inner: StatusBackingStore) -> None:
        self._inner = inner
        self._lock = threading.Lock()
        # Serialises write + cache update, so two writers of one status cannot leave the
        # cache holding the older of the two.
        self._write_lock = threading.Lock()
        self._version = 0
        self._entries: dict[str, _Entry] = {}

    def start(self) -> None:
        self._inner.start()

    def stop(self) -> None:
        self._inner.stop()

    def _entry(self, connector: str) -> _Entry:
        with self._lock:
            entry, version = self._entries.get(connector), self._version
        if entry is not None:
            return entry
        loaded = _Entry(self._inner.get_connector(connector), self._inner.get_tasks(connector))
        with self._lock:
            if self._version == version:
                self._entries[connector] = loaded
        return loaded

    def _changed(self, connector: str, update: object = None) -> None:
        with self._lock:
            self._version += 1
            entry = self._entries.get(connector)
            if entry is None:
                return
            if isinstance(update, ConnectorStatus):
                entry.connector = update
            elif isinstance(update, TaskStatus):
                entry.tasks = {**entry.tasks, update.id.task: update}
            else:
                del self._entries[connector]

    def put_connector(self, status: ConnectorStatus) -> None:
        with self._write_lock:
            try:
                self._inner.put_connector(status)
            except BaseException:
                self._changed(status.connector)
                raise
            self._changed(status.connector, status)

    def put_task(self, status: TaskStatus) -> None:
        with self._write_lock:
            try:
                self._inner.put_task(status)
            except BaseException:
                self._changed(status.id.connector)
                raise
            self._changed(status.id.connector, status)

    def get_connector(self, connector: str) -> ConnectorStatus | None:
        return self._entry(connector).connector

    def get_task(self, task: TaskId) -> TaskStatus | None:
        return self._entry(task.connector).tasks.get(task.task)

    def get_tasks(self, connector: str) -> list[TaskStatus]:
        tasks = self._entry(connector).tasks
        return [tasks[n] for n in sorted(tasks)]

    def delete_connector(self, connector: str) -> None:
        with self._write_lock:
            try:
                self._inner.delete_connector(connector)
            finally:
                self._changed(connector)

    def delete_task(self, task: TaskId) -> None:
        with self._write_lock:
            try:
                self._inner.delete_task(task)
            finally:
                self._changed(task.connector)

    def put_topic(self, status: TopicStatus) -> None:
        self._inner.put_topic(status)

    def get_topics(self, connector: str) -> list[TopicStatus]:
        return self._inner.get_topics(connector)

    def delete_topics(self, connector: str) -> None:
        self._inner.delete_topics(connector)
