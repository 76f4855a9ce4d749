"""Apache Kafka Connect's record formats for the config, offset and status topics.

Values are what Kafka's ``JsonConverter`` writes with ``schemas.enable=false`` (compact
JSON, UTF-8); keys are UTF-8 strings, except offset keys, which are JSON
``["{connector}", {partition}]``. Checked against Kafka's ``KafkaConfigBackingStore``,
``KafkaStatusBackingStore`` and ``OffsetUtils``. Decoders return None for a record to skip:
a malformed one is logged at WARNING with its key only (values hold secrets).
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from worker.errors import StorageError
from worker.storage.base import (
    ConnectorStatus,
    State,
    TargetState,
    TaskId,
    TaskStatus,
    TopicStatus,
    string_map,
)

log = logging.getLogger(__name__)

CONNECTOR_PREFIX = "connector-"
TASK_PREFIX = "task-"
COMMIT_PREFIX = "commit-"
TARGET_STATE_PREFIX = "target-state-"
RESTART_PREFIX = "restart-connector-"
SESSION_KEY = "session-key"
WORKER_CONFIG_KEY = "worker-config"
# Kafka records we recognise but do not use: EOS task fencing, KIP-1004 logger levels.
OTHER_CONFIG_PREFIXES = ("tasks-fencing-", "logger-cluster-")
CONNECTOR_STATUS_PREFIX = "status-connector-"
TASK_STATUS_PREFIX = "status-task-"
TOPIC_STATUS_PREFIX = "status-topic-"
TOPIC_STATUS_SEPARATOR = ":connector-"


class _Malformed(Exception):
    """Why a record is skipped; the reason never quotes the value."""


def dumps(value: Any, what: str = "value", *, sort_keys: bool = False) -> bytes:
    """Compact JSON as Kafka's JsonConverter writes it (UTF-8, non-ASCII unescaped)."""
    try:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False,
                          sort_keys=sort_keys).encode("utf-8")
    except (TypeError, ValueError) as exc:  # UnicodeEncodeError is a ValueError
        raise StorageError(f"{what} is not JSON-serialisable") from exc


def _text(key: bytes | None) -> str:
    if key is None:
        raise _Malformed("the key is null")
    try:
        return key.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _Malformed("the key is not UTF-8") from exc


def _json(value: bytes | None) -> Any:
    if value is None:
        return None
    try:
        return json.loads(value)
    except ValueError as exc:  # also bad UTF-8
        raise _Malformed("the value is not JSON") from exc


def _object(data: Any, what: str) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise _Malformed(f"{what} is not a JSON object")
    return data


def _int(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _Malformed(f"{what} is not an integer")
    return value


def _task_number(rest: str) -> tuple[str, int]:
    """``{connector}-{n}`` split at the LAST '-' (connector names may hold '-')."""
    connector, sep, number = rest.rpartition("-")
    if not sep or not (number.isascii() and number.isdigit()):
        raise _Malformed("not a task key")
    return connector, int(number)


def _skip(topic: str, key: bytes | str | None, exc: _Malformed) -> None:
    log.warning("Skipping a malformed record of the %s topic with key %r: %s", topic, key, exc)


# --------------------------------------------------------------------------- config topic


@dataclass(frozen=True)
class RestartRequest:
    """KIP-745: restart a connector (and its tasks, or only the failed ones)."""

    connector: str
    include_tasks: bool = False
    only_failed: bool = False


@dataclass(frozen=True)
class SessionKey:
    """KIP-507: the key the leader distributes for signing internal requests. The key
    bytes never appear in a repr (or a log line)."""

    key: bytes = field(repr=False)
    algorithm: str  # the key generation algorithm, Java's name (e.g. HmacSHA256)
    creation_timestamp: int  # epoch milliseconds


class ConfigRecord(NamedTuple):
    """A config-topic record; ``kind`` names its key: connector, task, commit, target-state,
    restart, worker-config (``connector`` empty), session-key (``connector`` empty, with
    ``session_key``), or other (understood, not used (yet): task fencing, ...)."""

    kind: str
    connector: str
    # Connector, task or worker config; None: deleted (a worker-config tombstone: cleared).
    properties: dict[str, str] | None = None
    number: int = 0  # the task's number; a commit's task count
    state: TargetState | None = None  # None: reset
    restart: RestartRequest | None = None
    session_key: SessionKey | None = None


def config_key(prefix: str, connector: str, task: int | None = None) -> bytes:
    """``{prefix}{connector}``, e.g. ``connector-c``; ``task-{c}-{n}`` with ``task``."""
    return f"{prefix}{connector}{'' if task is None else f'-{task}'}".encode()


def properties_value(properties: Mapping[str, str], what: str) -> bytes:
    """``{"properties": {...}}`` of a connector or task config."""
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in properties.items()):
        raise StorageError(f"{what} keys and values must be strings")
    return dumps({"properties": dict(properties)}, what)


def commit_value(tasks: int) -> bytes:
    return dumps({"tasks": tasks})


def target_state_value(state: TargetState) -> bytes:
    """KIP-875's downgrade-safe form: workers without STOPPED read ``state`` (PAUSED)."""
    state = TargetState(state)
    legacy = TargetState.PAUSED if state is TargetState.STOPPED else state
    return dumps({"state": legacy.value, "state.v2": state.value})


def restart_value(include_tasks: bool, only_failed: bool) -> bytes:
    return dumps({"include-tasks": bool(include_tasks), "only-failed": bool(only_failed)})


#: Format version of the ``worker-config`` record (the draft KIP-1185's
#: WORKER_CONFIGURATION_V0).
WORKER_CONFIG_FORMAT = 0


def worker_config_key() -> bytes:
    return WORKER_CONFIG_KEY.encode()


def worker_config_value(properties: Mapping[str, str]) -> bytes | None:
    """``{"version": 0, "properties": {...}}``, like the other config-topic records (no
    schema envelope); no overrides at all is a tombstone (None)."""
    if not properties:
        return None
    return dumps({"version": WORKER_CONFIG_FORMAT,
                  "properties": string_map(properties, "worker config")}, "worker config")


def session_key_key() -> bytes:
    return SESSION_KEY.encode()


def session_key_value(session_key: SessionKey) -> bytes:
    """Kafka's ``SESSION_KEY_V0``: ``{"key": base64, "algorithm", "creation-timestamp"}``."""
    return dumps({"key": base64.b64encode(session_key.key).decode("ascii"),
                  "algorithm": session_key.algorithm,
                  "creation-timestamp": session_key.creation_timestamp}, "session key")


def decode_config_record(key: bytes | None, value: bytes | None) -> ConfigRecord | None:
    """The config-topic record, or None to skip it."""
    try:
        return _config_record(_text(key), _json(value))
    except _Malformed as exc:
        _skip("config", key, exc)
        return None


def _config_record(key: str, data: Any) -> ConfigRecord | None:
    if key.startswith(TARGET_STATE_PREFIX):
        return ConfigRecord("target-state", key[len(TARGET_STATE_PREFIX):],
                            state=None if data is None else _target_state(data))
    if key.startswith(CONNECTOR_PREFIX):
        return ConfigRecord("connector", key[len(CONNECTOR_PREFIX):],
                            None if data is None else _properties(data))
    if key.startswith(TASK_PREFIX):
        connector, task = _task_number(key[len(TASK_PREFIX):])
        if data is None:
            raise _Malformed("a task config is unexpectedly null")
        return ConfigRecord("task", connector, _properties(data), task)
    if key.startswith(COMMIT_PREFIX):
        tasks = _int(_object(data, "a task commit").get("tasks"), "'tasks'")
        if tasks < 0:
            raise _Malformed("'tasks' is negative")
        return ConfigRecord("commit", key[len(COMMIT_PREFIX):], number=tasks)
    if key.startswith(RESTART_PREFIX):
        connector = key[len(RESTART_PREFIX):]
        if data is None:
            return None
        return ConfigRecord("restart", connector, restart=_restart(connector, data))
    if key == WORKER_CONFIG_KEY:
        return ConfigRecord("worker-config", "",
                            None if data is None else _worker_config(data))
    if key == SESSION_KEY:
        return ConfigRecord("session-key", "", session_key=_session_key(data))
    if key.startswith(OTHER_CONFIG_PREFIXES):
        return ConfigRecord("other", key)
    raise _Malformed("unknown key")


def _properties(data: Any) -> dict[str, str]:
    properties = _object(_object(data, "the value").get("properties"), "'properties'")
    # Kafka's schema allows null values; such a key is simply not set.
    if not all(isinstance(v, str) for v in properties.values() if v is not None):
        raise _Malformed("'properties' holds a value that is not a string")
    return {k: v for k, v in properties.items() if v is not None}


def _worker_config(data: Any) -> dict[str, str]:
    # A later format version may add fields; its properties still read the same.
    if _int(_object(data, "the value").get("version"), "'version'") < 0:
        raise _Malformed("'version' is negative")
    return _properties(data)


def _session_key(data: Any) -> SessionKey:
    if data is None:
        raise _Malformed("a session key is unexpectedly null")
    data = _object(data, "a session key")
    encoded, algorithm = data.get("key"), data.get("algorithm")
    if not isinstance(encoded, str) or not isinstance(algorithm, str):
        raise _Malformed("'key' or 'algorithm' is not a string")
    try:
        key = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise _Malformed("'key' is not base64") from exc
    return SessionKey(key, algorithm, _int(data.get("creation-timestamp"),
                                           "'creation-timestamp'"))


def _target_state(data: Any) -> TargetState:
    data = _object(data, "a target state")
    state = data.get("state.v2")
    if not isinstance(state, str):  # written by a worker that predates KIP-875
        state = data.get("state")
    if not isinstance(state, str) or state not in TargetState.__members__:
        raise _Malformed("unknown target state")
    return TargetState(state)


def _restart(connector: str, data: Any) -> RestartRequest:
    data = _object(data, "a restart request")
    flags = [data.get("include-tasks"), data.get("only-failed")]
    if not all(isinstance(flag, bool) for flag in flags):  # Kafka's default: false
        log.warning("Restart request of connector %r: a flag is not a boolean; using false",
                    connector)
    return RestartRequest(connector, flags[0] is True, flags[1] is True)


# --------------------------------------------------------------------------- offset topic


class OffsetRecord(NamedTuple):
    connector: str
    partition: dict[str, Any]
    offset: dict[str, Any] | None  # None: reset


def offset_key(connector: str, partition: Mapping[str, Any]) -> bytes:
    """``["{connector}",{partition}]``; sorted keys, so one partition is always one key."""
    return dumps([connector, dict(partition)], "source partition", sort_keys=True)


def offset_value(offset: Mapping[str, Any] | None) -> bytes | None:
    return None if offset is None else dumps(dict(offset), "source offset")


def decode_offset_record(key: bytes | None, value: bytes | None) -> OffsetRecord | None:
    try:
        parts = _json(key)
        if (not isinstance(parts, list) or len(parts) != 2 or not isinstance(parts[0], str)
                or not isinstance(parts[1], dict | None)):
            raise _Malformed("the key is not [connector, partition]")
        if parts[1] is None:  # Kafka ignores these too
            return None
        offset = _json(value)
        return OffsetRecord(parts[0], parts[1],
                            None if offset is None else _object(offset, "the offset"))
    except _Malformed as exc:
        _skip("offset", key, exc)
        return None


# --------------------------------------------------------------------------- status topic


class StatusKey(NamedTuple):
    kind: str  # "connector", "task" or "topic"
    connector: str
    task: int | None = None
    topic: str | None = None


Status = ConnectorStatus | TaskStatus | TopicStatus


class StatusRecord(NamedTuple):
    key: StatusKey
    status: Status | None  # None: deleted


def status_key(key: StatusKey) -> bytes:
    if key.kind == "connector":
        return f"{CONNECTOR_STATUS_PREFIX}{key.connector}".encode()
    if key.kind == "task":
        return f"{TASK_STATUS_PREFIX}{key.connector}-{key.task}".encode()
    return f"{TOPIC_STATUS_PREFIX}{key.topic}{TOPIC_STATUS_SEPARATOR}{key.connector}".encode()


def status_value(status: ConnectorStatus | TaskStatus) -> bytes:
    """Field order and the explicit ``"trace":null`` are JsonConverter's."""
    return dumps({"state": State(status.state).value, "trace": status.trace,
                  "worker_id": status.worker_id, "generation": status.generation}, "status")


def topic_status_value(status: TopicStatus) -> bytes:
    return dumps({"topic": {"name": status.topic, "connector": status.connector,
                            "task": status.task,
                            "discoverTimestamp": status.discover_timestamp}}, "topic status")


def decode_status_record(key: bytes | None, value: bytes | None) -> StatusRecord | None:
    try:
        skey = _status_key(_text(key))
        data = _json(value)
        return StatusRecord(skey, None if data is None else _status(skey, data))
    except _Malformed as exc:
        _skip("status", key, exc)
        return None


def _status_key(key: str) -> StatusKey:
    if key.startswith(CONNECTOR_STATUS_PREFIX):
        return StatusKey("connector", key[len(CONNECTOR_STATUS_PREFIX):])
    if key.startswith(TASK_STATUS_PREFIX):
        connector, task = _task_number(key[len(TASK_STATUS_PREFIX):])
        return StatusKey("task", connector, task=task)
    if key.startswith(TOPIC_STATUS_PREFIX):
        topic, sep, connector = key[len(TOPIC_STATUS_PREFIX):].partition(TOPIC_STATUS_SEPARATOR)
        if sep and topic and connector:  # topic names cannot hold ':'
            return StatusKey("topic", connector, topic=topic)
    raise _Malformed("not a status key")


def _status(key: StatusKey, data: Any) -> Status:
    data = _object(data, "the value")
    if key.kind == "topic" and key.topic is not None:
        inner = _object(data.get("topic"), "'topic'")
        if inner.get("name") != key.topic or inner.get("connector") != key.connector:
            raise _Malformed("the topic status does not match its key")
        return TopicStatus(key.topic, key.connector, _int(inner.get("task"), "'task'"),
                           _int(inner.get("discoverTimestamp"), "'discoverTimestamp'"))
    state, trace, worker = data.get("state"), data.get("trace"), data.get("worker_id")
    if not isinstance(state, str) or state not in State.__members__:
        raise _Malformed("unknown state")
    if not isinstance(worker, str) or not isinstance(trace, str | None):
        raise _Malformed("'worker_id' or 'trace' is not a string")
    generation = _int(data.get("generation"), "'generation'")
    if key.kind == "connector":
        return ConnectorStatus(key.connector, State(state), worker, generation, trace)
    assert key.task is not None
    return TaskStatus(TaskId(key.connector, key.task), State(state), worker, generation, trace)
