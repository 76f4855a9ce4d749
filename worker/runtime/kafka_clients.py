"""Kafka client configs for tasks, built the way Kafka Connect builds them.

Order of precedence (later wins): Connect's defaults, the worker's ``producer.`` /
``consumer.`` / ``admin.`` keys, then the connector's ``producer.override.`` /
``consumer.override.`` / ``admin.override.`` keys (allowed by
``connector.client.config.override.policy``, checked at validation).
"""

from __future__ import annotations

from collections.abc import Mapping

from worker.config.worker_config import WorkerConfig
from worker.util.kafka_types import ClientConfig
from worker.util.props import strip_prefix

# Keys of Java clients that librdkafka does not know; dropped so a worker.properties
# written for Kafka starts unchanged.
_JAVA_ONLY = frozenset({
    "key.serializer", "value.serializer", "key.deserializer", "value.deserializer",
    "buffer.memory", "max.block.ms", "interceptor.classes", "partitioner.class",
    "max.poll.records", "default.api.timeout.ms", "exclude.internal.topics",
    "client.dns.lookup", "metric.reporters", "auto.include.jmx.reporter",
    "delivery.timeout.ms.config",
})


def _clean(props: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in props.items() if k not in _JAVA_ONLY}


def producer_config(worker: WorkerConfig, connector_config: Mapping[str, str],
                    client_id: str) -> dict[str, str]:
    conf: dict[str, str] = {
        "bootstrap.servers": worker.bootstrap_servers,
        # Connect's producer: every record acknowledged by all in-sync replicas; the
        # idempotent producer keeps per-partition order across retries (no gaps, no
        # reordering), which source offset commits rely on.
        "acks": "all",
        "enable.idempotence": "true",
        "linger.ms": "5",
        "client.id": client_id,
    }
    conf.update(_clean(worker.prefixed("producer.")))
    conf.update(_clean(strip_prefix(connector_config, "producer.override.")))
    return conf


def consumer_config(worker: WorkerConfig, connector_config: Mapping[str, str],
                    connector: str, client_id: str) -> dict[str, str]:
    conf: dict[str, str] = {
        "bootstrap.servers": worker.bootstrap_servers,
        "group.id": sink_group_id(connector, connector_config),
        "enable.auto.commit": "false",
        "auto.offset.reset": "earliest",
        # librdkafka rechecks metadata every 5 min by default, so a sink subscribed before
        # its topic exists (or a topics.regex gaining a topic) would wait that long.
        "topic.metadata.refresh.interval.ms": "10000",
        "client.id": client_id,
    }
    conf.update(_clean(worker.prefixed("consumer.")))
    conf.update(_clean(strip_prefix(connector_config, "consumer.override.")))
    conf["enable.auto.commit"] = "false"  # the runtime commits after flush, never librdkafka
    return conf


def admin_passthrough(worker: WorkerConfig) -> dict[str, str]:
    """The worker's ``admin.*`` client settings, without the REST server's own keys that
    share the prefix: ``admin.listeners`` and ``admin.listeners.https.*`` (Kafka's admin
    REST listeners) are no client settings."""
    return {k: v for k, v in _clean(worker.prefixed("admin.")).items()
            if k != "listeners" and not k.startswith("listeners.")}


def admin_config(worker: WorkerConfig, connector_config: Mapping[str, str] | None = None
                 ) -> ClientConfig:
    conf: ClientConfig = {"bootstrap.servers": worker.bootstrap_servers}
    conf.update(admin_passthrough(worker))
    if connector_config:
        conf.update(_clean(strip_prefix(connector_config, "admin.override.")))
    return conf


def sink_group_id(connector: str, connector_config: Mapping[str, str]) -> str:
    """``connect-{name}``, or the ``consumer.override.group.id`` (KIP-875 reads it too)."""
    return connector_config.get("consumer.override.group.id") or f"connect-{connector}"
