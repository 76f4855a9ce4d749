"""Every key of a worker's configuration, with its type, default and doc, once.

Keys use Apache Kafka Connect's names, so a ``worker.properties`` written for Kafka's
``connect-standalone`` starts unchanged: ``COMMON`` (both modes), ``STANDALONE`` and
``DISTRIBUTED`` (each mode's), the keys Kafka's workers understand that we accept unused
(``KNOWN_UNUSED``), and Kafka's removed REST keys (``REMOVED_REST_KEYS``). Settings of our
own are documented in ``docs/configuration.md``. ``worker.config.worker_config`` parses a
worker's properties against these.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from worker.api.config_def import (
    NO_DEFAULT,
    ConfigDef,
    Importance,
    Type,
    at_least,
    in_range,
    one_of,
)
from worker.api.exceptions import ConfigException
from worker.config import crypto
from worker.config.rest_limits import REST_LIMITS

JSON_CONVERTER = "org.apache.kafka.connect.json.JsonConverter"

# Prefixes whose keys are passed on to clients/plugins rather than read by the worker.
PASSTHROUGH_PREFIXES = (
    "producer.", "consumer.", "admin.", "key.converter.", "value.converter.",
    "header.converter.", "listeners.https.", "admin.listeners.https.",
    "ssl.", "sasl.", "security.", "metric.reporters.",
)

def _replication_factor(name: str, value: Any) -> None:
    if value is not None and (value == 0 or value < -1):
        raise ConfigException(name, value, "Replication factor must be positive or -1 "
                              "(the broker default)")


def _partitions(name: str, value: Any) -> None:
    if value is not None and (value == 0 or value < -1):
        raise ConfigException(name, value, "Number of partitions must be positive or -1 "
                              "(the broker default)")


def _mac_algorithm(name: str, value: Any) -> None:
    # Kafka's message names the JVM's algorithms; ours the worker's (worker.config.crypto).
    if crypto.hmac_algorithm(value) is None:
        raise ConfigException(name, value, "the algorithm is not supported by this worker; "
                              f"the supported algorithms are: {crypto.supported()}")


def _exactly_once_source_support(name: str, value: Any) -> None:
    one_of("disabled", "preparing", "enabled")(name, value)
    if str(value).lower() == "enabled":
        raise ConfigException(name, value, "exactly-once source delivery (KIP-618) is not "
                              "supported by this worker; source connectors deliver at least "
                              "once. Use 'disabled'")


def _verification_algorithms(name: str, value: Any) -> None:
    if not value:
        raise ConfigException(name, value, "At least one signature verification algorithm "
                              "must be provided")
    for algorithm in value:
        _mac_algorithm(name, algorithm)


def _admin_listeners(name: str, value: Any) -> None:
    # Kafka's AdminListenersValidator: an empty list is allowed, an empty entry is not.
    if value and any(not entry for entry in value):
        raise ConfigException(name, value, "Empty URL found when parsing admin.listeners "
                              "list.")


def _package_names(name: str, value: Any) -> None:
    # plugin.import.packages: dotted Python package names (a typo must not pass silently).
    bad = [entry for entry in value
           if not entry or not all(part.isidentifier() for part in entry.split("."))]
    if bad:
        raise ConfigException(name, ",".join(value),
                              "Entries must be Python package names such as acme_connect "
                              "or acme.connect")


COMMON = (
    ConfigDef()
    .define("bootstrap.servers", Type.LIST, "localhost:9092", Importance.HIGH,
            "Kafka brokers to connect to (host:port, comma-separated).")
    .define("key.converter", Type.CLASS, JSON_CONVERTER, Importance.HIGH,
            "Default converter for record keys; connectors may override it.")
    .define("value.converter", Type.CLASS, JSON_CONVERTER, Importance.HIGH,
            "Default converter for record values; connectors may override it.")
    .define("header.converter", Type.CLASS,
            "org.apache.kafka.connect.storage.SimpleHeaderConverter", Importance.LOW,
            "HeaderConverter class used to convert between Kafka Connect format and the "
            "serialized form that is written to Kafka. This controls the format of the header "
            "values in messages written to or read from Kafka, and since this is independent "
            "of connectors it allows any connector to work with any serialization format. "
            "By default, the SimpleHeaderConverter is used to serialize header values to "
            "strings and deserialize them by inferring the schemas.")
    .define("listeners", Type.LIST, "http://:8083", Importance.LOW,
            "REST listeners, e.g. http://127.0.0.1:8083 (an empty host = all interfaces).")
    .define("rest.advertised.host.name", Type.STRING, None, Importance.LOW,
            "Host name other workers and clients should use to reach this worker.")
    .define("rest.advertised.port", Type.INT, None, Importance.LOW,
            "Port other workers and clients should use to reach this worker.")
    .define("rest.advertised.listener", Type.STRING, None, Importance.LOW,
            "Protocol (http/https) of the listener advertised to other workers; unset: "
            "http if any listener is http, else https.",
            validator=one_of("http", "https"))
    .define("admin.listeners", Type.LIST, None, Importance.LOW,
            "Listeners of the /admin/* endpoints. Unset: the regular listeners serve them; "
            "empty: disabled (404); set: only these listeners serve them (and only them).",
            validator=_admin_listeners)
    .define("offset.flush.interval.ms", Type.LONG, 60000, Importance.LOW,
            "How often source offsets are committed and sink consumer offsets committed.",
            validator=at_least(1))
    .define("offset.flush.timeout.ms", Type.LONG, 5000, Importance.LOW,
            "Time to wait for outstanding records to be acknowledged at a commit.",
            validator=at_least(0))
    .define("task.shutdown.graceful.timeout.ms", Type.LONG, 5000, Importance.LOW,
            "Time to wait for a task to stop before it is abandoned and reported.",
            validator=at_least(0))
    .define("plugin.path", Type.LIST, "", Importance.LOW,
            "Plugin locations, comma-separated: directories whose immediate children are "
            "plugin locations (wheels, zips, directories of installed distributions or of "
            "plain modules), or archives that are one (docs/plugins.md).")
    .define("plugin.discovery", Type.STRING, "hybrid_warn", Importance.LOW,
            "How plugins are discovered (KIP-898, case-insensitive): only_scan imports every "
            "module of every plugin location; hybrid_warn also reads manifests and warns "
            "about plugins without one; hybrid_fail refuses to start then; service_load "
            "reads manifests only and imports a plugin when it is used.",
            validator=one_of("only_scan", "hybrid_warn", "hybrid_fail", "service_load"))
    .define("plugin.import.packages", Type.LIST, "", Importance.LOW,
            "Python packages of the worker's environment (dotted names, comma-separated) "
            "whose classes connector configs and worker properties may name by import path "
            "without a manifest. Import paths resolve only to registered plugins, to classes "
            "of the packages of installed plugin distributions (those declaring "
            "connect_plane.* entry points) and of these packages: a module is imported only "
            "inside them, since importing runs its code (docs/plugins.md; connect-plane "
            "setting).",
            validator=_package_names)
    .define("topic.tracking.enable", Type.BOOLEAN, True, Importance.LOW,
            "Record the topics each connector uses (KIP-558).")
    .define("topic.tracking.allow.reset", Type.BOOLEAN, True, Importance.LOW,
            "Allow PUT /connectors/{c}/topics/reset.")
    .define("topic.creation.enable", Type.BOOLEAN, True, Importance.LOW,
            "Whether to allow automatic creation of topics used by source connectors, when "
            "source connectors are configured with `topic.creation.` properties. Each task "
            "will use an admin client to create its topics and will not depend on the Kafka "
            "brokers to create topics automatically.")
    .define("connector.client.config.override.policy", Type.STRING, "All", Importance.MEDIUM,
            "Which producer./consumer./admin.override.* connector keys are allowed.",
            validator=one_of("None", "Principal", "All", case_sensitive=True))
    .define("client.id", Type.STRING, "", Importance.LOW, "Prefix for Kafka client ids.")
    .define("rest.extension.classes", Type.LIST, "", Importance.LOW,
            "REST extensions wrapping the REST API, in order (Java class names, Kafka's "
            "aliases or Python import paths of worker.api.RestExtension subclasses).")
    .define("rest.admin.principals", Type.STRING, "", Importance.MEDIUM,
            "Principals allowed to write under /admin, separated by ';': user names "
            "authenticated by a REST extension, client certificate subjects (RFC 4514). "
            "Empty: no check (connect-plane setting).")
    .define("rest.basic.auth.credentials.file", Type.STRING, None, Importance.MEDIUM,
            "BasicAuthSecurityRestExtension: the user=password properties file "
            "(connect-plane setting).")
    .define("rest.basic.auth.jaas.file", Type.STRING, None, Importance.MEDIUM,
            "BasicAuthSecurityRestExtension: Kafka's JAAS file whose KafkaConnect entry's "
            "PropertyFileLoginModule names the credentials file (connect-plane setting).")
    .define("metrics.sample.window.ms", Type.LONG, 30000, Importance.LOW,
            "The window of time a metrics sample is computed over (the windowed rates, "
            "averages and maxima of /metrics, docs/metrics.md).",
            validator=at_least(1))
    .define("metrics.num.samples", Type.INT, 2, Importance.LOW,
            "The number of samples kept to compute windowed metrics.",
            validator=at_least(1))
    .define("rest.metrics.enabled", Type.BOOLEAN, True, Importance.LOW,
            "Serve the worker's metrics in Prometheus text format on /metrics of the REST "
            "listeners (not on admin.listeners); false answers 404 (connect-plane setting, "
            "docs/metrics.md).")
    .define("rest.docs.enabled", Type.BOOLEAN, True, Importance.LOW,
            "Serve /docs (Swagger UI) and /redoc over /openapi.json, from the installed "
            "package's assets (no CDN); false answers 404 there (connect-plane setting).")
    .define("exactly.once.source.support", Type.STRING, "disabled", Importance.HIGH,
            "Whether to enable exactly-once support for source connectors (KIP-618; a "
            "distributed-mode key in Kafka, checked in both modes here). "
            "This worker does not implement it: 'disabled' and 'preparing' (which changes "
            "nothing here) are accepted, 'enabled' is refused rather than silently running "
            "source connectors at least once.", validator=_exactly_once_source_support)
).merge(REST_LIMITS)

STANDALONE = COMMON.merge(
    ConfigDef()
    .define("offset.storage.file.filename", Type.STRING, None, Importance.LOW,
            "Kafka's standalone offset file. We keep state in SQL; when storage.sql.url is "
            "unset, the SQLite database is created next to this path (<file>.db).")
    .define("storage.sql.url", Type.STRING, None, Importance.HIGH,
            "SQLAlchemy URL of the standalone state database (connect-plane setting). "
            "Default: sqlite next to offset.storage.file.filename, else "
            "./connect-standalone.db.")
)

DISTRIBUTED = COMMON.merge(
    ConfigDef()
    .define("group.id", Type.STRING, NO_DEFAULT, Importance.HIGH,
            "Unique name of the Connect cluster this worker joins.")
    .define("config.storage.topic", Type.STRING, NO_DEFAULT, Importance.HIGH,
            "Compacted topic (1 partition) holding connector and task configs.")
    .define("offset.storage.topic", Type.STRING, NO_DEFAULT, Importance.HIGH,
            "Compacted topic holding source connector offsets.")
    .define("status.storage.topic", Type.STRING, NO_DEFAULT, Importance.HIGH,
            "Compacted topic holding connector, task and active-topic statuses.")
    .define("config.storage.replication.factor", Type.SHORT, 3, Importance.LOW,
            "Replication factor of the config topic when created (-1: broker default).",
            validator=_replication_factor)
    .define("offset.storage.replication.factor", Type.SHORT, 3, Importance.LOW,
            "Replication factor of the offset topic when created (-1: broker default).",
            validator=_replication_factor)
    .define("status.storage.replication.factor", Type.SHORT, 3, Importance.LOW,
            "Replication factor of the status topic when created (-1: broker default).",
            validator=_replication_factor)
    .define("offset.storage.partitions", Type.INT, 25, Importance.LOW,
            "Partitions of the offset topic when created (-1: broker default).",
            validator=_partitions)
    .define("status.storage.partitions", Type.INT, 5, Importance.LOW,
            "Partitions of the status topic when created (-1: broker default).",
            validator=_partitions)
    .define("session.timeout.ms", Type.INT, 10000, Importance.HIGH,
            "Time without heartbeats after which the group coordinator removes a worker.",
            validator=at_least(1))
    .define("heartbeat.interval.ms", Type.INT, 3000, Importance.HIGH,
            "Interval between heartbeats to the group coordinator.", validator=at_least(1))
    .define("rebalance.timeout.ms", Type.INT, 60000, Importance.HIGH,
            "Time a worker may take to rejoin the group during a rebalance.",
            validator=at_least(1))
    .define("scheduled.rebalance.max.delay.ms", Type.INT, 300000, Importance.LOW,
            "Time a departed worker's connectors and tasks wait for it to return before "
            "they are reassigned.", validator=at_least(0))
    .define("worker.sync.timeout.ms", Type.INT, 3000, Importance.MEDIUM,
            "Time to wait for the config topic to catch up before giving up the "
            "assignment and rejoining.", validator=at_least(1))
    .define("worker.unsync.backoff.ms", Type.INT, 300000, Importance.MEDIUM,
            "Back-off before rejoining after failing to catch up with the config topic.",
            validator=at_least(0))
    .define("connect.protocol", Type.STRING, "sessioned", Importance.LOW,
            "Kafka's protocol choice. Rebalancing is always connect-plane's incremental "
            "protocol; sessioned (every member) turns internal request signing on "
            "(KIP-507), eager or compatible turn it off (see docs/distributed.md).",
            validator=one_of("eager", "compatible", "sessioned"))
    .define("inter.worker.key.generation.algorithm", Type.STRING, crypto.DEFAULT_ALGORITHM,
            Importance.LOW, "The algorithm to use for generating internal request keys.",
            validator=_mac_algorithm)
    .define("inter.worker.key.size", Type.INT, None, Importance.LOW,
            "The size of the key to use for signing internal requests, in bits. If null, "
            "the default key size for the key generation algorithm will be used.")
    .define("inter.worker.key.ttl.ms", Type.INT, 3600000, Importance.LOW,
            "The TTL of generated session keys used for internal request validation (in "
            "milliseconds).", validator=in_range(0, 2**31 - 1))
    .define("inter.worker.signature.algorithm", Type.STRING, crypto.DEFAULT_ALGORITHM,
            Importance.LOW, "The algorithm used to sign internal requests.",
            validator=_mac_algorithm)
    .define("inter.worker.verification.algorithms", Type.LIST, crypto.DEFAULT_ALGORITHM,
            Importance.LOW, "A list of permitted algorithms for verifying internal "
            "requests, which must include the algorithm used for the "
            "inter.worker.signature.algorithm property.",
            validator=_verification_algorithms)
)


# Keys Kafka's workers understand that we accept without using them (logged at INFO).
KNOWN_UNUSED = frozenset({
    "offset.storage.file.filename", "key.converter.schemas.enable",
    "value.converter.schemas.enable", "internal.key.converter", "internal.value.converter",
    "access.control.allow.origin",
    "access.control.allow.methods", "response.http.headers.config",
    "metrics.recording.level", "auto.include.jmx.reporter",
    "connections.max.idle.ms", "receive.buffer.bytes", "send.buffer.bytes",
    "request.timeout.ms", "retry.backoff.ms", "reconnect.backoff.ms",
    "reconnect.backoff.max.ms", "metric.reporters", "client.dns.lookup",
})


# Kafka Connect's REST settings before ``listeners`` (KIP-208), removed in Kafka 4.0
# (KAFKA-12482): a Kafka 4 worker starts anyway, on its default listener. Logged at WARNING
# with the ``listeners=`` line they stood for.
REMOVED_REST_KEYS = ("rest.host.name", "rest.port")


def removed_rest_keys_warning(raw: Mapping[str, str]) -> str | None:
    """The warning for ``rest.host.name``/``rest.port`` in ``raw``, else None.

    The ``listeners=`` line is the one Kafka 3 built from them (``http://<host>:<port>``,
    host empty = all interfaces, port 8083 by default), from the values as written:
    placeholders stay unresolved, so nothing a config provider holds reaches the log.
    """
    present = [key for key in REMOVED_REST_KEYS if key in raw]
    if not present:
        return None
    host = raw.get("rest.host.name", "").strip()
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"  # an IPv6 literal in a URL
    port = raw.get("rest.port", "").strip() or "8083"
    line = f"listeners=http://{host}:{port}"
    keys, are = (" and ".join(present), "are") if len(present) > 1 else (present[0], "is")
    if "listeners" in raw:
        where = f"listeners is set and is used; remove {keys} (= {line})"
    else:
        where = ("the REST API listens on the default listeners=http://:8083 (all "
                 f"interfaces); use {line} instead")
    return (f"Worker config {keys} {are} no longer supported (removed in Kafka Connect 4.0, "
            f"KAFKA-12482) and {are} ignored: {where}")
