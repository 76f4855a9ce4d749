"""Typed answers of Kafka Connect's REST API, as the hooks return them.

Each answer is a small frozen dataclass built by ``from_json`` from the parsed body, which
raises :class:`~airflow_provider.exceptions.MalformedResponseError` naming what is wrong
when the body does not have Kafka Connect's shape (the hooks add the request to the
message). ``to_dict()`` gives the JSON form, for XCom: the answer exactly as Kafka Connect
sent it, including fields not modelled here (newer Connect versions add some, e.g. the
connector's ``version``), so XCom values keep their shape; an answer built by hand renders
its fields in Connect's spelling.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from airflow_provider.exceptions import MalformedResponseError

# The answers of connect-plane's /admin/ extensions live in their own module and are
# importable from here too.
from airflow_provider.hooks.admin_results import AppliedWorkerConfig as AppliedWorkerConfig
from airflow_provider.hooks.admin_results import CertificateInfo as CertificateInfo
from airflow_provider.hooks.admin_results import ClusterMember as ClusterMember
from airflow_provider.hooks.admin_results import ClusterMembers as ClusterMembers
from airflow_provider.hooks.admin_results import DynamicConfigValidation as DynamicConfigValidation
from airflow_provider.hooks.admin_results import LastValidation as LastValidation
from airflow_provider.hooks.admin_results import WorkerConfigOverrides as WorkerConfigOverrides
from airflow_provider.hooks.admin_results import WorkerListener as WorkerListener
from airflow_provider.hooks.admin_results import WorkerReport as WorkerReport
from airflow_provider.utils.answers import (
    ConnectAnswer,
    check_config,
    check_int,
    check_list,
    check_object,
    check_opt_str,
    check_str,
    present,
)
from airflow_provider.utils.connector_state import TaskState

# --------------------------------------------------------------------------- the worker


@dataclass(frozen=True)
class ServerInfo(ConnectAnswer):
    """``GET /``: the worker's Kafka Connect version."""

    version: str
    commit: str | None = None
    kafka_cluster_id: str | None = None

    @classmethod
    def from_json(cls, body: Any) -> ServerInfo:
        data = check_object(body, "the server info")
        what = "the server info"
        return cls(check_str(data, "version", what), check_opt_str(data, "commit", what),
                   check_opt_str(data, "kafka_cluster_id", what), raw=data)

    def _fields(self) -> dict[str, Any]:
        return present(version=self.version, commit=self.commit,
                        kafka_cluster_id=self.kafka_cluster_id)


@dataclass(frozen=True)
class WorkerHealth(ConnectAnswer):
    """``GET /health`` (KIP-1017): ``status`` is ``healthy``, ``starting`` or
    ``unhealthy``."""

    status: str
    message: str | None = None

    @classmethod
    def from_json(cls, body: Any) -> WorkerHealth:
        data = check_object(body, "the worker health")
        return cls(check_str(data, "status", "the worker health"),
                   check_opt_str(data, "message", "the worker health"), raw=data)

    def _fields(self) -> dict[str, Any]:
        return present(status=self.status, message=self.message)


# --------------------------------------------------------------------------- connectors


@dataclass(frozen=True)
class TaskId(ConnectAnswer):
    """A task of a connector: ``{"connector", "task"}``."""

    connector: str
    task: int

    @classmethod
    def from_json(cls, body: Any) -> TaskId:
        data = check_object(body, "a task id")
        return cls(check_str(data, "connector", "a task id"), check_int(data, "task", "a task id"),
                   raw=data)

    def _fields(self) -> dict[str, Any]:
        return {"connector": self.connector, "task": self.task}


@dataclass(frozen=True)
class ConnectorInfo(ConnectAnswer):
    """``GET /connectors/{c}``, and the answer of creating or reconfiguring a connector:
    its name, config, tasks and type (``source`` / ``sink``)."""

    name: str
    config: Mapping[str, str]
    tasks: tuple[TaskId, ...] = ()
    type: str | None = None

    @classmethod
    def from_json(cls, body: Any) -> ConnectorInfo:
        what = "the connector info"
        data = check_object(body, what)
        return cls(check_str(data, "name", what),
                   check_config(data.get("config"), f"{what}'s config"),
                   tuple(TaskId.from_json(task) for task in check_list(data, "tasks", what)),
                   check_opt_str(data, "type", what), raw=data)

    def _fields(self) -> dict[str, Any]:
        return {"name": self.name, "config": dict(self.config),
                "tasks": [task.to_dict() for task in self.tasks], **present(type=self.type)}


@dataclass(frozen=True)
class TaskInfo(ConnectAnswer):
    """One entry of ``GET /connectors/{c}/tasks``: a task's id and config."""

    id: TaskId
    config: Mapping[str, str]

    @classmethod
    def from_json(cls, body: Any) -> TaskInfo:
        data = check_object(body, "a task")
        return cls(TaskId.from_json(data.get("id")), check_config(data.get("config"),
                                                              "a task's config"), raw=data)

    def _fields(self) -> dict[str, Any]:
        return {"id": self.id.to_dict(), "config": dict(self.config)}


@dataclass(frozen=True)
class _StateAnswer(ConnectAnswer):
    """A state as Connect reports it: the state, the worker running the connector or task,
    and the trace of a FAILED one."""

    state: str
    worker_id: str | None = None
    trace: str | None = None

    @staticmethod
    def _state_fields(data: Mapping[str, Any], what: str) -> dict[str, Any]:
        return {"state": check_str(data, "state", what),
                "worker_id": check_opt_str(data, "worker_id", what),
                "trace": check_opt_str(data, "trace", what)}

    def as_state(self) -> TaskState:
        """The state as :func:`~airflow_provider.utils.connector_state.evaluate` takes it."""
        return TaskState(self.state, self.trace, self.worker_id)

    def _fields(self) -> dict[str, Any]:
        return present(state=self.state, worker_id=self.worker_id, trace=self.trace)


@dataclass(frozen=True)
class ConnectorState(_StateAnswer):
    """The connector's part of its status."""

    @classmethod
    def from_json(cls, body: Any) -> ConnectorState:
        what = "the connector's status"
        data = check_object(body, what)
        return cls(**cls._state_fields(data, what), raw=data)


@dataclass(frozen=True)
class TaskStatus(_StateAnswer):
    """A task's status (an entry of the connector's, or ``GET .../tasks/{t}/status``):
    ``TaskStatus("RUNNING", "w:8083", id=0)``."""

    id: int = field(kw_only=True)

    @classmethod
    def from_json(cls, body: Any) -> TaskStatus:
        what = "a task's status"
        data = check_object(body, what)
        return cls(**cls._state_fields(data, what), id=check_int(data, "id", what), raw=data)

    def _fields(self) -> dict[str, Any]:
        return {"id": self.id, **super()._fields()}


@dataclass(frozen=True)
class ConnectorStatus(ConnectAnswer):
    """``GET /connectors/{c}/status`` (also the 202 answer of a restart with
    ``includeTasks`` or ``onlyFailed``)."""

    name: str
    connector: ConnectorState
    tasks: tuple[TaskStatus, ...] = ()
    type: str | None = None

    @classmethod
    def from_json(cls, body: Any) -> ConnectorStatus:
        what = "the connector status"
        data = check_object(body, what)
        return cls(check_str(data, "name", what), ConnectorState.from_json(data.get("connector")),
                   tuple(TaskStatus.from_json(task) for task in check_list(data, "tasks", what)),
                   check_opt_str(data, "type", what), raw=data)

    @property
    def state(self) -> str:
        """The connector's own state."""
        return self.connector.state

    def task_states(self) -> dict[int, TaskState]:
        """``{task id: state}``, as :func:`~airflow_provider.utils.connector_state.evaluate`
        takes them."""
        return {task.id: task.as_state() for task in self.tasks}

    def _fields(self) -> dict[str, Any]:
        return {"name": self.name, "connector": self.connector.to_dict(),
                "tasks": [task.to_dict() for task in self.tasks], **present(type=self.type)}


# --------------------------------------------------------------------------- offsets


@dataclass(frozen=True)
class ConnectorOffset(ConnectAnswer):
    """One partition's offset (KIP-875). ``offset`` is ``None`` when altering resets the
    partition."""

    partition: Mapping[str, Any]
    offset: Mapping[str, Any] | None

    @classmethod
    def from_json(cls, body: Any) -> ConnectorOffset:
        what = "an offset entry"
        data = check_object(body, what)
        offset = data.get("offset")
        return cls(check_object(data.get("partition"), f"{what}'s partition"),
                   None if offset is None else check_object(offset, f"{what}'s offset"), raw=data)

    def _fields(self) -> dict[str, Any]:
        return {"partition": copy.deepcopy(dict(self.partition)),
                "offset": None if self.offset is None else copy.deepcopy(dict(self.offset))}


@dataclass(frozen=True)
class ConnectorOffsets(ConnectAnswer):
    """``GET /connectors/{c}/offsets``: the committed offset of every partition."""

    offsets: tuple[ConnectorOffset, ...] = ()

    @classmethod
    def from_json(cls, body: Any) -> ConnectorOffsets:
        data = check_object(body, "the offsets")
        return cls(tuple(ConnectorOffset.from_json(entry)
                         for entry in check_list(data, "offsets", "the offsets")), raw=data)

    def to_list(self) -> list[dict[str, Any]]:
        """``[{"partition", "offset"}]``: what the operators push to XCom, and what
        ``alter_offsets`` takes back."""
        return [entry.to_dict() for entry in self.offsets]

    def _fields(self) -> dict[str, Any]:
        return {"offsets": self.to_list()}


@dataclass(frozen=True)
class Message(ConnectAnswer):
    """``{"message"}``: Connect's answer to altering or resetting offsets."""

    message: str

    @classmethod
    def from_json(cls, body: Any) -> Message:
        data = check_object(body, "the answer")
        return cls(check_str(data, "message", "the answer"), raw=data)

    def _fields(self) -> dict[str, Any]:
        return {"message": self.message}


# --------------------------------------------------------------------------- plugins


@dataclass(frozen=True)
class PluginInfo(ConnectAnswer):
    """An entry of ``GET /connector-plugins``: the plugin's canonical class name (``class``
    in Connect's JSON: a Python keyword, hence ``class_name``), its type (``source``,
    ``sink``, ``converter``, ``header_converter``, ``transformation``, ``predicate``) and
    version."""

    class_name: str
    type: str
    version: str | None = None

    @classmethod
    def from_json(cls, body: Any) -> PluginInfo:
        what = "a connector plugin"
        data = check_object(body, what)
        return cls(check_str(data, "class", what), check_str(data, "type", what),
                   check_opt_str(data, "version", what), raw=data)

    def _fields(self) -> dict[str, Any]:
        return {"class": self.class_name, "type": self.type, **present(version=self.version)}


# --------------------------------------------------------------------------- validation


@dataclass(frozen=True)
class ConfigValidation(ConnectAnswer):
    """``PUT /connector-plugins/{p}/config/validate``: an invalid config is a 200 with
    ``error_count > 0``. ``configs`` are Connect's entries (definition and value of each
    key) as sent; :attr:`errors` lists their errors."""

    name: str | None
    error_count: int
    groups: tuple[str, ...] = ()
    configs: tuple[Mapping[str, Any], ...] = ()

    @classmethod
    def from_json(cls, body: Any) -> ConfigValidation:
        what = "the validation result"
        data = check_object(body, what)
        groups = data.get("groups") or []
        if not isinstance(groups, list) or not all(isinstance(g, str) for g in groups):
            raise MalformedResponseError(f"{what}: 'groups' is not a list of strings")
        configs = tuple(check_object(entry, f"{what}'s config entry")
                        for entry in check_list(data, "configs", what))
        return cls(check_opt_str(data, "name", what), check_int(data, "error_count", what),
                   tuple(groups), configs, raw=data)

    @property
    def errors(self) -> list[str]:
        """Every error, as ``"key: message"``."""
        errors = []
        for entry in self.configs:
            value = entry.get("value") or {}
            for message in value.get("errors") or ():
                errors.append(f"{value.get('name')}: {message}")
        return errors

    def _fields(self) -> dict[str, Any]:
        return {**present(name=self.name), "error_count": self.error_count,
                "groups": list(self.groups), "configs": copy.deepcopy(list(self.configs))}


def config_map(body: Any) -> dict[str, str]:
    """``GET /connectors/{c}/config``: the stored config."""
    return check_config(body, "the connector config")
