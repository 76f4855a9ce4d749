"""Kafka client configs for tasks, built the way Kafka Connect builds them.

Order of precedence (later wins): Connect's defaults, the worker's ``producer.`` /
``consumer.`` / ``admin.`` keys, then the connector's ``producer.override.`` /
``consumer.override.`` / ``admin.override.`` keys (allowed by
``connector.client.config.override.policy``, checked at validation).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from worker.clients.consumer_defaults import CONSUMER_DEFAULTS
from worker.clients.kafka_types import ClientConfig
from worker.clients.librdkafka_keys import is_librdkafka_property
from worker.clients.properties import ClientProps, translate_logged
from worker.config.worker_config import WorkerConfig
from worker.util.logs import TASK_CLIENTS
from worker.util.props import strip_prefix


def task_client_props(worker: WorkerConfig, connector_config: Mapping[str, str], role: str
                      ) -> ClientProps:
    """A connector's ``role`` client settings: the worker's ``{role}.`` keys, then the
    connector's ``{role}.override.`` keys, translated together."""
    java = worker_client_keys(worker, role)
    java.update(strip_prefix(connector_config, f"{role}.override."))
    return translate_logged(java, role, f"connector {role} clients", is_librdkafka_property)


def worker_client_keys(worker: WorkerConfig, role: str) -> dict[str, str]:
    """The worker's ``{role}.`` keys, without the REST server's own keys that share the
    admin prefix: ``admin.listeners`` and ``admin.listeners.https.*`` (Kafka's admin REST
    listeners) are no client settings."""
    keys = worker.prefixed(f"{role}.")
    if role == "admin":
        keys = {k: v for k, v in keys.items()
                if k != "listeners" and not k.startswith("listeners.")}
    return keys


# librdkafka's delivery.timeout.ms maximum, Kafka Connect's Integer.MAX_VALUE (0 = none too).
NO_DELIVERY_TIMEOUT_MS = 2_147_483_647


# KIP-714 client metrics pushed to the broker: librdkafka builds their latency histograms
# in every client whether or not the broker asks for them, about 250 kB per client (40 % of
# an idle task client's memory; 100 MB of RSS at 500 tasks). Off for task clients unless a
# ``producer.``/``consumer.``/``admin.`` key or a connector override turns it on; Apache
# Kafka's clients default to on.
METRICS_PUSH = {"enable.metrics.push": "false"}


# librdkafka's range of statistics.interval.ms is 0 (off) .. 24 h; the worker's default for
# task clients stays at least 1 s (each document costs the task thread a JSON parse).
_MIN_STATS_INTERVAL_MS, _MAX_STATS_INTERVAL_MS = 1000, 86_400_000


def statistics_interval_ms(worker: WorkerConfig) -> int:
    """The default ``statistics.interval.ms`` of the producers whose statistics feed
    /metrics (and of the internal topics' clients): the worker's
    ``metrics.sample.window.ms`` (the window of Kafka's own metrics), within 1 s .. 24 h.
    librdkafka then hands its statistics to the client's ``stats_cb``
    (``worker.runtime.metrics.clients``); a ``producer.``/``consumer.`` key or a connector
    override of ``statistics.interval.ms`` wins, ``0`` turns them off. Only while the
    worker serves ``/metrics`` (``rest.metrics.enabled``): with statistics on, librdkafka
    keeps latency histograms per broker connection, about 110 kB per producer and 140 kB
    per consumer. Sink tasks' consumers get none by default: their lag and record count
    come from the task (``worker.runtime.metrics.consumer_lag``)."""
    window_ms = int(worker.get("metrics.sample.window.ms"))
    return min(max(window_ms, _MIN_STATS_INTERVAL_MS), _MAX_STATS_INTERVAL_MS)


def producer_config(worker: WorkerConfig, connector_config: Mapping[str, str],
                    client_id: str, *, statistics: bool = False) -> dict[str, str]:
    """``statistics``: a producer whose statistics feed /metrics through a ``stats_cb``
    (a source task's; a dead letter queue's, whose reporter installs its listener). Not
    for one without a ``stats_cb`` (the config check's): librdkafka would build them for
    nothing."""
    conf: dict[str, str] = {
        "bootstrap.servers": worker.bootstrap_servers,
        # Connect's producer: every record acknowledged by all in-sync replicas; the
        # idempotent producer keeps per-partition order across retries (no gaps, no
        # reordering), which source offset commits rely on.
        "acks": "all",
        "enable.idempotence": "true",
        "linger.ms": "5",
        # Kafka Connect's value: retriable errors are retried without a deadline, so a
        # record never times out of the producer while the task runs.
        "delivery.timeout.ms": str(NO_DELIVERY_TIMEOUT_MS),
        # Kafka's producers hash keys with murmur2: keyed records land on the partitions
        # Java clients would choose (librdkafka's own default hashes with CRC32).
        "partitioner": "murmur2_random",
        "client.id": client_id,
        **METRICS_PUSH,
    }
    if statistics and worker.get("rest.metrics.enabled"):
        conf["statistics.interval.ms"] = str(statistics_interval_ms(worker))
    conf.update(task_client_props(worker, connector_config, "producer").config)
    tolerate_all = str(connector_config.get("errors.tolerance", "")).strip().lower() == "all"
    if (_true(conf.get("enable.idempotence")) and "enable.gapless.guarantee" not in conf
            and not tolerate_all):
        # A batch that fails for good while later ones of its partition are written would
        # leave a gap; with this, librdkafka fails the producer instead (a fatal error that
        # fails the task). librdkafka notes that the flag is experimental each time a
        # producer starts: CLIENT_LOG drops that notice. Not with errors.tolerance=all:
        # there a record that fails for good is skipped (KIP-779), so the producer must
        # live on, and the task takes one delivery report per record.
        conf["enable.gapless.guarantee"] = "true"
    return conf


class _GaplessNotice(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return "enable.gapless.guarantee is experimental" not in record.getMessage()


# The logger the worker's producers hand to librdkafka (confluent-kafka's ``logger``
# setting): their log lines join the worker's log, served by the task's poll() calls.
CLIENT_LOG = logging.getLogger(TASK_CLIENTS)
CLIENT_LOG.addFilter(_GaplessNotice())


def acknowledges_in_order(conf: Mapping[str, str]) -> bool:
    """True when, per partition, a delivered record implies that every record sent before
    it to that partition was delivered too: an idempotent producer (ordered, no duplicates)
    with the gapless guarantee and no delivery timeout (a timed-out record is the one gap
    the guarantee does not cover). Then one delivery report per partition and batch is
    enough to commit the batch's offsets (``worker.runtime.source_task``)."""
    timeouts = [conf[key] for key in ("delivery.timeout.ms", "message.timeout.ms")
                if key in conf]
    return (_true(conf.get("enable.idempotence"))
            and _true(conf.get("enable.gapless.guarantee"))
            and bool(timeouts)
            and all(t.strip() in ("0", str(NO_DELIVERY_TIMEOUT_MS)) for t in map(str, timeouts)))


def _true(value: str | None) -> bool:
    return str(value).strip().lower() == "true"


def consumer_config(worker: WorkerConfig, connector_config: Mapping[str, str],
                    connector: str, client_id: str) -> dict[str, str]:
    """A sink task's consumer. No statistics unless a ``consumer.`` key or an override
    asks (``statistics.interval.ms``): /metrics reads its lag without them."""
    conf: dict[str, str] = {
        "bootstrap.servers": worker.bootstrap_servers,
        "group.id": sink_group_id(connector, connector_config),
        "enable.auto.commit": "false",
        "auto.offset.reset": "earliest",
        # librdkafka rechecks metadata every 5 min by default, so a sink subscribed before
        # its topic exists (or a topics.regex gaining a topic) would wait that long.
        "topic.metadata.refresh.interval.ms": "10000",
        "client.id": client_id,
        **CONSUMER_DEFAULTS,  # fetch.queue.backoff.ms: worker.clients.consumer_defaults
        **METRICS_PUSH,
    }
    conf.update(task_client_props(worker, connector_config, "consumer").config)
    conf["enable.auto.commit"] = "false"  # the runtime commits after flush, never librdkafka
    return conf


def max_poll_records(worker: WorkerConfig, connector_config: Mapping[str, str]) -> int | None:
    """Kafka's ``max.poll.records`` of a sink task's consumer (worker ``consumer.`` key or
    connector override), which bounds the batches the runtime hands to ``put()``; None if
    unset."""
    return task_client_props(worker, connector_config, "consumer").max_poll_records


def admin_config(worker: WorkerConfig, connector_config: Mapping[str, str] | None = None
                 ) -> ClientConfig:
    conf: ClientConfig = {"bootstrap.servers": worker.bootstrap_servers, **METRICS_PUSH}
    conf.update(task_client_props(worker, connector_config or {}, "admin").config)
    return conf


def sink_group_id(connector: str, connector_config: Mapping[str, str]) -> str:
    """``connect-{name}``, or the ``consumer.override.group.id`` (KIP-875 reads it too)."""
    return connector_config.get("consumer.override.group.id") or f"connect-{connector}"
