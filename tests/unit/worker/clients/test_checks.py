"""``worker.clients.checks``: librdkafka builds each client config once (no broker,
no connection) and its refusal lands on the Java key behind it."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from worker.clients import factories as kafka_clients
from worker.clients.checks import (
    check_worker_clients,
    connector_client_errors,
    librdkafka_refusal,
)
from worker.config.worker_config import WorkerConfig
from worker.errors import ConfigError

SECRET = "pa55-Word"


def worker(**props: str) -> WorkerConfig:
    return WorkerConfig({"bootstrap.servers": "127.0.0.1:1", **props})


def test_librdkafka_names_the_setting_it_refuses() -> None:
    assert librdkafka_refusal("producer", {"acks": "all", "linger.ms": "5"}) is None
    assert librdkafka_refusal("consumer", {"group.id": "g"}) is None
    assert librdkafka_refusal("admin", {}) is None
    setting, message = librdkafka_refusal("producer", {"compression.type": "brotli"}) or ("", "")
    assert setting == "compression.type" and "brotli" in message
    setting, message = librdkafka_refusal("consumer", {"no.such.key": "1"}) or ("", "")
    assert setting == "no.such.key" and "No such configuration property" in message


def test_connector_overrides_are_checked_on_their_keys(tmp_path: Path) -> None:
    config = {"name": "c", "producer.override.compression.type": "brotli",
              "producer.override.max.request.size": "10",
              "admin.override.no.such.key": "1",
              "consumer.override.fetch.max.wait.ms": "x"}  # a source: no consumer
    errors = connector_client_errors(worker(), config, "source")
    # An unknown key is no error (dropped with a warning, as a Java client ignores it).
    assert set(errors) == {"producer.override.compression.type"}
    assert "brotli" in errors["producer.override.compression.type"]
    sink = {"name": "c", "consumer.override.max.poll.records": "-1",
            "producer.override.partitioner.class": "com.acme.P"}
    assert set(connector_client_errors(worker(), sink, "sink")) == {
        "consumer.override.max.poll.records"}  # no dead letter queue: no producer
    dlq = {**sink, "errors.deadletterqueue.topic.name": "dlq"}
    assert set(connector_client_errors(worker(), dlq, "sink")) == {
        "consumer.override.max.poll.records", "producer.override.partitioner.class"}


def test_good_overrides_and_java_names_pass() -> None:
    config = {"name": "c", "producer.override.max.request.size": "2097152",
              "producer.override.key.serializer": "org.apache.kafka.Serializer",
              "producer.override.sasl.jaas.config":
                  "org.apache.kafka.common.security.plain.PlainLoginModule required "
                  f'username="u" password="{SECRET}";',
              "producer.override.sasl.mechanism": "PLAIN",
              "producer.override.security.protocol": "SASL_PLAINTEXT"}
    assert connector_client_errors(worker(), config, "source") == {}
    built = kafka_clients.producer_config(worker(), config, "id")
    assert built["message.max.bytes"] == "2097152" and built["sasl.password"] == SECRET
    assert "key.serializer" not in built and built["partitioner"] == "murmur2_random"


def test_dropped_keys_are_named_in_one_warning(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="worker.clients.properties")
    config = worker(**{"consumer.exclude.internal.topics": "true",
                       "consumer.interceptor.classes": "x.Y"})
    for _ in range(3):
        kafka_clients.consumer_config(config, {}, "c", "id")
    warnings = [r.getMessage() for r in caplog.records if "Ignoring" in r.getMessage()]
    assert warnings == ["Ignoring exclude.internal.topics, interceptor.classes for connector "
                        "consumer clients: Kafka Java client settings with no meaning for "
                        "this worker's Kafka client"]


def test_keys_librdkafka_does_not_know_are_dropped_with_one_warning(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="worker.clients.properties")
    config = worker(**{"producer.client.dns.lookup": "use_all_dns_ips",
                       "producer.no.such.setting": "1"})
    connector = {"producer.override.com.acme.audit.enabled": "true",
                 "producer.override.linger.ms": "20"}
    for _ in range(3):
        built = kafka_clients.producer_config(config, connector, "id")
    assert built["linger.ms"] == "20" and built["client.dns.lookup"] == "use_all_dns_ips"
    assert "no.such.setting" not in built and "com.acme.audit.enabled" not in built
    assert librdkafka_refusal("producer", built) is None  # librdkafka builds it
    check_worker_clients(config)  # the worker starts with them
    assert connector_client_errors(config, {"name": "c", **connector}, "source") == {}
    warnings = [r.getMessage() for r in caplog.records if "not known" in r.getMessage()]
    # One warning per set of keys: the connector's clients, the worker's own.
    assert warnings == [
        f"Ignoring {keys} for connector producer clients: not known to this worker's Kafka "
        "client (librdkafka); a Java client would ignore an unknown setting too"
        for keys in ("com.acme.audit.enabled, no.such.setting", "no.such.setting")]


def test_max_poll_records_reaches_the_runtime() -> None:
    config = worker(**{"consumer.max.poll.records": "300"})
    assert kafka_clients.max_poll_records(config, {}) == 300
    assert kafka_clients.max_poll_records(config, {"consumer.override.max.poll.records": "7"}) \
        == 7
    assert "max.poll.records" not in kafka_clients.consumer_config(config, {}, "c", "id")


def test_a_worker_key_librdkafka_refuses_fails_the_start() -> None:
    check_worker_clients(worker(**{"producer.linger.ms": "10"}))
    with pytest.raises(ConfigError) as info:
        check_worker_clients(worker(**{"producer.compression.type": "brotli"}))
    assert info.value.key == "producer.compression.type"
    with pytest.raises(ConfigError) as info:
        check_worker_clients(worker(**{"consumer.fetch.wait.max.ms": "-5"}))
    assert info.value.key == "consumer.fetch.wait.max.ms"
