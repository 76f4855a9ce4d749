"""librdkafka's own verdict on a client config, before any task needs the client.

librdkafka checks every setting when a client is built: an unknown name, a value out of
range, a certificate file it cannot load. Building a client without ``bootstrap.servers``
connects to nothing and costs well under a millisecond, so validation (``PUT
.../config/validate``, create, update) and the worker's start build each client config
once this way: a configuration error is reported on its key instead of failing a task at
start.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import AdminClient

from worker.clients import factories as kafka_clients
from worker.clients.properties import ROLES, ClientPropertyError, ClientProps
from worker.config.worker_config import WorkerConfig
from worker.errors import ConfigError
from worker.util.props import strip_prefix

#: librdkafka names its settings' aliases in its messages: alias → the name we set.
_ALIASES = {
    "compression.codec": "compression.type", "message.send.max.retries": "retries",
    "queue.buffering.max.ms": "linger.ms",
    "max.in.flight": "max.in.flight.requests.per.connection",
    "sasl.mechanisms": "sasl.mechanism", "fetch.message.max.bytes": "max.partition.fetch.bytes",
}
_NAMED = re.compile(r'property:? "(?P<quoted>[^"]+)"|: (?P<failed>[\w.]+) failed\b')
# Not for the check: a bootstrap list would make the client connect; a Kerberos client
# would run kinit at once (a min relogin time of 0 turns that off).
_CHECK_ONLY = {"sasl.kerberos.min.time.before.relogin": "0", "log_level": "0"}


def librdkafka_refusal(role: str, config: Mapping[str, str]) -> tuple[str | None, str] | None:
    """None if librdkafka builds a ``role`` client from ``config``; else the librdkafka
    setting it named (or None) and its message."""
    conf: dict[str, str | int | float | bool] = {
        k: v for k, v in config.items() if k != "bootstrap.servers"}
    conf.update(_CHECK_ONLY)
    if role == "consumer":
        conf.setdefault("group.id", "connect-config-check")
    try:
        if role == "producer":
            Producer(conf).flush(0)
        elif role == "consumer":
            Consumer(conf).close()
        else:
            AdminClient(conf)
    except KafkaException as exc:
        error = exc.args[0] if exc.args else None
        message = str(error.str()) if error is not None and hasattr(error, "str") else str(exc)
        named = _NAMED.search(message)
        setting = (named["quoted"] or named["failed"]) if named else None
        return (_ALIASES.get(setting, setting) if setting else None), message
    return None


def refusal_key(props: ClientProps, setting: str | None) -> str | None:
    """The Java key behind a librdkafka setting librdkafka refused (None if unknown)."""
    if setting is None:
        return None
    return props.origin.get(setting, setting if setting in props.origin.values() else None)


def _built(worker: WorkerConfig, connector_config: Mapping[str, str], role: str
           ) -> dict[str, str]:
    """The ``role`` client config a task of this connector gets."""
    if role == "producer":
        return kafka_clients.producer_config(worker, connector_config, "config-check")
    if role == "consumer":
        return kafka_clients.consumer_config(worker, connector_config,
                                             connector_config.get("name", "check"),
                                             "config-check")
    return dict(kafka_clients.admin_config(worker, connector_config))


def connector_client_errors(worker: WorkerConfig, connector_config: Mapping[str, str],
                            connector_type: str) -> dict[str, str]:
    """Errors of a connector's ``*.override.*`` client keys, on those keys: what cannot be
    translated (``worker.clients.properties``) or what librdkafka refuses, for the roles
    the connector's tasks use (a source: producer and admin; a sink: consumer and admin,
    and the producer of its dead letter queue)."""
    roles = ["producer", "admin"] if connector_type == "source" else ["consumer", "admin"]
    if connector_type == "sink" and connector_config.get("errors.deadletterqueue.topic.name"):
        roles.append("producer")
    errors: dict[str, str] = {}
    for role in roles:
        overrides = strip_prefix(connector_config, f"{role}.override.")
        if not overrides:
            continue  # the worker's own keys were checked when it started
        first = f"{role}.override.{next(iter(overrides))}"
        try:
            props = kafka_clients.task_client_props(worker, connector_config, role)
        except ClientPropertyError as exc:
            key = f"{role}.override.{exc.key}" if exc.key in overrides else first
            errors.setdefault(key, str(exc))
            continue
        refusal = librdkafka_refusal(role, _built(worker, connector_config, role))
        if refusal is not None:
            java = refusal_key(props, refusal[0])
            key = f"{role}.override.{java}" if java in overrides else first
            errors.setdefault(key, f"the Kafka client refuses it: {refusal[1]}")
    return errors


def check_worker_clients(worker: WorkerConfig) -> None:
    """At start: the task clients' configs from the worker's ``producer.``/``consumer.``/
    ``admin.`` keys, built once by librdkafka; a refusal is a ConfigError naming the key."""
    for role in ROLES:
        refusal = librdkafka_refusal(role, _built(worker, {}, role))
        if refusal is None:
            continue
        props = kafka_clients.task_client_props(worker, {}, role)
        java = refusal_key(props, refusal[0])
        raise ConfigError(f"{role}.{java}" if java else f"{role}.*",
                          f"the Kafka client refuses it: {refusal[1]}")
