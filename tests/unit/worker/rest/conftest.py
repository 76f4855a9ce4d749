"""An in-memory Herder and a TestClient over ``create_app`` for the REST unit tests.

``FakeHerder`` follows the Herder contract (errors, messages) closely enough to exercise
every route, and records the calls REST makes so tests can check what was passed down.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from fastapi.testclient import TestClient

from worker.api.task import partition_key
from worker.config.dynamic import DynamicConfigManager, merge
from worker.config.reconfigurable import Reconfigurable
from worker.config.worker_config import WorkerConfig
from worker.errors import (
    AlreadyExistsError,
    BadRequestError,
    ConfigError,
    ConfigValidationError,
    ForbiddenError,
    NotFoundError,
)
from worker.herder import offset_requests as herder_offsets
from worker.herder.base import Herder, TargetState, TaskId
from worker.herder.models import (
    AbstractState,
    ClusterInfo,
    ClusterMemberInfo,
    ConfigInfo,
    ConfigInfos,
    ConfigKeyInfo,
    ConfigValueInfo,
    ConnectorInfo,
    ConnectorOffset,
    ConnectorOffsets,
    ConnectorStateInfo,
    ConnectorType,
    Created,
    HealthStatus,
    LoggerLevel,
    LoggerScope,
    Message,
    PluginInfo,
    ServerInfo,
    TaskInfo,
    TaskState,
    WorkerConfigValidation,
    WorkerInfo,
)
from worker.rest.app import create_app
from worker.runtime.loggers import python_level

WORKER_ID = "127.0.0.1:8083"
_STATE_OF = {TargetState.STARTED: "RUNNING", TargetState.PAUSED: "PAUSED",
             TargetState.STOPPED: "STOPPED"}

NAME_KEY = ConfigKeyInfo("name", "STRING", True, None, "HIGH", "Connector name", "Common",
                         1, "MEDIUM", "Connector name", [])
PLUGINS = [
    PluginInfo("org.apache.kafka.connect.file.FileStreamSinkConnector", "sink", "4.0.0",
               ["FileStreamSink"]),
    PluginInfo("org.apache.kafka.connect.file.FileStreamSourceConnector", "source", "4.0.0"),
    PluginInfo("org.apache.kafka.connect.json.JsonConverter", "converter", "undefined"),
]


#: The TLS settings of the listeners: what the real REST server can change at run time.
TLS_KEYS = frozenset(
    f"{prefix}ssl.{name}" for prefix in ("listeners.https.", "admin.listeners.https.")
    for name in ("keystore.location", "keystore.password", "keystore.type", "key.password",
                 "truststore.location", "truststore.password", "truststore.type",
                 "enabled.protocols", "cipher.suites", "client.auth"))
KEYSTORE = "listeners.https.ssl.keystore.location"


class FakeTlsListener(Reconfigurable):
    """Takes the TLS keys; a keystore location containing ``missing`` does not exist."""

    def __init__(self) -> None:
        self.applied: list[dict[str, str]] = []

    def reconfigurable_configs(self) -> frozenset[str]:
        return TLS_KEYS

    def validate_reconfiguration(self, configs: Mapping[str, str]) -> None:
        if "missing" in configs.get(KEYSTORE, ""):
            raise ConfigError(KEYSTORE, "the keystore file does not exist")

    def reconfigure(self, configs: Mapping[str, str]) -> None:
        self.applied.append(dict(configs))


class FakeHerder(Herder):
    """Connectors in a dict; one task per connector unless ``tasks.max`` says otherwise.
    The dynamic worker configuration goes through the real manager, over a fake listener."""

    def __init__(self) -> None:
        self.configs: dict[str, dict[str, str]] = {}
        self.targets: dict[str, TargetState] = {}
        self.traces: dict[TaskId, str] = {}
        self.calls: list[tuple[Any, ...]] = []
        self.offsets: dict[str, list[ConnectorOffset]] = {}
        self.topics: dict[str, list[str]] = {}
        self.levels: dict[str, LoggerLevel] = {"root": LoggerLevel("INFO")}
        self.listener = FakeTlsListener()
        self.dynamic = DynamicConfigManager.for_worker(WorkerConfig({
            "listeners": "https://127.0.0.1:8443", "config.providers": "env",
            "config.providers.env.class": "EnvVarConfigProvider"}))
        self.dynamic.register(self.listener)
        self.worker_overrides: dict[str, str] = {}
        self.worker_config_version = 0

    # --- helpers -------------------------------------------------------------------------

    def add(self, name: str, **config: str) -> None:
        """Create a connector directly, bypassing REST."""
        self.configs[name] = {"connector.class": "FileStreamSource", "name": name, **config}
        self.targets[name] = TargetState.STARTED

    def _require(self, name: str) -> dict[str, str]:
        if name not in self.configs:
            raise NotFoundError(f"Connector {name} not found")
        return self.configs[name]

    def _tasks(self, name: str) -> list[TaskId]:
        return [TaskId(name, n) for n in range(int(self.configs[name].get("tasks.max", "1")))]

    def _type(self, name: str) -> ConnectorType:
        sink = "Sink" in self.configs[name].get("connector.class", "")
        return ConnectorType.SINK if sink else ConnectorType.SOURCE

    # --- Herder --------------------------------------------------------------------------

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass

    def server_info(self) -> ServerInfo:
        return ServerInfo("4.0.0", "0123456789abcdef", "cluster-1")

    def connectors(self) -> list[str]:
        return sorted(self.configs)

    def connector_info(self, name: str) -> ConnectorInfo:
        config = self._require(name)
        return ConnectorInfo(name, dict(config), self._tasks(name), self._type(name))

    def connector_config(self, name: str) -> dict[str, str]:
        return dict(self._require(name))

    def connector_status(self, name: str) -> ConnectorStateInfo:
        self._require(name)
        state = _STATE_OF[self.targets[name]]
        tasks = [self.task_status(task) for task in self._tasks(name)]
        if self.targets[name] is TargetState.STOPPED:
            tasks = []
        return ConnectorStateInfo(name, AbstractState(state, WORKER_ID), tasks,
                                  self._type(name))

    def task_configs(self, name: str) -> list[TaskInfo]:
        config = self._require(name)
        return [TaskInfo(task, {"task.class": "FileStreamSourceTask", **config})
                for task in self._tasks(name)]

    def task_status(self, task: TaskId) -> TaskState:
        if task.connector not in self.configs or task not in self._tasks(task.connector):
            raise NotFoundError(f"No status found for task {task.connector}-{task.task}")
        trace = self.traces.get(task)
        state = "FAILED" if trace else _STATE_OF[self.targets[task.connector]]
        return TaskState(state, WORKER_ID, trace, task.task)

    def put_connector_config(self, name: str, config: Mapping[str, str], *,
                             allow_replace: bool,
                             initial_state: TargetState | None = None) -> Created:
        self.calls.append(("put", name, dict(config), allow_replace, initial_state))
        if not name:
            raise ConfigValidationError(
                "Connector configuration is invalid and contains the following 1 error(s):\n"
                "Invalid value  for configuration name: String may not be empty\n"
                "You can also find the above list of errors at the endpoint "
                "`/connector-plugins/{connectorType}/config/validate`",
                {"name": ["Invalid value  for configuration name: String may not be empty"]})
        exists = name in self.configs
        if exists and not allow_replace:
            raise AlreadyExistsError(f"Connector {name} already exists")
        self.configs[name] = dict(config)
        if not exists:
            self.targets[name] = initial_state or TargetState.STARTED
        return Created(not exists, self.connector_info(name))

    def patch_connector_config(self, name: str, patch: Mapping[str, str | None]
                               ) -> ConnectorInfo:
        self.calls.append(("patch", name, dict(patch)))
        config = self._require(name)
        for key, value in patch.items():
            if value is None:
                config.pop(key, None)
            else:
                config[key] = value
        return self.connector_info(name)

    def delete_connector(self, name: str) -> None:
        self._require(name)
        del self.configs[name], self.targets[name]

    def restart_connector(self, name: str, *, include_tasks: bool = False,
                          only_failed: bool = False) -> ConnectorStateInfo | None:
        self.calls.append(("restart", name, include_tasks, only_failed))
        self._require(name)
        if not include_tasks and not only_failed:
            return None
        status = self.connector_status(name)
        tasks = [TaskState("RESTARTING", WORKER_ID, None, t.id) for t in status.tasks]
        return ConnectorStateInfo(name, AbstractState("RESTARTING", WORKER_ID), tasks,
                                  status.type)

    def restart_task(self, task: TaskId) -> None:
        self.task_status(task)
        self.calls.append(("restart_task", task))

    def pause_connector(self, name: str) -> None:
        self._require(name)
        self.targets[name] = TargetState.PAUSED

    def resume_connector(self, name: str) -> None:
        self._require(name)
        self.targets[name] = TargetState.STARTED

    def stop_connector(self, name: str) -> None:
        self._require(name)
        self.targets[name] = TargetState.STOPPED

    def validate_connector_config(self, config: Mapping[str, str]) -> ConfigInfos:
        self.calls.append(("validate", dict(config)))
        if not config.get("connector.class"):
            raise BadRequestError("Connector config {topics} contains no connector type")
        name = config.get("name")
        errors = [] if name else ['Missing required configuration "name" which has no '
                                  "default value."]
        value = ConfigValueInfo("name", name, [], errors)
        return ConfigInfos(config["connector.class"], len(errors), ["Common"],
                           [ConfigInfo(NAME_KEY, value)])

    def plugins(self, connectors_only: bool = True) -> list[PluginInfo]:
        self.calls.append(("plugins", connectors_only))
        if connectors_only:
            return [p for p in PLUGINS if p.type in ("source", "sink")]
        return list(PLUGINS)

    def plugin_config(self, plugin: str) -> list[ConfigKeyInfo]:
        if plugin not in {p.class_name for p in PLUGINS} | {"FileStreamSink"}:
            raise NotFoundError(f"Unknown plugin {plugin}.")
        return [NAME_KEY]


    # --- KIP-875 offsets: kept per connector; only STOPPED connectors may change them ----
    # Validation and messages are the real ones (worker.herder.offset_requests).

    def connector_offsets(self, name: str) -> ConnectorOffsets:
        self._require(name)
        return ConnectorOffsets(list(self.offsets.get(name, [])))

    def alter_connector_offsets(self, name: str, offsets: list[ConnectorOffset]) -> Message:
        self._require(name)
        self._require_stopped(name)
        if self._type(name) is ConnectorType.SINK:
            herder_offsets.parse_sink_offsets(offsets)
        else:
            herder_offsets.parse_source_offsets(offsets)
        self.calls.append(("alter_offsets", name, offsets))
        changed = {partition_key(o.partition or {}): o for o in offsets}
        kept = [o for o in self.offsets.get(name, [])
                if partition_key(o.partition) not in changed]
        self.offsets[name] = kept + [o for o in changed.values() if o.offset is not None]
        return herder_offsets.success_message(accepted=True, reset=False)

    def reset_connector_offsets(self, name: str) -> Message:
        self._require(name)
        self._require_stopped(name)
        self.calls.append(("reset_offsets", name))
        self.offsets.pop(name, None)
        return herder_offsets.success_message(accepted=False, reset=True)

    def _require_stopped(self, name: str) -> None:
        if self.targets[name] is not TargetState.STOPPED:
            raise herder_offsets.not_stopped(name)

    # --- KIP-558 topics, KIP-495 loggers, KIP-1017 health -------------------------------
    # Contract of the real herder: an unknown connector has no topics (no 404); the
    # tracking flags stand for topic.tracking.enable / topic.tracking.allow.reset; level
    # names are checked by the real parser (404 "invalid log level").

    tracking_enabled = True
    reset_allowed = True
    health_status = HealthStatus("healthy", "Worker has completed startup and is ready to "
                                            "handle requests.")

    def connector_active_topics(self, name: str) -> list[str]:
        if not self.tracking_enabled:
            raise ForbiddenError("Topic tracking is disabled.")
        return sorted(self.topics.get(name, []))

    def reset_connector_active_topics(self, name: str) -> None:
        if not self.tracking_enabled:
            raise ForbiddenError("Topic tracking is disabled.")
        if not self.reset_allowed:
            raise ForbiddenError("Topic tracking reset is disabled.")
        self.calls.append(("reset_topics", name))
        self.topics.pop(name, None)

    def loggers(self) -> dict[str, LoggerLevel]:
        return dict(self.levels)

    def logger_level(self, logger: str) -> LoggerLevel:
        if logger not in self.levels:
            raise NotFoundError(f"Logger {logger} not found.")
        return self.levels[logger]

    def set_logger_level(self, logger: str, level: str, scope: LoggerScope
                         ) -> list[str] | None:
        python_level(level)
        self.calls.append(("set_logger_level", logger, level, scope))
        self.levels[logger] = LoggerLevel(level.upper(), 0)
        return None if scope is LoggerScope.CLUSTER else [logger]

    def health(self) -> HealthStatus:
        return self.health_status

    # --- the dynamic worker configuration, /admin/worker, /admin/cluster -----------------
    # As ThreadedHerder: the whitelist and validation are the manager's; a write stores a
    # new version and applies it at once.

    def worker_config_overrides(self) -> dict[str, str]:
        return dict(self.worker_overrides)

    def validate_worker_config(self, patch: Mapping[str, str | None]
                               ) -> WorkerConfigValidation:
        self.calls.append(("validate_worker_config", dict(patch)))
        self.dynamic.check_request(patch, self.worker_overrides)
        errors = self.dynamic.validate(merge(self.worker_overrides, patch))
        return WorkerConfigValidation(sum(len(e) for e in errors.values()), errors)

    def patch_worker_config(self, patch: Mapping[str, str | None]) -> dict[str, str]:
        self.calls.append(("patch_worker_config", dict(patch)))
        self.dynamic.check_request(patch, self.worker_overrides)
        merged = merge(self.worker_overrides, patch)
        self._store_worker_config(merged)
        return dict(merged)

    def delete_worker_config(self, name: str) -> None:
        self.calls.append(("delete_worker_config", name))
        if name not in self.worker_overrides:
            raise NotFoundError(f"No dynamic worker configuration override named {name}")
        self._store_worker_config({k: v for k, v in self.worker_overrides.items()
                                   if k != name})

    def _store_worker_config(self, overrides: dict[str, str]) -> None:
        self.dynamic.validate_or_raise(overrides)
        self.worker_config_version += 1
        self.worker_overrides = overrides
        self.dynamic.apply(self.worker_config_version, overrides)

    def worker_info(self) -> WorkerInfo:
        return WorkerInfo(WORKER_ID, f"http://{WORKER_ID}", self.dynamic.state())

    def cluster_info(self) -> ClusterInfo:
        url = f"http://{WORKER_ID}"
        return ClusterInfo(url, [ClusterMemberInfo(WORKER_ID, url)])


@pytest.fixture
def herder() -> FakeHerder:
    return FakeHerder()


@pytest.fixture
def client(herder: FakeHerder) -> Iterator[TestClient]:
    with TestClient(create_app(herder)) as test_client:
        yield test_client
