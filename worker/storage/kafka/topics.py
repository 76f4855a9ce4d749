"""The internal topics: create them compacted if missing, refuse them if unusable.

Mirrors Kafka Connect's ``TopicAdmin``: a missing topic is created with
``cleanup.policy=compact`` and the configured partitions and replication factor (-1: the
broker's default); an existing one must be compacted (only) and the config topic must have
exactly one partition, else startup fails with Kafka's message naming the property. A
broker that does not report ``cleanup.policy`` at all (Tansu reports only the configs a
topic was created with) cannot be checked: that is logged, not assumed. A replication
factor above the number of brokers fails the creation with Kafka's broker message, also
on a broker that would accept it (Tansu, with one node, creates any replication factor):
the same properties must not run on one broker and fail on Kafka.

:class:`TopicBackedStore` is the lifecycle the three Kafka stores share (Kafka's
``KafkaTopicBasedBackingStore``): check/create the topic, then run one
:class:`~worker.storage.kafka.log.KafkaBasedLog` over it, with clients configured by
:func:`internal_client_config`. A store may be given a statistics callback for its log's
producer and consumer (``report_statistics``, wired by the composition root; storage never
imports the runtime that reads them).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic, ResourceType

from worker.clients.librdkafka_keys import is_librdkafka_property
from worker.clients.properties import translate_logged
from worker.config.worker_config import DistributedConfig, WorkerConfig
from worker.errors import ConfigError, StorageError
from worker.storage.kafka.log import KafkaBasedLog, LogRecord
from worker.util.logs import INTERNAL_TOPIC_CLIENTS, watch_logs

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S = 30.0
COMPACT = "compact"
_METADATA_RETRY_S = 0.1
# Errors after which Kafka assumes the topic exists (or is auto-created) and carries on.
_CANNOT_CREATE = frozenset({
    KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError.CLUSTER_AUTHORIZATION_FAILED,
    KafkaError.UNSUPPORTED_VERSION})
_ROLES = ("producer", "consumer", "admin")
# Top-level worker keys that configure the connection to Kafka for every client.
_SECURITY_PREFIXES = ("security.", "ssl.", "sasl.")
_TLS_PROTOCOLS = frozenset({"SSL", "SASL_SSL"})


def internal_client_config(config: WorkerConfig, role: str, purpose: str) -> dict[str, Any]:
    """Client settings of an internal-topic ``role`` (producer, consumer or admin).

    ``bootstrap.servers``, the worker's top-level ``security.*``/``ssl.*``/``sasl.*`` keys,
    then its ``{role}.`` keys, translated together from Kafka's Java names
    (``worker.clients.properties``); ``client.id`` is
    ``{client.id or 'connect'}-{purpose}-{role}``.
    """
    if role not in _ROLES:
        raise ValueError(f"role must be one of {_ROLES}, not {role!r}")
    # Top-level ssl.* keys configure the Kafka clients only when they talk TLS to Kafka (as
    # in Java); otherwise they are the REST listener's fallback TLS settings
    # (docs/tls.md), which librdkafka would refuse.
    tls_to_kafka = config.originals.get("security.protocol", "").upper() in _TLS_PROTOCOLS
    java = {k: v for k, v in config.originals.items() if k.startswith(_SECURITY_PREFIXES)
            and (tls_to_kafka or not k.startswith("ssl."))}
    java.update({k: v for k, v in config.prefixed(f"{role}.").items()
                 if not _is_rest_listener_key(role, k)})
    props = translate_logged(java, role, f"the {purpose} {role}", is_librdkafka_property)
    conf: dict[str, Any] = {"bootstrap.servers": config.bootstrap_servers, **props.config}
    conf["client.id"] = f"{config.get('client.id') or 'connect'}-{purpose}-{role}"
    return conf


def _is_rest_listener_key(role: str, key: str) -> bool:
    """``admin.listeners`` and ``admin.listeners.https.*`` share the admin client's prefix
    but belong to the REST server (Kafka's admin listeners)."""
    return role == "admin" and (key == "listeners" or key.startswith("listeners."))


@dataclass(frozen=True)
class TopicSpec:
    """An internal topic: its name, the property naming it, and how to create it."""

    name: str
    property: str
    purpose: str  # what it stores, in Kafka's error messages
    client_purpose: str  # client.id suffix: configs, offsets, statuses
    partitions: int
    replication_factor: int
    single_partition: bool = False


def _replication_property(spec: TopicSpec) -> str:
    """``config.storage.replication.factor`` for ``config.storage.topic``, etc."""
    return f"{spec.property.removesuffix('.topic')}.replication.factor"


def topic_spec(config: DistributedConfig, kind: str) -> TopicSpec:
    """The spec of the ``config``, ``offset`` or ``status`` topic of a distributed worker."""
    if kind == "config":
        return TopicSpec(config.get("config.storage.topic"), "config.storage.topic",
                         "connector configurations", "configs", 1,
                         config.get("config.storage.replication.factor"), single_partition=True)
    if kind == "offset":
        return TopicSpec(config.get("offset.storage.topic"), "offset.storage.topic",
                         "source connector offsets", "offsets",
                         config.get("offset.storage.partitions"),
                         config.get("offset.storage.replication.factor"))
    if kind == "status":
        return TopicSpec(config.get("status.storage.topic"), "status.storage.topic",
                         "connector and task statuses", "statuses",
                         config.get("status.storage.partitions"),
                         config.get("status.storage.replication.factor"))
    raise ValueError(f"unknown internal topic kind {kind!r}")


def ensure_topic(admin_config: Mapping[str, Any], spec: TopicSpec,
                 timeout_s: float = DEFAULT_TIMEOUT_S) -> bool:
    """Create the topic if missing (True) or check the existing one (False).

    Raises ConfigError (naming ``spec.property``) for an unusable topic, StorageError when
    Kafka cannot be asked. Nothing is written to the topic either way.
    """
    conf: dict[str, Any] = {**admin_config, "logger": logging.getLogger(INTERNAL_TOPIC_CLIENTS)}
    admin = watch_logs(AdminClient(conf))
    deadline = time.monotonic() + timeout_s
    _check_replication_factor(admin, spec, timeout_s)
    created = _create(admin, spec, timeout_s)
    partitions = _partition_count(admin, spec, deadline)
    if spec.single_partition and partitions != 1:
        raise ConfigError(spec.property, (
            f"Topic '{spec.name}' supplied via the '{spec.property}' property is required to "
            f"have a single partition in order to guarantee consistency of {spec.purpose}, "
            f"but found {partitions} partitions."))
    if not created:
        _check_compacted(admin, spec, max(0.1, deadline - time.monotonic()))
    return created


def _check_replication_factor(admin: AdminClient, spec: TopicSpec, timeout_s: float) -> None:
    """Refuse to create a topic with more replicas than there are brokers, with the message
    Kafka's controller gives (Kafka Connect then fails to start). An existing topic, the
    broker's default (-1) or metadata that cannot be read (``_create`` reports that) pass.
    """
    wanted = spec.replication_factor
    if wanted <= 0:
        return
    try:
        # All topics: asking for one by name may make a broker auto-create it.
        metadata = admin.list_topics(timeout=timeout_s)
    except KafkaException as exc:
        log.debug("Could not list topics to check the replication factor: %s", exc)
        return
    brokers = len(metadata.brokers)
    if spec.name in metadata.topics or not 0 < brokers < wanted:
        return
    raise StorageError(
        f"Error while attempting to create/find topic '{spec.name}' (set by "
        f"{spec.property}): Unable to replicate the partition {wanted} time(s): The target "
        f"replication factor of {wanted} cannot be reached because only {brokers} "
        f"broker(s) are registered. Set {_replication_property(spec)} to at most {brokers} "
        f"(the number of brokers), or to -1 for the broker's default.")


def _create(admin: AdminClient, spec: TopicSpec, timeout_s: float) -> bool:
    new = NewTopic(spec.name, num_partitions=spec.partitions,
                   replication_factor=spec.replication_factor,
                   config={"cleanup.policy": COMPACT})
    try:
        admin.create_topics([new], operation_timeout=timeout_s,
                            request_timeout=timeout_s)[spec.name].result(timeout_s)
    except KafkaException as exc:
        code = exc.args[0].code() if exc.args and isinstance(exc.args[0], KafkaError) else None
        if code == KafkaError.TOPIC_ALREADY_EXISTS:
            return False
        if code in _CANNOT_CREATE:
            log.warning("Could not create topic '%s' (%s); assuming it exists or will be "
                        "auto-created by the broker", spec.name, exc)
            return False
        raise StorageError(f"Error while attempting to create/find topic '{spec.name}' "
                           f"(set by {spec.property}): {exc}") from exc
    log.info("Created topic '%s' (%s) for %s", spec.name, spec.property, spec.purpose)
    return True


def _partition_count(admin: AdminClient, spec: TopicSpec, deadline: float) -> int:
    # A topic just created may take a moment to appear in every broker's metadata.
    while True:
        remaining = deadline - time.monotonic()
        try:
            topic = admin.list_topics(topic=spec.name,
                                      timeout=max(0.1, remaining)).topics.get(spec.name)
        except KafkaException as exc:
            raise StorageError(f"Could not describe topic '{spec.name}': {exc}") from exc
        if topic is not None and topic.error is None and topic.partitions:
            return len(topic.partitions)
        if remaining <= 0:
            raise StorageError(f"Topic '{spec.name}' (set by {spec.property}) did not become "
                               f"available: {getattr(topic, 'error', None)}")
        time.sleep(_METADATA_RETRY_S)


def _check_compacted(admin: AdminClient, spec: TopicSpec, timeout_s: float) -> None:
    resource = ConfigResource(ResourceType.TOPIC, spec.name)
    try:
        configs = admin.describe_configs([resource], request_timeout=timeout_s)[resource]
        entry = configs.result(timeout_s).get("cleanup.policy")
    except KafkaException as exc:
        log.warning("Could not describe the configs of topic '%s': %s", spec.name, exc)
        entry = None
    if entry is None or entry.value is None:
        log.warning("Unable to verify that the cleanup policy of topic '%s' is '%s': the "
                    "broker did not report it (it may not support describing topic configs, "
                    "or the principal lacks permission to).", spec.name, COMPACT)
        return
    policies = {p.strip().lower() for p in str(entry.value).split(",") if p.strip()}
    if policies != {COMPACT}:
        found = ",".join(sorted(policies))
        raise ConfigError(spec.property, (
            f"Topic '{spec.name}' supplied via the '{spec.property}' property is required to "
            f"have 'cleanup.policy={COMPACT}' to guarantee consistency and durability of "
            f"{spec.purpose}, but found the topic currently has 'cleanup.policy={found}'. "
            f"Continuing would likely result in eventually losing {spec.purpose} and problems "
            f"restarting this Connect cluster in the future. Change the '{spec.property}' "
            f"property in the Connect worker configurations to use a topic with "
            f"'cleanup.policy={COMPACT}'."))


class TopicBackedStore:
    """What every Kafka store shares: its topic, its log, its listener.

    ``start()`` checks or creates the topic, then reads the log to its end; only then is
    the listener (``set_listener``) told about records, as in Kafka.
    """

    def __init__(self, config: DistributedConfig, kind: str,
                 timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self._config = config
        self._spec = topic_spec(config, kind)
        self._timeout_s = timeout_s
        self._log: KafkaBasedLog | None = None
        self._listener: Callable[[Any], None] | None = None
        self._listening = False
        self._stats_cb: Callable[[str], None] | None = None
        self._admin_stats_cb: Callable[[str], None] | None = None
        self._stats_interval_ms = 0

    @property
    def topic(self) -> str:
        return self._spec.name

    def report_statistics(self, stats_cb: Callable[[str], None] | None,
                          interval_ms: int,
                          admin_stats_cb: Callable[[str], None] | None = None) -> None:
        """Before ``start()``: hand the log's producer and consumer ``stats_cb``, and its
        admin client ``admin_stats_cb``, which librdkafka calls with its statistics JSON
        every ``interval_ms`` (unless the worker's ``producer.``/``consumer.``/``admin.``
        ``statistics.interval.ms`` says otherwise; ``0`` is none). Neither may raise:
        they run inside the log threads' client calls."""
        self._stats_cb, self._stats_interval_ms = stats_cb, interval_ms
        self._admin_stats_cb = admin_stats_cb

    def start(self) -> None:
        if self._log is not None:
            return
        spec, purpose = self._spec, self._spec.client_purpose
        admin = internal_client_config(self._config, "admin", purpose)
        ensure_topic(admin, spec, self._timeout_s)
        clients = {role: internal_client_config(self._config, role, purpose)
                   for role in ("producer", "consumer")}
        if self._stats_cb is not None:
            for conf in clients.values():
                conf.setdefault("statistics.interval.ms", self._stats_interval_ms)
        if self._admin_stats_cb is not None:
            # A copy: ensure_topic's admin client above is built for one call.
            admin = {**admin}
            admin.setdefault("statistics.interval.ms", self._stats_interval_ms)
        kafka_log = KafkaBasedLog(
            spec.name, admin_config=admin, on_record=self._on_record,
            producer_config=clients["producer"], consumer_config=clients["consumer"],
            stats_cb=self._stats_cb, admin_stats_cb=self._admin_stats_cb)
        kafka_log.start(self._timeout_s)
        self._log = kafka_log
        self._listening = True

    def stop(self) -> None:
        kafka_log, self._log = self._log, None
        self._listening = False
        if kafka_log is not None:
            kafka_log.stop()

    def refresh(self, timeout_s: float | None = None) -> None:
        """Read the topic to its end (bounded): what other workers wrote becomes visible."""
        self.kafka_log.read_to_end(self._timeout_s if timeout_s is None else timeout_s)

    def set_listener(self, callback: Callable[[Any], None] | None) -> None:
        """Called on the log thread after each change read from the topic (once started)."""
        self._listener = callback

    @property
    def kafka_log(self) -> KafkaBasedLog:
        kafka_log = self._log
        if kafka_log is None:
            raise StorageError(f"The store of topic '{self._spec.name}' is not started")
        return kafka_log

    def _emit(self, update: Any) -> None:
        listener = self._listener
        if listener is None or not self._listening:
            return
        try:
            listener(update)
        except Exception:
            log.exception("The listener of topic '%s' failed on %r", self._spec.name, update)

    def _on_record(self, record: LogRecord) -> None:
        raise NotImplementedError
