"""SQL implementations of the config, offset and status stores (the standalone default).

All three share one ``SqlDatabase``; every multi-row change is one transaction. Config
values are never logged: they may hold passwords.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import Row, delete, insert, select, update

from worker.api.task import partition_key
from worker.errors import StorageError
from worker.storage.base import (
    ClusterConfigState,
    ConfigBackingStore,
    ConnectorStatus,
    OffsetBackingStore,
    State,
    StatusBackingStore,
    TargetState,
    TaskId,
    TaskStatus,
    TopicStatus,
    WorkerConfigOverrides,
    string_map,
)
from worker.storage.sql import schema
from worker.storage.sql.database import SqlDatabase, upsert

# Bound parameters per IN (...) clause; stays under SQLite's older 999-variable limit.
_IN_CHUNK = 500


def _dumps(value: Mapping[str, Any], what: str) -> str:
    try:
        return json.dumps(value, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise StorageError(f"{what} is not JSON-serialisable") from exc


def _partition_hash(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


class _SqlStore:
    """Ties a store's lifecycle to the shared database's."""

    def __init__(self, database: SqlDatabase) -> None:
        self._db = database

    def start(self) -> None:
        self._db.start()

    def stop(self) -> None:
        self._db.stop()


class SqlConfigBackingStore(_SqlStore, ConfigBackingStore):
    """Connector configs, task configs and target states in ``connect_*_configs`` tables;
    the worker-config overrides in ``connect_worker_config``."""

    def snapshot(self) -> ClusterConfigState:
        state = ClusterConfigState()
        with self._db.transaction("Reading connector configs", consistent=True) as conn:
            for name, config in conn.execute(select(schema.connector_configs)):
                state.connector_configs[name] = json.loads(config)
            for name, target in conn.execute(select(schema.target_states)):
                state.target_states[name] = TargetState(target)
            tasks = schema.task_configs
            rows = conn.execute(select(tasks.c.connector, tasks.c.config)
                                .order_by(tasks.c.connector, tasks.c.task))
            for name, config in rows:
                state.task_configs.setdefault(name, []).append(json.loads(config))
        return state

    def put_connector_config(self, connector: str, config: Mapping[str, str],
                             target_state: TargetState | None = None) -> None:
        encoded = _dumps(config, "connector config")
        with self._db.transaction("Writing a connector config", write=True) as conn:
            upsert(conn, schema.connector_configs,
                   [{"connector": connector, "config": encoded}], ["connector"])
            if target_state is not None:
                upsert(conn, schema.target_states,
                       [{"connector": connector, "state": TargetState(target_state).value}],
                       ["connector"])

    def remove_connector_config(self, connector: str) -> None:
        with self._db.transaction("Removing a connector config", write=True) as conn:
            for table in (schema.connector_configs, schema.task_configs, schema.target_states):
                conn.execute(delete(table).where(table.c.connector == connector))

    def put_task_configs(self, connector: str, configs: Sequence[Mapping[str, str]]) -> None:
        rows = [{"connector": connector, "task": index, "config": _dumps(c, "task config")}
                for index, c in enumerate(configs)]
        tasks = schema.task_configs
        with self._db.transaction("Writing task configs", write=True) as conn:
            conn.execute(delete(tasks).where(tasks.c.connector == connector))
            if rows:
                conn.execute(tasks.insert(), rows)

    def put_target_state(self, connector: str, state: TargetState) -> None:
        with self._db.transaction("Writing a target state", write=True) as conn:
            upsert(conn, schema.target_states,
                   [{"connector": connector, "state": TargetState(state).value}], ["connector"])

    def worker_config(self) -> WorkerConfigOverrides:
        table = schema.worker_config
        with self._db.transaction("Reading the worker config") as conn:
            row = conn.execute(select(table.c.revision, table.c.properties)
                               .where(table.c.id == schema.WORKER_CONFIG_ROW)).first()
        if row is None:
            return WorkerConfigOverrides(0)
        return WorkerConfigOverrides(row.revision, json.loads(row.properties))

    def put_worker_config(self, properties: Mapping[str, str]) -> None:
        encoded = _dumps(string_map(properties, "worker config"), "worker config")
        table = schema.worker_config
        with self._db.transaction("Writing the worker config", write=True) as conn:
            # The increment happens in the database, so it cannot lose a concurrent write.
            changed = conn.execute(update(table).where(table.c.id == schema.WORKER_CONFIG_ROW)
                                   .values(revision=table.c.revision + 1, properties=encoded))
            if not changed.rowcount:
                conn.execute(insert(table).values(id=schema.WORKER_CONFIG_ROW, revision=1,
                                                  properties=encoded))


class SqlOffsetBackingStore(_SqlStore, OffsetBackingStore):
    """Source offsets in ``connect_offsets``, one row per (connector, source partition)."""

    def get(self, connector: str, partitions: Iterable[Mapping[str, Any]]
            ) -> dict[str, dict[str, Any]]:
        # Rows are found by the hash of the canonical key, so key order in the caller's
        # partition dict does not matter.
        wanted = {_partition_hash(k): k for k in (partition_key(p) for p in partitions)}
        hashes = list(wanted)
        table = schema.offsets
        found: dict[str, dict[str, Any]] = {}
        with self._db.transaction("Reading source offsets", consistent=True) as conn:
            for start in range(0, len(hashes), _IN_CHUNK):
                chunk = hashes[start:start + _IN_CHUNK]
                rows = conn.execute(
                    select(table.c.partition_hash, table.c.source_offset)
                    .where(table.c.connector == connector, table.c.partition_hash.in_(chunk)))
                for digest, offset in rows:
                    found[wanted[digest]] = json.loads(offset)
        return found

    def get_all(self, connector: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        table = schema.offsets
        with self._db.transaction("Reading source offsets") as conn:
            rows = conn.execute(
                select(table.c.source_partition, table.c.source_offset)
                .where(table.c.connector == connector)
                .order_by(table.c.source_partition)).all()
        return [(json.loads(partition), json.loads(offset)) for partition, offset in rows]

    def put(self, connector: str,
            offsets: Iterable[tuple[Mapping[str, Any], Mapping[str, Any] | None]]) -> None:
        # Collapse repeats first (the last write of a partition wins) and encode everything
        # before touching the database, so a bad value leaves nothing half-written.
        latest: dict[str, tuple[str, str | None]] = {}
        for partition, offset in offsets:
            key = partition_key(partition)
            encoded = None if offset is None else _dumps(offset, "source offset")
            latest[_partition_hash(key)] = (key, encoded)
        if not latest:
            return
        removed = [digest for digest, (_, offset) in latest.items() if offset is None]
        written = [{"connector": connector, "partition_hash": digest,
                    "source_partition": key, "source_offset": offset}
                   for digest, (key, offset) in latest.items() if offset is not None]
        table = schema.offsets
        with self._db.transaction("Writing source offsets", write=True) as conn:
            for start in range(0, len(removed), _IN_CHUNK):
                conn.execute(delete(table).where(
                    table.c.connector == connector,
                    table.c.partition_hash.in_(removed[start:start + _IN_CHUNK])))
            upsert(conn, table, written, ["connector", "partition_hash"])


class SqlStatusBackingStore(_SqlStore, StatusBackingStore):
    """Connector, task and active-topic statuses in ``connect_*_status`` tables."""

    def put_connector(self, status: ConnectorStatus) -> None:
        row = {"connector": status.connector, "state": State(status.state).value,
               "worker_id": status.worker_id, "generation": status.generation,
               "trace": status.trace}
        with self._db.transaction("Writing a connector status", write=True) as conn:
            upsert(conn, schema.connector_status, [row], ["connector"])

    def put_task(self, status: TaskStatus) -> None:
        row = {"connector": status.id.connector, "task": status.id.task,
               "state": State(status.state).value, "worker_id": status.worker_id,
               "generation": status.generation, "trace": status.trace}
        with self._db.transaction("Writing a task status", write=True) as conn:
            upsert(conn, schema.task_status, [row], ["connector", "task"])

    def get_connector(self, connector: str) -> ConnectorStatus | None:
        table = schema.connector_status
        with self._db.transaction("Reading a connector status") as conn:
            row = conn.execute(select(table).where(table.c.connector == connector)).first()
        if row is None:
            return None
        return ConnectorStatus(connector=row.connector, state=State(row.state),
                               worker_id=row.worker_id, generation=row.generation,
                               trace=row.trace)

    def get_task(self, task: TaskId) -> TaskStatus | None:
        table = schema.task_status
        with self._db.transaction("Reading a task status") as conn:
            row = conn.execute(select(table).where(
                table.c.connector == task.connector, table.c.task == task.task)).first()
        return None if row is None else _task_status(row)

    def get_tasks(self, connector: str) -> list[TaskStatus]:
        table = schema.task_status
        with self._db.transaction("Reading task statuses") as conn:
            rows = conn.execute(select(table).where(table.c.connector == connector)
                                .order_by(table.c.task)).all()
        return [_task_status(row) for row in rows]

    def delete_connector(self, connector: str) -> None:
        with self._db.transaction("Deleting connector statuses", write=True) as conn:
            for table in (schema.connector_status, schema.task_status):
                conn.execute(delete(table).where(table.c.connector == connector))

    def delete_task(self, task: TaskId) -> None:
        table = schema.task_status
        with self._db.transaction("Deleting a task status", write=True) as conn:
            conn.execute(delete(table).where(
                table.c.connector == task.connector, table.c.task == task.task))

    def put_topic(self, status: TopicStatus) -> None:
        row = {"connector": status.connector, "topic": status.topic, "task": status.task,
               "discover_timestamp": status.discover_timestamp}
        with self._db.transaction("Writing an active topic", write=True) as conn:
            # KIP-558: the first discovery is kept, so an existing row is left alone.
            upsert(conn, schema.topic_status, [row], ["connector", "topic"], replace=False)

    def get_topics(self, connector: str) -> list[TopicStatus]:
        table = schema.topic_status
        with self._db.transaction("Reading active topics") as conn:
            rows = conn.execute(select(table).where(table.c.connector == connector)).all()
        # Sorted here, not by ORDER BY: database collations differ (PostgreSQL's follows the
        # locale), and every backend must order topic names the same way.
        return [TopicStatus(topic=r.topic, connector=r.connector, task=r.task,
                            discover_timestamp=r.discover_timestamp)
                for r in sorted(rows, key=lambda r: r.topic)]

    def delete_topics(self, connector: str) -> None:
        table = schema.topic_status
        with self._db.transaction("Deleting active topics", write=True) as conn:
            conn.execute(delete(table).where(table.c.connector == connector))


def _task_status(row: Row[Any]) -> TaskStatus:
    return TaskStatus(id=TaskId(row.connector, row.task), state=State(row.state),
                      worker_id=row.worker_id, generation=row.generation, trace=row.trace)
