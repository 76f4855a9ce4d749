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
from collections.abc import Callable, Mapping, Sequence

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
    """Caches ``snapshot()`` and ``worker_config()``. A connector write that succeeds is
    applied to the cached snapshot too (a new snapshot: the three maps copied, one
    connector's entries replaced), so that a write does not cost a reload of every
    connector; a write that fails drops the caches. Callers of ``snapshot()`` get their own
    copy (a few dict copies, far cheaper than the queries it saves), as the ABC promises."""

    def __init__(self, inner: ConfigBackingStore) -> None:
        self._inner = inner
        self._lock = threading.Lock()
        # Writes one at a time, each with its cache update: the cache then changes in the
        # order the store did.
        self._write_lock = threading.Lock()
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

    def _written(self, apply: Callable[[ClusterConfigState], None] | None) -> None:
        """After a write: a new version; the snapshot updated by ``apply`` on copies of
        its maps (readers keep the one they hold), or dropped (``None``). A load that
        began before the write is not cached (the version moved). Every ``apply`` sets or
        removes one connector's entries, so applying it to a snapshot loaded after the
        write changes nothing."""
        with self._lock:
            self._version += 1
            self._worker_config = None
            cached = self._snapshot
            if cached is None or apply is None:
                self._snapshot = None
                return
            updated = ClusterConfigState(dict(cached.connector_configs),
                                         dict(cached.target_states),
                                         dict(cached.task_configs))
            apply(updated)
            self._snapshot = updated

    def _write(self, write: Callable[[], None],
               apply: Callable[[ClusterConfigState], None] | None) -> None:
        with self._write_lock:
            try:
                write()
            except BaseException:
                self._written(None)  # what the store holds now is not known
                raise
            self._written(apply)

    def put_connector_config(self, connector: str, config: Mapping[str, str],
                             target_state: TargetState | None = None) -> None:
        stored = dict(config)

        def apply(state: ClusterConfigState) -> None:
            state.connector_configs[connector] = stored
            if target_state is not None:
                state.target_states[connector] = TargetState(target_state)

        self._write(lambda: self._inner.put_connector_config(connector, config, target_state),
                    apply)

    def remove_connector_config(self, connector: str) -> None:
        def apply(state: ClusterConfigState) -> None:
            state.connector_configs.pop(connector, None)
            state.target_states.pop(connector, None)
            state.task_configs.pop(connector, None)

        self._write(lambda: self._inner.remove_connector_config(connector), apply)

    def put_task_configs(self, connector: str, configs: Sequence[Mapping[str, str]]) -> None:
        stored = [dict(c) for c in configs]

        def apply(state: ClusterConfigState) -> None:
            if stored:
                state.task_configs[connector] = stored
            else:  # as loaded: a connector without tasks has no entry
                state.task_configs.pop(connector, None)

        self._write(lambda: self._inner.put_task_configs(connector, configs), apply)

    def put_target_state(self, connector: str, state: TargetState) -> None:
        def apply(snapshot: ClusterConfigState) -> None:
            snapshot.target_states[connector] = TargetState(state)

        self._write(lambda: self._inner.put_target_state(connector, state), apply)

    def put_worker_config(self, properties: Mapping[str, str]) -> None:
        self._write(lambda: self._inner.put_worker_config(properties),
                    lambda _state: None)  # the snapshot holds no worker config


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
