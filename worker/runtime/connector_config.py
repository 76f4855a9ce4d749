"""The keys every connector config has (Kafka's ConnectorConfig / Sink / SourceConnectorConfig),
plus the per-alias keys of its transformations and predicates.

``connector_config_def(config, registry)`` returns the full definition for one config, so
validation (``/config/validate``, create, update) and the runtime read one source of truth.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from worker.api.config_def import (
    NO_DEFAULT,
    ConfigDef,
    ConfigKey,
    Importance,
    Type,
    Width,
    at_least,
    connector_name,
    one_of,
    parse_type,
    valid_regex,
)
from worker.errors import PluginNotFoundError
from worker.plugins.registry import PluginRegistry, PluginType
from worker.runtime import topic_creation

COMMON_GROUP = "Common"
TRANSFORMS_GROUP = "Transforms"
PREDICATES_GROUP = "Predicates"
ERROR_GROUP = "Error Handling"
DLQ_TOPIC_NAME = "errors.deadletterqueue.topic.name"

TASKS_MAX_ENFORCE = "tasks.max.enforce"
OVERRIDE_PREFIXES = ("producer.override.", "consumer.override.", "admin.override.")
# Kafka's PrincipalConnectorClientConfigOverridePolicy allows exactly these.
PRINCIPAL_OVERRIDES = frozenset({"sasl.jaas.config", "sasl.mechanism", "security.protocol"})


COMMON = (
    ConfigDef()
    .define("name", Type.STRING, NO_DEFAULT, Importance.HIGH,
            "Globally unique name to use for this connector.",
            validator=connector_name(), group=COMMON_GROUP,
            order_in_group=1, display_name="Connector name")
    .define("connector.class", Type.STRING, NO_DEFAULT, Importance.HIGH,
            "Name or alias of the connector class (Java names of the built-ins work).",
            group=COMMON_GROUP, order_in_group=2, display_name="Connector class")
    .define("tasks.max", Type.INT, 1, Importance.HIGH,
            "Maximum number of tasks to use for this connector.", validator=at_least(1),
            group=COMMON_GROUP, order_in_group=3, display_name="Tasks max")
    .define(TASKS_MAX_ENFORCE, Type.BOOLEAN, True, Importance.LOW,
            "(Deprecated) Whether to enforce that the tasks.max property is respected by the "
            "connector. By default, connectors that generate too many tasks will fail, and "
            "existing sets of tasks that exceed the tasks.max property will also be failed. "
            "If this property is set to false, then connectors will be allowed to generate "
            "more than the maximum number of tasks, and existing sets of tasks that exceed "
            "the tasks.max property will be allowed to run. This property is deprecated and "
            "will be removed in an upcoming major release.",
            group=COMMON_GROUP, order_in_group=4, display_name="Enforce tasks max")
    .define("key.converter", Type.CLASS, None, Importance.LOW,
            "Converter for record keys; overrides the worker's.",
            group=COMMON_GROUP, order_in_group=5, display_name="Key converter class")
    .define("value.converter", Type.CLASS, None, Importance.LOW,
            "Converter for record values; overrides the worker's.",
            group=COMMON_GROUP, order_in_group=6, display_name="Value converter class")
    .define("header.converter", Type.CLASS, None, Importance.LOW,
            "Converter for record headers; overrides the worker's.",
            group=COMMON_GROUP, order_in_group=7, display_name="Header converter class")
    .define("transforms", Type.LIST, "", Importance.LOW,
            "Aliases for the transformations to apply to records, in order.",
            group=TRANSFORMS_GROUP, order_in_group=1, display_name="Transforms")
    .define("predicates", Type.LIST, "", Importance.LOW,
            "Aliases for the predicates used by transformations.",
            group=PREDICATES_GROUP, order_in_group=1, display_name="Predicates")
    # Kafka's Error Handling group: names, types, defaults and order as in its
    # ConnectorConfig (docs/error-handling.md).
    .define("errors.retry.timeout", Type.LONG, 0, Importance.MEDIUM,
            "The maximum duration in milliseconds that a failed operation will be "
            "reattempted. The default is 0, which means no retries will be attempted. Use -1 "
            "for infinite retries.",
            group=ERROR_GROUP, order_in_group=1, width=Width.MEDIUM,
            display_name="Retry Timeout for Errors")
    .define("errors.retry.delay.max.ms", Type.LONG, 60000, Importance.MEDIUM,
            "The maximum duration in milliseconds between consecutive retry attempts. Jitter "
            "will be added to the delay once this limit is reached to prevent thundering "
            "herd issues.",
            group=ERROR_GROUP, order_in_group=2, width=Width.MEDIUM,
            display_name="Maximum Delay Between Retries for Errors")
    .define("errors.tolerance", Type.STRING, "none", Importance.MEDIUM,
            "Behavior for tolerating errors during connector operation. 'none' is the default "
            "value and signals that any error will result in an immediate connector task "
            "failure; 'all' changes the behavior to skip over problematic records.",
            validator=one_of("none", "all"), group=ERROR_GROUP, order_in_group=3,
            width=Width.SHORT, display_name="Error Tolerance")
    .define("errors.log.enable", Type.BOOLEAN, False, Importance.MEDIUM,
            "If true, write each error and the details of the failed operation and "
            "problematic record to the Connect application log. This is 'false' by default, "
            "so that only errors that are not tolerated are reported.",
            group=ERROR_GROUP, order_in_group=4, width=Width.SHORT, display_name="Log Errors")
    .define("errors.log.include.messages", Type.BOOLEAN, False, Importance.MEDIUM,
            "Whether to include in the log the Connect record that resulted in a failure. "
            "For sink records, the key, value and headers are added to the topic, partition, "
            "offset, and timestamp logged anyway. For source records, the key and value (and "
            "their schemas), all headers, and the timestamp, Kafka topic, Kafka partition, "
            "source partition, and source offset will be logged. This is 'false' by default, "
            "which will prevent record keys, values, and headers from being written to log "
            "files.",
            group=ERROR_GROUP, order_in_group=5, width=Width.SHORT,
            display_name="Log Error Details")
    # Our extension: automatic restart of FAILED connectors and tasks
    # (worker.herder.auto_restart; docs/configuration.md). In the Common group, after
    # Kafka's keys: Kafka's groups stay as they are.
    .define("auto.restart.enable", Type.BOOLEAN, False, Importance.LOW,
            "If true, this worker restarts the connector and its tasks by itself when they "
            "are FAILED, with exponential backoff (our extension).",
            group=COMMON_GROUP, order_in_group=7, display_name="Automatic restart")
    .define("auto.restart.max.attempts", Type.INT, -1, Importance.LOW,
            "How many automatic restarts a FAILED connector or task gets before it stays "
            "FAILED; -1: unlimited, 0: none. The count starts again once it ran for 5 "
            "minutes without failing, after a manual restart and after a config update.",
            validator=at_least(-1), group=COMMON_GROUP, order_in_group=8,
            display_name="Automatic restart attempts")
    .define("auto.restart.backoff.ms", Type.LONG, 1000, Importance.LOW,
            "The wait before the first automatic restart, in milliseconds; it doubles with "
            "each further attempt.", validator=at_least(1), group=COMMON_GROUP,
            order_in_group=9, display_name="Automatic restart backoff")
    .define("auto.restart.backoff.max.ms", Type.LONG, 300000, Importance.LOW,
            "The longest wait between automatic restarts, in milliseconds.",
            validator=at_least(1), group=COMMON_GROUP, order_in_group=10,
            display_name="Automatic restart maximum backoff")
)

SINK = COMMON.merge(
    ConfigDef()
    .define("topics", Type.LIST, "", Importance.HIGH,
            "Topics to consume (use this or topics.regex).",
            group=COMMON_GROUP, order_in_group=4, display_name="Topics")
    .define("topics.regex", Type.STRING, "", Importance.HIGH,
            "Regular expression of topics to consume (use this or topics).",
            validator=valid_regex(), group=COMMON_GROUP, order_in_group=4,
            display_name="Topics regex")
    .define(DLQ_TOPIC_NAME, Type.STRING, "", Importance.MEDIUM,
            "The name of the topic to be used as the dead letter queue (DLQ) for messages "
            "that result in an error when processed by this sink connector, or its "
            "transformations or converters. The topic name is blank by default, which means "
            "that no messages are to be recorded in the DLQ.",
            group=ERROR_GROUP, order_in_group=6, width=Width.MEDIUM,
            display_name="Dead Letter Queue Topic Name")
    .define("errors.deadletterqueue.topic.replication.factor", Type.SHORT, 3,
            Importance.MEDIUM,
            "Replication factor used to create the dead letter queue topic when it doesn't "
            "already exist.",
            group=ERROR_GROUP, order_in_group=7, width=Width.MEDIUM,
            display_name="Dead Letter Queue Topic Replication Factor")
    .define("errors.deadletterqueue.context.headers.enable", Type.BOOLEAN, False,
            Importance.MEDIUM,
            "If true, add headers containing error context to the messages written to the "
            "dead letter queue. To avoid clashing with headers from the original record, all "
            "error context header keys will start with <code>__connect.errors.</code>",
            group=ERROR_GROUP, order_in_group=8, width=Width.MEDIUM,
            display_name="Enable Error Context Headers")
)

EXACTLY_ONCE_GROUP = "Exactly Once Support"
#: Kafka's SourceConnectorConfig keys of exactly-once delivery (KIP-618) and per-connector
#: offsets topics: defined so validation shows them, refused (``extra_errors``) where a
#: value asks for what this worker does not do, rather than accepted and ignored. Before
#: them, as in Kafka, the "Topic Creation" keys (KIP-158, ``topic_creation``).
SOURCE = COMMON.merge(topic_creation.SOURCE_KEYS).merge(
    ConfigDef()
    .define("exactly.once.support", Type.STRING, "requested", Importance.MEDIUM,
            "Permitted values are requested, required. If set to \"required\", forces a "
            "preflight check that the connector can provide exactly-once semantics; this "
            "worker has no exactly-once source support, so \"required\" is refused.",
            validator=one_of("requested", "required"), group=EXACTLY_ONCE_GROUP,
            order_in_group=1, display_name="Exactly once support")
    .define("transaction.boundary", Type.STRING, "poll", Importance.MEDIUM,
            "Permitted values are: poll, interval, connector. Producer transaction "
            "boundaries of exactly-once source delivery; only the default is accepted here.",
            validator=one_of("poll", "interval", "connector"), group=EXACTLY_ONCE_GROUP,
            order_in_group=2, display_name="Transaction Boundary")
    .define("transaction.boundary.interval.ms", Type.LONG, None, Importance.LOW,
            "If 'transaction.boundary' is set to 'interval', determines the interval for "
            "producer transaction commits by connector tasks.", validator=at_least(0),
            group=EXACTLY_ONCE_GROUP, order_in_group=3,
            display_name="Transaction boundary interval")
    .define("offsets.storage.topic", Type.STRING, None, Importance.LOW,
            "The name of a separate offsets topic to use for this connector. Not supported "
            "by this worker: source offsets go to the worker's offset storage.",
            group="offsets.topic", order_in_group=1, display_name="Offsets topic")
)

_NO_EXACTLY_ONCE = ("exactly-once source delivery (KIP-618) is not supported by this "
                    "worker; its source connectors deliver at least once")


def base_definition(connector_type: str) -> ConfigDef:
    return SINK if connector_type == "sink" else SOURCE


def error_handling_values(config: Mapping[str, str], connector_type: str) -> dict[str, Any]:
    """The connector's ``errors.*`` keys (its "Error Handling" group) parsed by their
    definition: typed values, defaults for absent keys. Only the keys of that group, so a
    config stored before a newer validator of another key still starts its tasks."""
    return {key.name: (parse_type(key.name, config[key.name], key.type)
                       if key.name in config else key.default)
            for key in base_definition(connector_type).keys.values()
            if key.group == ERROR_GROUP}


def aliases(config: Mapping[str, str], key: str) -> list[str]:
    raw = config.get(key, "") or ""
    return [a.strip() for a in raw.split(",") if a.strip()]


def enrich(definition: ConfigDef, config: Mapping[str, str], registry: PluginRegistry
           ) -> tuple[ConfigDef, dict[str, str]]:
    """Add ``transforms.<a>.*`` and ``predicates.<a>.*`` keys for the aliases in ``config``.

    Returns the enriched definition and errors (key → message) for aliases whose ``type``
    is missing or unknown (their own keys cannot be described then). A source definition
    also gets the keys of the topic creation groups listed in ``config``. An alias listed
    twice counts once, as in Kafka (``new LinkedHashSet<>(aliases)``).

    The keys are collected first and merged once: the cost is linear in the number of
    aliases and their keys (merging per alias copied the whole definition each time, so
    10,000 transforms took minutes).
    """
    errors: dict[str, str] = {}
    enriched = definition
    if topic_creation.GROUPS in definition.keys:
        enriched = enriched.merge(topic_creation.group_keys(config))
    added: dict[str, ConfigKey] = {}
    for prefix, kind, group in (("transforms", PluginType.TRANSFORMATION, TRANSFORMS_GROUP),
                                ("predicates", PluginType.PREDICATE, PREDICATES_GROUP)):
        for alias in dict.fromkeys(aliases(config, prefix)):
            type_key = f"{prefix}.{alias}.type"
            # One group per alias, as Kafka names them ("Transforms: route").
            alias_group = f"{group}: {alias}"
            extra = ConfigDef().define(type_key, Type.CLASS, NO_DEFAULT, Importance.HIGH,
                                       f"Class for the '{alias}' {kind.value}.",
                                       group=alias_group)
            if prefix == "transforms":
                (extra
                 .define(f"{prefix}.{alias}.predicate", Type.STRING, None, Importance.MEDIUM,
                         "The alias of a predicate gating this transformation.",
                         group=alias_group)
                 .define(f"{prefix}.{alias}.negate", Type.BOOLEAN, False, Importance.MEDIUM,
                         "Negate the predicate's result.", group=alias_group))
            added.update(extra.keys)
            class_name = config.get(type_key)
            if not class_name:
                continue
            try:
                plugin = registry.new_instance(class_name, kind)
            except PluginNotFoundError as exc:
                errors[type_key] = str(exc)
                continue
            renamed = ConfigDef()
            for key in plugin.config().keys.values():
                renamed.define(f"{prefix}.{alias}.{key.name}", key.type, key.default,
                               key.importance, key.documentation, validator=key.validator,
                               group=alias_group, width=key.width,
                               display_name=key.display_name)
            added.update(renamed.keys)  # the plugin's own keys win, as merge() had them
    return enriched.merge(ConfigDef(added)), errors


def _dlq_errors(config: Mapping[str, str], topics: list[str], regex: str) -> dict[str, str]:
    """Kafka's SinkConnectorConfig.validate: the DLQ topic may not be one the connector
    consumes (the error is on ``topics`` / ``topics.regex``, as in Kafka)."""
    dlq = (config.get(DLQ_TOPIC_NAME) or "").strip()
    if not dlq:
        return {}
    errors: dict[str, str] = {}
    names = list(dict.fromkeys(t.strip() for t in topics if t.strip()))
    if dlq in names:
        errors["topics"] = (f"The DLQ topic '{dlq}' may not be included in the list of "
                            f"topics ('topics=[{', '.join(names)}]') consumed by the "
                            "connector")
    if regex:
        try:
            matches = re.fullmatch(regex, dlq) is not None
        except re.error:
            matches = False  # the regex's own validator reports it
        if matches:
            errors["topics.regex"] = (f"The DLQ topic '{dlq}' may not be matched by the regex "
                                      f"for the topics ('topics.regex={regex}') consumed by "
                                      "the connector")
    return errors


def extra_errors(config: Mapping[str, str], connector_type: str, override_policy: str
                 ) -> dict[str, str]:
    """Rules spanning several keys, as Kafka's AbstractHerder applies them."""
    errors: dict[str, str] = {}
    if connector_type == "sink":
        topics = [t for t in (config.get("topics") or "").split(",") if t.strip()]
        regex = (config.get("topics.regex") or "").strip()
        if topics and regex:
            errors["topics"] = ("Must configure one of topics or topics.regex, not both")
        elif not topics and not regex:
            errors["topics"] = "Must configure one of topics or topics.regex"
        if "(?" in regex:
            # Python's re accepts these, librdkafka's engine (which subscribes) does not:
            # the task would fail at start.
            errors["topics.regex"] = ("(?...) constructs (non-capturing groups, inline "
                                      "flags, lookarounds) are not supported by the "
                                      "consumer's regular-expression engine; use plain "
                                      "groups")
        errors.update({k: m for k, m in _dlq_errors(config, topics, regex).items()
                       if k not in errors})
    else:
        errors.update(_exactly_once_errors(config))
        errors.update(topic_creation.errors(config))
    predicates = set(aliases(config, "predicates"))  # once: per transform, quadratic
    for alias in aliases(config, "transforms"):
        predicate = config.get(f"transforms.{alias}.predicate")
        if predicate and predicate not in predicates:
            errors[f"transforms.{alias}.predicate"] = (
                f"Predicate '{predicate}' is not defined in 'predicates'")
        negate = f"transforms.{alias}.negate"
        if negate in config and not predicate:
            errors[negate] = (f"Config '{negate}' was provided but there is no config "
                              f"'transforms.{alias}.predicate' defining a predicate to be "
                              "negated.")
    if override_policy != "All":
        allowed = PRINCIPAL_OVERRIDES if override_policy == "Principal" else frozenset()
        for key in config:
            prefix = next((p for p in OVERRIDE_PREFIXES if key.startswith(p)), None)
            if prefix is not None and key[len(prefix):] not in allowed:
                errors[key] = (f"The '{override_policy}' policy does not allow '{key}' "
                               "to be overridden in the connector configuration.")
    return errors


def _exactly_once_errors(config: Mapping[str, str]) -> dict[str, str]:
    """A source connector's settings that ask for exactly-once delivery or a per-connector
    offsets topic: refused with a reason (Kafka's own message first, where it has one)."""
    errors: dict[str, str] = {}
    if (config.get("exactly.once.support") or "").strip().lower() == "required":
        errors["exactly.once.support"] = ("This worker does not have exactly-once source "
                                          f"support enabled: {_NO_EXACTLY_ONCE}.")
    boundary = (config.get("transaction.boundary") or "").strip().lower()
    if boundary in ("interval", "connector"):
        errors["transaction.boundary"] = (f"Transaction boundaries belong to exactly-once "
                                          f"source delivery: {_NO_EXACTLY_ONCE}.")
    if (config.get("offsets.storage.topic") or "").strip():
        errors["offsets.storage.topic"] = ("A separate offsets topic per connector is not "
                                           "supported by this worker; source offsets go to "
                                           "the worker's offset storage.")
    return errors
