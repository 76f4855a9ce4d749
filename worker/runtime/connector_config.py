"""The keys every connector config has (Kafka's ConnectorConfig / Sink / SourceConnectorConfig),
plus the per-alias keys of its transformations and predicates.

``connector_config_def(config, registry)`` returns the full definition for one config, so
validation (``/config/validate``, create, update) and the runtime read one source of truth.
"""

from __future__ import annotations

from collections.abc import Mapping

from worker.api.config_def import (
    NO_DEFAULT,
    ConfigDef,
    Importance,
    Type,
    at_least,
    non_empty_string_without_control_chars,
    one_of,
    valid_regex,
)
from worker.errors import PluginNotFoundError
from worker.plugins.registry import PluginRegistry, PluginType

COMMON_GROUP = "Common"
TRANSFORMS_GROUP = "Transforms"
PREDICATES_GROUP = "Predicates"
ERROR_GROUP = "Error Handling"

OVERRIDE_PREFIXES = ("producer.override.", "consumer.override.", "admin.override.")
# Kafka's PrincipalConnectorClientConfigOverridePolicy allows exactly these.
PRINCIPAL_OVERRIDES = frozenset({"sasl.jaas.config", "sasl.mechanism", "security.protocol"})


COMMON = (
    ConfigDef()
    .define("name", Type.STRING, NO_DEFAULT, Importance.HIGH,
            "Globally unique name to use for this connector.",
            validator=non_empty_string_without_control_chars(), group=COMMON_GROUP,
            order_in_group=1, display_name="Connector name")
    .define("connector.class", Type.STRING, NO_DEFAULT, Importance.HIGH,
            "Name or alias of the connector class (Java names of the built-ins work).",
            group=COMMON_GROUP, order_in_group=2, display_name="Connector class")
    .define("tasks.max", Type.INT, 1, Importance.HIGH,
            "Maximum number of tasks to use for this connector.", validator=at_least(1),
            group=COMMON_GROUP, order_in_group=3, display_name="Tasks max")
    .define("key.converter", Type.CLASS, None, Importance.LOW,
            "Converter for record keys; overrides the worker's.",
            group=COMMON_GROUP, order_in_group=4, display_name="Key converter class")
    .define("value.converter", Type.CLASS, None, Importance.LOW,
            "Converter for record values; overrides the worker's.",
            group=COMMON_GROUP, order_in_group=5, display_name="Value converter class")
    .define("header.converter", Type.CLASS, None, Importance.LOW,
            "Converter for record headers; overrides the worker's.",
            group=COMMON_GROUP, order_in_group=6, display_name="Header converter class")
    .define("transforms", Type.LIST, "", Importance.LOW,
            "Aliases for the transformations to apply to records, in order.",
            group=TRANSFORMS_GROUP, order_in_group=1, display_name="Transforms")
    .define("predicates", Type.LIST, "", Importance.LOW,
            "Aliases for the predicates used by transformations.",
            group=PREDICATES_GROUP, order_in_group=1, display_name="Predicates")
    .define("errors.tolerance", Type.STRING, "none", Importance.MEDIUM,
            "none: any conversion/transformation error fails the task; all: skip the record.",
            validator=one_of("none", "all"), group=ERROR_GROUP, order_in_group=1,
            display_name="Error Tolerance")
    .define("errors.log.enable", Type.BOOLEAN, False, Importance.MEDIUM,
            "Log each skipped record's error (never its contents).",
            group=ERROR_GROUP, order_in_group=2, display_name="Log Errors")
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
)

SOURCE = COMMON


def base_definition(connector_type: str) -> ConfigDef:
    return SINK if connector_type == "sink" else SOURCE


def aliases(config: Mapping[str, str], key: str) -> list[str]:
    raw = config.get(key, "") or ""
    return [a.strip() for a in raw.split(",") if a.strip()]


def enrich(definition: ConfigDef, config: Mapping[str, str], registry: PluginRegistry
           ) -> tuple[ConfigDef, dict[str, str]]:
    """Add ``transforms.<a>.*`` and ``predicates.<a>.*`` keys for the aliases in ``config``.

    Returns the enriched definition and errors (key → message) for aliases whose ``type``
    is missing or unknown (their own keys cannot be described then).
    """
    errors: dict[str, str] = {}
    enriched = definition
    for prefix, kind, group in (("transforms", PluginType.TRANSFORMATION, TRANSFORMS_GROUP),
                                ("predicates", PluginType.PREDICATE, PREDICATES_GROUP)):
        for alias in aliases(config, prefix):
            type_key = f"{prefix}.{alias}.type"
            # One group per alias, as Kafka names them ("Transforms: route").
            alias_group = f"{group}: {alias}"
            extra = ConfigDef().define(type_key, Type.CLASS, NO_DEFAULT, Importance.HIGH,
                                       f"Class for the '{alias}' {kind.value}.",
                                       group=alias_group)
            if prefix == "transforms":
                extra = (extra
                         .define(f"{prefix}.{alias}.predicate", Type.STRING, None,
                                 Importance.MEDIUM,
                                 "The alias of a predicate gating this transformation.",
                                 group=alias_group)
                         .define(f"{prefix}.{alias}.negate", Type.BOOLEAN, False,
                                 Importance.MEDIUM, "Negate the predicate's result.",
                                 group=alias_group))
            enriched = enriched.merge(extra)
            class_name = config.get(type_key)
            if not class_name:
                continue
            try:
                plugin = registry.new_instance(class_name, kind)
            except PluginNotFoundError as exc:
                errors[type_key] = str(exc)
                continue
            own = plugin.config()
            renamed = ConfigDef()
            for key in own.keys.values():
                renamed.define(f"{prefix}.{alias}.{key.name}", key.type, key.default,
                               key.importance, key.documentation, validator=key.validator,
                               group=alias_group, width=key.width,
                               display_name=key.display_name)
            enriched = enriched.merge(renamed)
    return enriched, errors


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
    for alias in aliases(config, "transforms"):
        predicate = config.get(f"transforms.{alias}.predicate")
        if predicate and predicate not in aliases(config, "predicates"):
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
