"""Topic creation for source connectors (Kafka's KIP-158, ``topic.creation.*``).

A source connector's config may describe how the topics its tasks write to are created:
``topic.creation.default.replication.factor`` and ``.partitions`` (both needed to turn it
on), and groups listed in ``topic.creation.groups``, each with ``include`` / ``exclude``
regular expressions (matched against the whole topic name), its own ``replication.factor``
and ``partitions`` (the default group's when unset) and any other
``topic.creation.<group>.<topic config>`` key, passed to the broker as a topic config
(``cleanup.policy``, ``retention.ms``...). A topic uses the first listed group whose
include matches and whose exclude does not, else the default group (which includes every
topic; its include and exclude cannot be set).

This module holds the definitions (merged into the source connector definition by
``worker.runtime.connector_config``), the cross-key rules of validation, and the runtime
part: ``TopicCreator.ensure(topic)``, called by a source task before the first record it
sends to a topic, creates the topic if it does not exist. The worker's
``topic.creation.enable`` (default true) turns it off for every connector.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from worker.api.config_def import ConfigDef, Importance, Type, Width, parse_type
from worker.api.exceptions import ConfigException, ConnectException
from worker.util.logs import TASK_CLIENTS, watch_logs

log = logging.getLogger(__name__)

PREFIX = "topic.creation."
GROUPS = "topic.creation.groups"
DEFAULT = "default"
INCLUDE = "include"
EXCLUDE = "exclude"
REPLICATION_FACTOR = "replication.factor"
PARTITIONS = "partitions"
DEFAULT_REPLICATION_FACTOR = f"{PREFIX}{DEFAULT}.{REPLICATION_FACTOR}"
DEFAULT_PARTITIONS = f"{PREFIX}{DEFAULT}.{PARTITIONS}"
#: The worker's switch (``worker.config.worker_config``); in a connector config it is
#: ignored, as Kafka ignores it there.
ENABLE = "topic.creation.enable"
GROUP = "Topic Creation"
BROKER_DEFAULT = -1  # Kafka's NO_PARTITIONS / NO_REPLICATION_FACTOR
_OWN_KEYS = frozenset({INCLUDE, EXCLUDE, REPLICATION_FACTOR, PARTITIONS})
ADMIN_TIMEOUT_S = 30.0

# Kafka's TopicCreationConfig documentation.
_INCLUDE_DOC = ("A list of regular expression literals used to match the topic names used by "
                "the source connector. This list is used to include topics that should be "
                "created using the topic settings defined by this group.")
_EXCLUDE_DOC = ("A list of regular expression literals used to match the topic names used by "
                "the source connector. This list is used to exclude topics from being created "
                "with the topic settings defined by this group. Note that exclusion rules "
                "have precedent and override any inclusion rules for the topics.")
_RF_DOC = ("The replication factor for new topics created for this connector using this "
           "group. This value may be -1 to use the broker's default replication factor, or "
           "may be a positive number not larger than the number of brokers in the Kafka "
           "cluster. A value larger than the number of brokers in the Kafka cluster will "
           "result in an error when the new topic is created. For the default group this "
           "configuration is required. For any other group defined in topic.creation.groups "
           "this config is optional and if it's missing it gets the value of the default "
           "group")
_PARTITIONS_DOC = ("The number of partitions new topics created for this connector. This "
                   "value may be -1 to use the broker's default number of partitions, or a "
                   "positive number representing the desired number of partitions. For the "
                   "default group this configuration is required. For any other group "
                   "defined in topic.creation.groups this config is optional and if it's "
                   "missing it gets the value of the default group")


# --- validators (Kafka's messages) ---------------------------------------------------------

def _unique_aliases(name: str, value: Any) -> None:
    aliases = [a for a in value if a]
    if len(aliases) > len(set(aliases)):
        raise ConfigException(name, f"[{', '.join(value)}]", "Duplicate alias provided.")


def _replication_factor(name: str, value: Any) -> None:
    if value != BROKER_DEFAULT and value < 1:
        raise ConfigException(name, value, "Replication factor must be positive and not "
                                           "larger than the number of brokers in the Kafka "
                                           "cluster, or -1 to use the broker's default")


def _partitions(name: str, value: Any) -> None:
    if value != BROKER_DEFAULT and value < 1:
        raise ConfigException(name, value, "Number of partitions must be positive, or -1 to "
                                           "use the broker's default")


def _regexes(name: str, value: Any) -> None:
    for pattern in value:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ConfigException(name, f"[{', '.join(value)}]",
                                  f"Syntax error in regular expression: {exc}") from None


# --- definitions ---------------------------------------------------------------------------

#: The keys every source connector has: Kafka's ``topic.creation.groups`` and, listed here
#: so that ``/config/validate`` shows them, the default group's two settings (unset: no
#: topic creation for the connector).
SOURCE_KEYS = (
    ConfigDef()
    .define(GROUPS, Type.LIST, "", Importance.LOW,
            "Groups of configurations for topics created by source connectors",
            validator=_unique_aliases, group=GROUP, order_in_group=1, width=Width.LONG,
            display_name="Topic Creation Groups")
    .define(DEFAULT_REPLICATION_FACTOR, Type.SHORT, None, Importance.LOW, _RF_DOC,
            validator=_replication_factor, group=GROUP, order_in_group=2, width=Width.LONG,
            display_name=f"Replication Factor for Topics in {DEFAULT}")
    .define(DEFAULT_PARTITIONS, Type.INT, None, Importance.LOW, _PARTITIONS_DOC,
            validator=_partitions, group=GROUP, order_in_group=3, width=Width.LONG,
            display_name=f"Partition Count for Topics in {DEFAULT}")
)


def group_names(config: Mapping[str, str]) -> list[str]:
    """The groups listed in ``topic.creation.groups``, in order, without duplicates, empty
    names or ``default`` (which always exists; Kafka drops it from the list too)."""
    raw = config.get(GROUPS) or ""
    names = (n.strip() for n in raw.split(","))
    return list(dict.fromkeys(n for n in names if n and n != DEFAULT))


def _default_value(config: Mapping[str, str], key: str, type_: Type) -> int | None:
    """The default group's value of ``key`` as the other groups' default (None if unset or
    invalid: the default key reports its own error)."""
    try:
        return parse_type(key, config.get(key), type_)
    except ConfigException:
        return None


def group_keys(config: Mapping[str, str]) -> ConfigDef:
    """The keys of the groups listed in ``config`` (Kafka's SourceConnectorConfig.enrich):
    one "Topic Creation: <group>" group of four keys each, their replication factor and
    partitions defaulting to the default group's."""
    rf = _default_value(config, DEFAULT_REPLICATION_FACTOR, Type.SHORT)
    partitions = _default_value(config, DEFAULT_PARTITIONS, Type.INT)
    keys = ConfigDef()
    for name in group_names(config):
        prefix, section = f"{PREFIX}{name}.", f"{GROUP}: {name}"
        (keys
         .define(prefix + INCLUDE, Type.LIST, "", Importance.LOW, _INCLUDE_DOC,
                 validator=_regexes, group=section, order_in_group=1, width=Width.LONG,
                 display_name=f"Inclusion Topic Pattern for {section}")
         .define(prefix + EXCLUDE, Type.LIST, "", Importance.LOW, _EXCLUDE_DOC,
                 validator=_regexes, group=section, order_in_group=2, width=Width.LONG,
                 display_name=f"Exclusion Topic Pattern for {section}")
         .define(prefix + REPLICATION_FACTOR, Type.SHORT, rf, Importance.LOW, _RF_DOC,
                 validator=_replication_factor, group=section, order_in_group=3,
                 width=Width.LONG, display_name=f"Replication Factor for Topics in {section}")
         .define(prefix + PARTITIONS, Type.INT, partitions, Importance.LOW, _PARTITIONS_DOC,
                 validator=_partitions, group=section, order_in_group=4, width=Width.LONG,
                 display_name=f"Partition Count for Topics in {section}"))
    return keys


def errors(config: Mapping[str, str]) -> dict[str, str]:
    """The rules spanning several ``topic.creation.*`` keys (key → message); the values of
    the defined keys are checked by their definitions."""
    # Keys with a value: a UI may send every key it knows, empty.
    keys = [k for k, v in config.items()
            if k.startswith(PREFIX) and k not in (GROUPS, ENABLE) and (v or "").strip()]
    if not keys and not (config.get(GROUPS) or "").strip():
        return {}
    found: dict[str, str] = {}
    for key in (DEFAULT_REPLICATION_FACTOR, DEFAULT_PARTITIONS):
        if config.get(key) is None:
            # Kafka's words: it requires both as soon as any topic.creation.* key is set.
            found[key] = (f'Missing required configuration "{key}" which has no default '
                          "value. Topic creation needs both "
                          f"{DEFAULT_REPLICATION_FACTOR} and {DEFAULT_PARTITIONS}.")
    listed = group_names(config)
    for key in (f"{PREFIX}{DEFAULT}.{INCLUDE}", f"{PREFIX}{DEFAULT}.{EXCLUDE}"):
        if key in keys:
            found[key] = ("The default topic creation group matches every topic no other "
                          "group matches; its include and exclude cannot be set. Define a "
                          "group in topic.creation.groups instead.")
    for key in keys:
        rest = key[len(PREFIX):]
        if not any(rest.startswith(f"{g}.") for g in (DEFAULT, *listed)):
            group = rest.split(".", 1)[0]
            found[key] = (f"Topic creation group '{group}' is not listed in {GROUPS}, so "
                          f"'{key}' would be ignored; add '{group}' to {GROUPS} or remove "
                          "the key.")
    undefined = [g for g in listed if not (config.get(f"{PREFIX}{g}.{INCLUDE}") or "").strip()]
    if undefined:
        found[GROUPS] = ("Topic creation group(s) " + ", ".join(f"'{g}'" for g in undefined)
                         + f" listed in {GROUPS} but not defined: each needs "
                         f"{PREFIX}<group>.{INCLUDE}, the topics it applies to.")
    return found


# --- groups --------------------------------------------------------------------------------

@dataclass(frozen=True)
class TopicCreationGroup:
    """One group: which topics it applies to and how they are created."""

    name: str
    include: tuple[re.Pattern[str], ...]
    exclude: tuple[re.Pattern[str], ...] = ()
    replication_factor: int = BROKER_DEFAULT
    partitions: int = BROKER_DEFAULT
    configs: dict[str, str] = field(default_factory=dict)

    def matches(self, topic: str) -> bool:
        """Kafka's rule: the whole name matches an include pattern and no exclude one."""
        return (not any(p.fullmatch(topic) for p in self.exclude)
                and any(p.fullmatch(topic) for p in self.include))

    def new_topic(self, topic: str) -> NewTopic:
        return NewTopic(topic, num_partitions=self.partitions,
                        replication_factor=self.replication_factor, config=dict(self.configs))

    def describe(self, topic: str) -> str:
        return (f"'{topic}' (group '{self.name}': partitions={self.partitions}, replication "
                f"factor={self.replication_factor}, configs={self.configs})")


@dataclass(frozen=True)
class TopicCreation:
    """A connector's groups, in ``topic.creation.groups`` order, and its default group."""

    groups: tuple[TopicCreationGroup, ...]
    default: TopicCreationGroup

    def group_for(self, topic: str) -> TopicCreationGroup:
        """The first listed group that matches ``topic``, else the default group."""
        return next((g for g in self.groups if g.matches(topic)), self.default)


def parse(config: Mapping[str, str]) -> TopicCreation | None:
    """The connector's topic creation settings; None when it does not use topic creation
    (the default group's replication factor or partitions is unset). Raises
    ConfigException naming the key of a bad value."""
    if config.get(DEFAULT_REPLICATION_FACTOR) is None or config.get(DEFAULT_PARTITIONS) is None:
        return None
    values = SOURCE_KEYS.merge(group_keys(config)).parse(
        {k: v for k, v in config.items() if k.startswith(PREFIX)})

    def group(name: str, include: list[str], exclude: list[str]) -> TopicCreationGroup:
        prefix = f"{PREFIX}{name}."
        # Kafka passes every other key of the group to the broker as a topic config.
        configs = {k[len(prefix):]: str(v) for k, v in config.items()
                   if k.startswith(prefix) and k[len(prefix):] not in _OWN_KEYS}
        return TopicCreationGroup(name, tuple(re.compile(p) for p in include),
                                  tuple(re.compile(p) for p in exclude),
                                  values[prefix + REPLICATION_FACTOR],
                                  values[prefix + PARTITIONS], configs)

    return TopicCreation(
        tuple(group(n, values[f"{PREFIX}{n}.{INCLUDE}"], values[f"{PREFIX}{n}.{EXCLUDE}"])
              for n in group_names(config)),
        group(DEFAULT, [".*"], []))


# --- runtime -------------------------------------------------------------------------------

class TopicCreator:
    """Creates a source task's topics before it first writes to them (Kafka's
    AbstractWorkerSourceTask.maybeCreateTopic), on the task's thread.

    The topics known to exist are remembered, so ``ensure`` costs one set lookup for them;
    the task calls it only for topics it has not written to yet anyway. A topic unknown to
    this task is looked up (an admin client per lookup: new topics are rare, and no idle
    connection is kept for the task's lifetime), and created with its group's settings if
    it does not exist.
    """

    def __init__(self, creation: TopicCreation, admin_config: Mapping[str, Any], *,
                 admin_factory: Callable[[dict[str, Any]], Any] | None = None,
                 timeout_s: float = ADMIN_TIMEOUT_S) -> None:
        self.creation = creation
        self._admin_config = dict(admin_config)
        self._admin_factory = admin_factory or _admin_client
        self._timeout_s = timeout_s
        self.known: set[str] = set()

    def ensure(self, topic: str) -> None:
        """Make sure ``topic`` exists; raise ConnectException if it cannot be created."""
        if topic in self.known:
            return
        log.info("The task will send records to topic '%s' for the first time. Checking "
                 "whether topic exists", topic)
        admin = self._admin_factory(dict(self._admin_config))
        try:
            # All topics, not a metadata request for this one: that may auto-create it with
            # the broker's defaults.
            existing = admin.list_topics(timeout=self._timeout_s).topics
        except KafkaException as exc:
            raise ConnectException(f"Could not check whether topic '{topic}' exists before "
                                   f"creating it: {exc}") from exc
        if topic in existing:
            log.info("Topic '%s' already exists.", topic)
            self.known.add(topic)
            return
        group = self.creation.group_for(topic)
        log.info("Creating topic %s", group.describe(topic))
        try:
            admin.create_topics([group.new_topic(topic)], operation_timeout=self._timeout_s,
                                request_timeout=self._timeout_s)[topic].result(self._timeout_s)
        except KafkaException as exc:
            error = exc.args[0] if exc.args and isinstance(exc.args[0], KafkaError) else None
            if error is None or error.code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise ConnectException(
                    f"Task failed to create new topic {group.describe(topic)}: {exc}. Ensure "
                    "that the task is authorized to create topics or that the topic exists "
                    "and restart the task") from exc
            log.info("Found existing topic '%s'", topic)  # created by someone else meanwhile
        except TimeoutError as exc:
            raise ConnectException(
                f"Timed out while checking for or creating topic(s) '{topic}'. This could "
                "indicate a connectivity issue, unavailable topic partitions, or if this is "
                "your first use of the topic it may have taken too long to create.") from exc
        else:
            log.info("Created topic %s", group.describe(topic))
        self.known.add(topic)


def _admin_client(config: dict[str, Any]) -> AdminClient:
    """An admin client whose librdkafka lines go to ``worker.runtime.librdkafka``."""
    conf: dict[str, Any] = {**config, "logger": logging.getLogger(TASK_CLIENTS)}
    return watch_logs(AdminClient(conf))


def creator(enabled: bool, connector_config: Mapping[str, str],
            admin_config: Callable[[], Mapping[str, Any]]) -> TopicCreator | None:
    """The task's creator, or None: the worker's ``topic.creation.enable`` is false or the
    connector does not use topic creation. ``admin_config`` is called only when needed."""
    if not enabled:
        return None
    creation = parse(connector_config)
    return None if creation is None else TopicCreator(creation, admin_config())
