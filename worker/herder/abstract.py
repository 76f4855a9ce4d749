"""What every herder shares: reads from the stores, and config validation.

Validation follows Kafka's AbstractHerder: the connector-level keys (name, connector.class,
tasks.max, converters, transforms/predicates with their own keys, error handling, sink
topics), cross-key rules, then the connector's own ``validate`` — run on a separate thread
with a timeout because it is plugin code.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from typing import Any

from worker.api.config_def import ConfigDef, ConfigKey, ConfigValue
from worker.clients.checks import connector_client_errors
from worker.config.providers import has_placeholders
from worker.config.worker_config import WorkerConfig
from worker.errors import (
    BadRequestError,
    ConfigValidationError,
    ForbiddenError,
    NotFoundError,
    PluginNotFoundError,
    WorkerError,
)
from worker.herder import health as worker_health
from worker.herder.base import Herder
from worker.herder.models import (
    AbstractState,
    ConfigInfo,
    ConfigInfos,
    ConfigKeyInfo,
    ConfigValueInfo,
    ConnectorInfo,
    ConnectorStateInfo,
    ConnectorType,
    HealthStatus,
    LoggerLevel,
    LoggerScope,
    PluginInfo,
    TaskInfo,
    TaskState,
)
from worker.plugins.registry import CONNECTOR_TYPES, PluginRegistry, PluginType
from worker.runtime import connector_config as cc
from worker.runtime.loggers import Loggers
from worker.storage.base import (
    ClusterConfigState,
    ConfigBackingStore,
    StatusBackingStore,
    TaskId,
)
from worker.util.secrets import HIDDEN, KNOWN_SECRETS, Redactor, is_secret, secret_values
from worker.util.threads import call_with_timeout

log = logging.getLogger(__name__)

VALIDATION_TIMEOUT_S = 90.0
CONVERTER_KEYS = ("key.converter", "value.converter", "header.converter")


def not_found(name: str) -> NotFoundError:
    return NotFoundError(f"Connector {name} not found")


class AbstractHerder(Herder):
    """Reads, validation, active topics, loggers and health, shared by every herder.

    ``loggers`` controls this worker's log levels (KIP-495); a herder built without one
    gets its own. ``mark_ready()`` ends the KIP-1017 "starting" phase; subclasses with a
    request thread override ``_health_probe``/``_health_thread`` so that ``health()`` can
    tell a stuck herder from a healthy one.
    """

    #: Bound on the health probe (Kafka: 10 s); tests shorten it.
    health_check_timeout_s: float = worker_health.HEALTH_CHECK_TIMEOUT_S

    def __init__(self, config: WorkerConfig, registry: PluginRegistry,
                 config_store: ConfigBackingStore, status_store: StatusBackingStore,
                 loggers: Loggers | None = None) -> None:
        self.worker_config = config
        self.registry = registry
        self.config_store = config_store
        self.status_store = status_store
        self._loggers = loggers if loggers is not None else Loggers()
        self._ready = threading.Event()

    # --- reads -------------------------------------------------------------------------

    def _snapshot_with(self, name: str) -> ClusterConfigState:
        """The store's shared read-only view (``ConfigBackingStore.view``): never modify
        it; copy what is handed out."""
        snapshot = self.config_store.view()
        if not snapshot.contains(name):
            raise not_found(name)
        return snapshot

    def connectors(self) -> list[str]:
        return sorted(self.config_store.view().connector_configs)

    def connector_info(self, name: str) -> ConnectorInfo:
        snapshot = self._snapshot_with(name)
        config = snapshot.connector_configs[name]
        tasks = [TaskId(name, i) for i in range(len(snapshot.tasks(name)))]
        return ConnectorInfo(name, dict(config), tasks, self.connector_type(config))

    def connector_config(self, name: str) -> dict[str, str]:
        return dict(self._snapshot_with(name).connector_configs[name])

    def connector_status(self, name: str) -> ConnectorStateInfo:
        snapshot = self._snapshot_with(name)
        status = self.status_store.get_connector(name)
        if status is None:
            raise NotFoundError(f"No status found for connector {name}")
        tasks = [TaskState(t.state.value, t.worker_id, t.trace, t.id.task)
                 for t in self.status_store.get_tasks(name)]
        return ConnectorStateInfo(
            name, AbstractState(status.state.value, status.worker_id, status.trace), tasks,
            self.connector_type(snapshot.connector_configs[name]))

    def task_configs(self, name: str) -> list[TaskInfo]:
        snapshot = self._snapshot_with(name)
        return [TaskInfo(TaskId(name, i), dict(c)) for i, c in enumerate(snapshot.tasks(name))]

    def task_status(self, task: TaskId) -> TaskState:
        self._snapshot_with(task.connector)
        status = self.status_store.get_task(task)
        if status is None:
            raise NotFoundError(f"No status found for task {task.connector}-{task.task}")
        return TaskState(status.state.value, status.worker_id, status.trace, task.task)

    def connector_type(self, config: Mapping[str, str]) -> ConnectorType:
        try:
            desc = self.registry.resolve(config.get("connector.class", ""), CONNECTOR_TYPES)
        except PluginNotFoundError:
            return ConnectorType.UNKNOWN
        return ConnectorType(desc.type.value)

    # --- plugins -----------------------------------------------------------------------

    def plugins(self, connectors_only: bool = True) -> list[PluginInfo]:
        types = CONNECTOR_TYPES if connectors_only else None
        return [PluginInfo(d.class_name, d.type.value, d.version, list(d.aliases))
                for d in self.registry.plugins(types)]

    def plugin_config(self, plugin: str) -> list[ConfigKeyInfo]:
        instance = self.registry.new_instance(plugin, None)
        return [_key_info(k) for k in instance.config().keys.values()]

    # --- KIP-558 active topics -------------------------------------------------------------
    # As in Kafka's AbstractHerder, an unknown connector is no error: it has no topics.

    def connector_active_topics(self, name: str) -> list[str]:
        self._require_topic_tracking()
        return sorted(status.topic for status in self.status_store.get_topics(name))

    def reset_connector_active_topics(self, name: str) -> None:
        self._require_topic_tracking()
        if not self.worker_config.get("topic.tracking.allow.reset"):
            raise ForbiddenError("Topic tracking reset is disabled.")
        self.status_store.delete_topics(name)

    def _require_topic_tracking(self) -> None:
        if not self.worker_config.get("topic.tracking.enable"):
            raise ForbiddenError("Topic tracking is disabled.")

    # --- KIP-495 loggers ---------------------------------------------------------------------

    def loggers(self) -> dict[str, LoggerLevel]:
        return {name: LoggerLevel(state.level, state.last_modified)
                for name, state in self._loggers.all_levels().items()}

    def logger_level(self, logger: str) -> LoggerLevel:
        state = self._loggers.level(logger)
        return LoggerLevel(state.level, state.last_modified)

    def set_logger_level(self, logger: str, level: str, scope: LoggerScope
                         ) -> list[str] | None:
        # One worker is the whole cluster here (Kafka's StandaloneHerder does the same);
        # a distributed herder overrides this to publish cluster-scoped levels.
        changed = self._loggers.set_level(logger, level)
        return None if scope is LoggerScope.CLUSTER else changed

    # --- KIP-1017 health ---------------------------------------------------------------------

    def mark_ready(self) -> None:
        """Startup is complete (standalone: also the command-line connectors were created)."""
        self._ready.set()

    def health(self) -> HealthStatus:
        if not self._ready.is_set():
            return worker_health.starting()
        status = worker_health.probe(self._health_probe(), self.health_check_timeout_s,
                                     self._health_thread())
        problem = self._health_problem() if status.status == worker_health.HEALTHY else None
        return worker_health.short_of_resources(problem) if problem else status

    def _health_problem(self) -> str | None:
        """A reason this otherwise responsive worker is unhealthy (e.g. it is short of file
        descriptors), or None."""
        return None

    def _health_probe(self) -> Future[None]:
        """Resolved once the request loop ran a no-op. This base has no loop: resolved now.

        A herder with a request thread (StandaloneHerder) queues ``lambda: None`` there, so
        that a stuck loop leaves the future pending and the worker unhealthy.
        """
        done: Future[None] = Future()
        done.set_result(None)
        return done

    def _health_thread(self) -> threading.Thread | None:
        """The thread running ``_health_probe`` requests (named in unhealthy details)."""
        return None

    # --- validation --------------------------------------------------------------------

    def validate_connector_config(self, config: Mapping[str, str]) -> ConfigInfos:
        # As Kafka's: validate the config with its ${provider:...} placeholders resolved on
        # this worker. Unlike Kafka, a placeholder that does not resolve is an error of its
        # key; values are shown as written and resolved values are redacted from messages.
        written = config
        resolution = self.worker_config.transformer.resolve(written)
        config = resolution.data
        class_name = config.get("connector.class")
        if not class_name:
            raise BadRequestError(f"Connector config {_keys_only(config)} contains no "
                                  "connector type")
        try:
            desc = self.registry.resolve(class_name, CONNECTOR_TYPES)
        except PluginNotFoundError as exc:
            hide = Redactor({*resolution.substituted.values(), *secret_values(
                {k: v for k, v in config.items() if k not in resolution.errors})})
            raise BadRequestError(hide(resolution.redact(str(exc)))) from None
        connector_type = desc.type.value
        definition, errors = cc.enrich(cc.base_definition(connector_type), config,
                                       self.registry)
        values = definition.validate(config)
        errors.update(cc.extra_errors(
            config, connector_type,
            self.worker_config.get("connector.client.config.override.policy")))
        # The tasks' Kafka clients, built from the overrides now rather than at task start.
        for key, message in connector_client_errors(self.worker_config, config,
                                                    connector_type).items():
            errors.setdefault(key, message)
        for key in CONVERTER_KEYS:
            if config.get(key):
                try:
                    self.registry.resolve(config[key], {PluginType.CONVERTER,
                                                        PluginType.HEADER_CONVERTER})
                except PluginNotFoundError as exc:
                    errors[key] = str(exc)
        for key, message in errors.items():
            values.setdefault(key, ConfigValue(key, config.get(key))).errors.append(message)
        for key, message in resolution.errors.items():
            # The only error worth showing: others would be about the placeholder's text.
            values.setdefault(key, ConfigValue(key, config.get(key))).errors[:] = [message]

        def validate_plugin() -> tuple[ConfigDef, Mapping[str, ConfigValue]]:
            connector = desc.plugin_class()
            return connector.config(), connector.validate(dict(config))

        try:
            # Plugin code (constructor, config(), validate()) on its own thread, bounded.
            own_def, own_values = call_with_timeout(validate_plugin, VALIDATION_TIMEOUT_S,
                                                    f"validate-{class_name}")
        except TimeoutError as exc:
            raise WorkerError(f"Validation of {class_name} timed out") from exc
        except Exception as exc:  # plugin code: report as a validation error, not a 500
            own_def = ConfigDef()
            own_values = {"connector.class": ConfigValue("connector.class", class_name,
                                                         errors=[str(exc)])}
        # Messages may quote values (plugin code's above all), and key names may be made of
        # them (transforms.<alias>.type): resolved values go back to their placeholders,
        # then every piece of a secret value (PASSWORD-typed keys, secret client keys, any
        # placeholder's value) becomes [hidden] anywhere in the answer (_scrubbed).
        types = {k.name: k.type for k in [*own_def.keys.values(), *definition.keys.values()]}
        # A key whose placeholder did not resolve holds the placeholder: no secret to hide.
        resolved = {k: v for k, v in config.items() if k not in resolution.errors}
        secrets = secret_values(resolved, types) | set(resolution.substituted.values())
        KNOWN_SECRETS.add(secrets)
        hide = Redactor(secrets)
        for value in [*values.values(), *own_values.values()]:
            scrub = _errors_redactor(value.name, resolved, written, types, secrets, hide)
            value.errors[:] = [scrub(resolution.redact(e)) for e in value.errors]
        return _scrubbed(_config_infos(desc.class_name, definition, values, own_def,
                                       own_values, written), hide, written)

    def validate_or_raise(self, config: Mapping[str, str]) -> None:
        """Validate; raise ConfigValidationError with Kafka's message if anything is wrong."""
        infos = self.validate_connector_config(config)
        if infos.error_count == 0:
            return
        problems = {c.value.name: c.value.errors for c in infos.configs if c.value.errors}
        lines = "\n".join(f"{msg}" for errs in problems.values() for msg in errs)
        raise ConfigValidationError(
            f"Connector configuration is invalid and contains the following "
            f"{infos.error_count} error(s):\n{lines}\nYou can also find the above list of "
            "errors at the endpoint `/connector-plugins/{connectorType}/config/validate`",
            problems)


def _errors_redactor(name: str, config: Mapping[str, str], written: Mapping[str, str],
                     types: Mapping[str, Any], secrets: set[str], hide: Redactor
                     ) -> Callable[[str], str]:
    """What scrubs the messages of key ``name``: ``hide``, and when the key's own value is
    a secret or came from a placeholder, also the parts of each of its elements
    (``field:type`` of a Cast spec). Only there: such short parts could be ordinary words
    in other messages. ``config`` holds the keys that resolved."""
    value = config.get(name)
    if value is None or not (has_placeholders(written.get(name))
                             or is_secret(name, types.get(name))):
        return hide
    return Redactor(secrets, with_parts=[value])


def _scrubbed(infos: ConfigInfos, hide: Redactor, written: Mapping[str, str]) -> ConfigInfos:
    """``infos`` with every text that could hold a piece of a secret scrubbed by ``hide``:
    key names, groups, documentation, display names, recommended values, errors and values
    not shown as written. A value shown as the caller wrote it stays (placeholders)."""
    if not hide:
        return infos

    def value_shown(info: ConfigValueInfo) -> str | None:
        if info.value is None or info.value == HIDDEN or (
                info.name in written and info.value == str(written[info.name])):
            return info.value
        return hide(info.value)

    configs = [ConfigInfo(
        dataclasses.replace(
            c.definition, name=hide(c.definition.name),
            documentation=hide(c.definition.documentation),
            group=None if c.definition.group is None else hide(c.definition.group),
            display_name=hide(c.definition.display_name),
            dependents=[hide(d) for d in c.definition.dependents]),
        dataclasses.replace(
            c.value, name=hide(c.value.name), value=value_shown(c.value),
            recommended_values=[hide(r) for r in c.value.recommended_values],
            errors=[hide(e) for e in c.value.errors]))
        for c in infos.configs]
    return dataclasses.replace(infos, name=hide(infos.name),
                               groups=[hide(g) for g in infos.groups], configs=configs)


def _keys_only(config: Mapping[str, str]) -> str:
    # Kafka prints the whole config here; we print keys only, values may be secrets.
    return "{" + ", ".join(sorted(config)) + "}"


def _key_info(key: ConfigKey) -> ConfigKeyInfo:
    return ConfigKeyInfo(key.name, key.type.value, key.required, key.default_string,
                         key.importance.value, key.documentation, key.group,
                         key.order_in_group, key.width.value, key.display_name or key.name,
                         list(key.dependents))


def _value_info(key: ConfigKey | None, value: ConfigValue, raw: Mapping[str, str]
                ) -> ConfigValueInfo:
    # As Kafka's convertConfigValue: a PASSWORD value (here also a secret client key under
    # any prefix, e.g. producer.override.ssl.key.password) is "[hidden]", null stays null.
    secret = is_secret(value.name, key.type if key is not None else None)
    if secret and (value.value is not None or raw.get(value.name) is not None):
        shown: str | None = HIDDEN
    elif value.name in raw:
        shown = str(raw[value.name])
    elif key is not None:
        shown = key.default_string
    else:
        shown = None if value.value is None else str(value.value)
    return ConfigValueInfo(value.name, shown, [str(v) for v in value.recommended_values],
                           list(value.errors), value.visible)


def _config_infos(name: str, base_def: ConfigDef, base_values: dict[str, ConfigValue],
                  own_def: ConfigDef, own_values: Mapping[str, ConfigValue],
                  raw: Mapping[str, str]) -> ConfigInfos:
    keys = {**own_def.keys, **base_def.keys}
    merged: dict[str, ConfigValue] = dict(base_values)
    for value_name, value in own_values.items():
        if value_name in merged:
            known = merged[value_name].errors
            known.extend(e for e in value.errors if e not in known)
        else:
            merged[value_name] = value
    # In order, each once; a dict, not a list: every transform alias has a group of its own.
    groups = list(dict.fromkeys(
        defined.group for defined in [*base_def.keys.values(), *own_def.keys.values()]
        if defined.group))
    configs: list[ConfigInfo] = []
    for key_name, value in merged.items():
        key = keys.get(key_name)
        definition = (_key_info(key) if key is not None else
                      ConfigKeyInfo(key_name, "STRING", False, None, "LOW", "", None, -1,
                                    "NONE", key_name, []))
        configs.append(ConfigInfo(definition, _value_info(key, value, raw)))
    error_count = sum(len(c.value.errors) for c in configs)
    return ConfigInfos(name, error_count, groups, configs)
