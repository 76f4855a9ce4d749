"""Connector configs, task configs, target states, the worker-config overrides and the
session key (KIP-507) in the config topic (one partition).

The state is rebuilt from the topic exactly as Kafka's ``KafkaConfigBackingStore`` does:
task configs wait for their ``commit-{c}`` record, which makes tasks 0..N-1 visible at
once (or, if some are missing, e.g. after compaction of a half-written update, keeps the
previous tasks). The ``worker-config`` record holds every override at once (a tombstone
clears them); its offset is their version. The last ``session-key`` record read is the
current session key. Every write is read back before returning, so
``snapshot()`` and ``worker_config()`` reflect it. Only the leader writes (the herder
forwards); writes are serialised in this process.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from worker.config.worker_config import DistributedConfig
from worker.storage.base import (
    ClusterConfigState,
    ConfigBackingStore,
    TargetState,
    WorkerConfigOverrides,
)
from worker.storage.kafka import formats
from worker.storage.kafka.formats import (
    COMMIT_PREFIX,
    CONNECTOR_PREFIX,
    RESTART_PREFIX,
    TARGET_STATE_PREFIX,
    TASK_PREFIX,
    ConfigRecord,
    RestartRequest,
    SessionKey,
    config_key,
)
from worker.storage.kafka.log import LogRecord
from worker.storage.kafka.topics import DEFAULT_TIMEOUT_S, TopicBackedStore

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ConfigUpdate:
    """A change read from the config topic, for the herder.

    ``kind``: ``"connector"`` (config put or removed), ``"tasks"`` (a commit applied),
    ``"target_state"``, ``"restart"`` (with ``restart``), ``"worker_config"`` (the
    overrides changed; ``connector`` empty, ``version`` the record's offset) or
    ``"session_key"`` (a new session key; ``connector`` empty).
    """

    kind: str
    connector: str
    restart: RestartRequest | None = None
    version: int | None = None


class KafkaConfigBackingStore(TopicBackedStore, ConfigBackingStore):
    """The config store of distributed mode (``config.storage.topic``)."""

    def __init__(self, config: DistributedConfig, *, timeout_s: float = DEFAULT_TIMEOUT_S
                 ) -> None:
        super().__init__(config, "config", timeout_s)
        self._lock = threading.Lock()
        self._write_lock = threading.RLock()  # put_task_configs nests _write
        self._state = ClusterConfigState()
        self._view: tuple[int, ClusterConfigState] | None = None  # (offset, shared copy)
        self._deferred: dict[str, dict[int, dict[str, str]]] = {}  # uncommitted task configs
        self._offset = -1
        self._worker_config = WorkerConfigOverrides(-1)
        self._session_key: SessionKey | None = None

    def set_listener(self, callback: Callable[[ConfigUpdate], None] | None) -> None:
        """``callback(ConfigUpdate)`` on the log thread after a record was applied."""
        super().set_listener(callback)

    @property
    def offset(self) -> int:
        """The config-topic offset just after the last record applied; -1 if none."""
        with self._lock:
            return self._offset

    def snapshot(self) -> ClusterConfigState:
        with self._lock:
            return self._copy()

    def view(self) -> ClusterConfigState:
        """One copy shared by every reader until the next record is applied."""
        with self._lock:
            if self._view is None or self._view[0] != self._offset:
                self._view = (self._offset, self._copy())
            return self._view[1]

    def _copy(self) -> ClusterConfigState:
        state = self._state
        return ClusterConfigState(
            connector_configs={c: dict(cfg) for c, cfg in state.connector_configs.items()},
            target_states=dict(state.target_states),
            task_configs={c: [dict(t) for t in tasks]
                          for c, tasks in state.task_configs.items()})

    def worker_config(self) -> WorkerConfigOverrides:
        with self._lock:
            stored = self._worker_config
        return WorkerConfigOverrides(stored.version, dict(stored.properties))

    def session_key(self) -> SessionKey | None:
        """The session key read last (KIP-507); None until the leader wrote one."""
        with self._lock:
            return self._session_key

    # --------------------------------------------------------------------------- writes

    def put_session_key(self, session_key: SessionKey) -> None:
        """Distribute a new session key (the leader); read back before returning."""
        log.debug("Distributing new session key")
        self._write([(formats.session_key_key(), formats.session_key_value(session_key))])

    def put_worker_config(self, properties: Mapping[str, str]) -> None:
        """One ``worker-config`` record with every override; none at all: a tombstone."""
        self._write([(formats.worker_config_key(), formats.worker_config_value(properties))])

    def put_connector_config(self, connector: str, config: Mapping[str, str],
                             target_state: TargetState | None = None) -> None:
        value = formats.properties_value(config, "connector config")
        records: list[tuple[bytes, bytes | None]] = []
        if target_state is not None:
            # Before the config, as Kafka writes it (KIP-980): whoever reads the new
            # connector already knows the state it must start in.
            records.append((config_key(TARGET_STATE_PREFIX, connector),
                            formats.target_state_value(target_state)))
        records.append((config_key(CONNECTOR_PREFIX, connector), value))
        self._write(records)

    def remove_connector_config(self, connector: str) -> None:
        self._write([(config_key(CONNECTOR_PREFIX, connector), None),
                     (config_key(TARGET_STATE_PREFIX, connector), None)])

    def put_task_configs(self, connector: str, configs: Sequence[Mapping[str, str]]) -> None:
        tasks = [(config_key(TASK_PREFIX, connector, n), formats.properties_value(c, "task config"))
                 for n, c in enumerate(configs)]
        commit = (config_key(COMMIT_PREFIX, connector), formats.commit_value(len(tasks)))
        with self._write_lock:
            # Every task config is acknowledged before the commit that makes them visible.
            self.kafka_log.send_all(tasks, self._timeout_s)
            self._write([commit])

    def put_target_state(self, connector: str, state: TargetState) -> None:
        self._write([(config_key(TARGET_STATE_PREFIX, connector),
                      formats.target_state_value(state))])

    def put_restart_request(self, connector: str, include_tasks: bool = False,
                            only_failed: bool = False) -> None:
        """KIP-745: every worker's listener gets ``ConfigUpdate("restart", ...)``."""
        self._write([(config_key(RESTART_PREFIX, connector),
                      formats.restart_value(include_tasks, only_failed))])

    def _write(self, records: list[tuple[bytes, bytes | None]]) -> None:
        with self._write_lock:
            self.kafka_log.send_all(records, self._timeout_s)
            self.refresh()

    # --------------------------------------------------------------------------- reads

    def _on_record(self, record: LogRecord) -> None:
        decoded = formats.decode_config_record(record.key, record.value)
        with self._lock:
            self._offset = record.offset + 1
            update = None if decoded is None else self._apply(decoded, record.offset)
        if update is not None:
            self._emit(update)  # outside the lock: the listener may take a snapshot

    def _apply(self, record: ConfigRecord, offset: int) -> ConfigUpdate | None:
        state, connector = self._state, record.connector
        if record.kind == "worker-config":
            self._worker_config = WorkerConfigOverrides(offset, record.properties or {})
            return ConfigUpdate("worker_config", "", version=offset)
        if record.kind == "session-key":
            self._session_key = record.session_key
            return ConfigUpdate("session_key", "")
        if record.kind == "connector":
            if record.properties is None:
                state.connector_configs.pop(connector, None)
                state.task_configs.pop(connector, None)
                state.target_states.pop(connector, None)
                self._deferred.pop(connector, None)
            else:
                state.connector_configs[connector] = record.properties
            return ConfigUpdate("connector", connector)
        if record.kind == "task" and record.properties is not None:
            self._deferred.setdefault(connector, {})[record.number] = record.properties
        elif record.kind == "commit":
            return self._commit(connector, record.number)
        elif record.kind == "target-state":
            if record.state is None:
                state.target_states.pop(connector, None)
                return None  # the connector's own removal is what the herder acts on
            previous = state.target_states.get(connector)
            state.target_states[connector] = record.state
            if previous is not record.state and connector in state.connector_configs:
                return ConfigUpdate("target_state", connector)
        elif record.kind == "restart":
            return ConfigUpdate("restart", connector, restart=record.restart)
        else:
            log.debug("Ignoring config topic record %r (not used by this worker)", connector)
        return None

    def _commit(self, connector: str, count: int) -> ConfigUpdate | None:
        # Always drop the buffer: a later commit must see a complete, fresh set.
        deferred = self._deferred.pop(connector, {})
        missing = [n for n in range(count) if n not in deferred]
        if missing:
            log.warning("Ignoring the task commit of connector %r: task config(s) %s of %d "
                        "are missing (e.g. compacted away); keeping its previous tasks until "
                        "they are rewritten", connector, missing, count)
            return None
        if count:
            self._state.task_configs[connector] = [deferred[n] for n in range(count)]
        else:
            self._state.task_configs.pop(connector, None)
        return ConfigUpdate("tasks", connector)
