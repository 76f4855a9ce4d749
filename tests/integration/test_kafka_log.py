"""KafkaBasedLog and the internal topics, against the session's Kafka.

Records written here by hand go one per produce request (``batch.num.messages=1``):
Tansu's high watermark counts batches (docs/architecture.md §6), and a Java worker writes
its internal records one at a time too. The raw-record helpers are shared with
``test_kafka_store_formats``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

from tests.support import create_topic, wait_until
from worker.config.worker_config import DistributedConfig
from worker.errors import ConfigError, StorageError
from worker.storage.base import TargetState
from worker.storage.kafka import (
    KafkaBasedLog,
    KafkaConfigBackingStore,
    KafkaOffsetBackingStore,
    KafkaStatusBackingStore,
    LogRecord,
    internal_client_config,
)

Raw = tuple[bytes | None, bytes | None]


# --------------------------------------------------------------------------- shared helpers


def distributed_config(bootstrap: str, name: str, **overrides: str) -> DistributedConfig:
    """A distributed worker config whose three internal topics are ``{name}-{kind}``."""
    return DistributedConfig({
        "bootstrap.servers": bootstrap, "group.id": name,
        "config.storage.topic": f"{name}-configs", "offset.storage.topic": f"{name}-offsets",
        "status.storage.topic": f"{name}-status", "config.storage.replication.factor": "-1",
        "offset.storage.replication.factor": "-1", "status.storage.replication.factor": "-1",
        **overrides})


def produce(bootstrap: str, topic: str, records: list[Raw], partition: int | None = None
            ) -> None:
    """Write raw records as a Java worker would: one per request, Java's partitioner."""
    producer = Producer({"bootstrap.servers": bootstrap, "batch.num.messages": 1,
                         "acks": "all", "partitioner": "murmur2_random"})
    errors: list[Any] = []
    for key, value in records:
        extra = {} if partition is None else {"partition": partition}
        producer.produce(topic, key=key, value=value,
                         on_delivery=lambda err, _msg: err and errors.append(err), **extra)
        producer.flush(30)  # one record per batch
    assert producer.flush(30) == 0 and errors == []


def read_raw(bootstrap: str, topic: str, count: int, timeout: float = 30.0
             ) -> list[LogRecord]:
    """The first ``count`` records of every partition of ``topic``, by (partition, offset)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{topic}-raw",
                         "enable.auto.commit": False})
    try:
        partitions = consumer.list_topics(topic, timeout=timeout).topics[topic].partitions
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
        records: list[LogRecord] = []

        def read_all() -> bool:
            for msg in consumer.consume(100, 0.2):
                if msg.error() is None:
                    records.append(LogRecord(msg.partition(), msg.offset(), msg.key(),
                                             msg.value()))
            return len(records) >= count

        wait_until(read_all, timeout=timeout, interval=0,
                   message=lambda: f"{count} records in {topic} (got {len(records)})")
        return sorted(records, key=lambda r: (r.partition, r.offset))
    finally:
        consumer.close()


class Startable(Protocol):
    def start(self) -> None: ...

    def stop(self) -> None: ...


S = TypeVar("S", bound=Startable)


def started(request: pytest.FixtureRequest, thing: S) -> S:
    """Start a store or log; it is stopped when the test ends."""
    thing.start()
    request.addfinalizer(thing.stop)
    return thing


# --------------------------------------------------------------------------- client configs


def test_internal_client_config_uses_security_and_role_keys() -> None:
    config = DistributedConfig({
        "bootstrap.servers": "k1:9092,k2:9092", "group.id": "g", "config.storage.topic": "c",
        "offset.storage.topic": "o", "status.storage.topic": "s", "client.id": "w1",
        "security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN", "ssl.ca.location": "/ca",
        "sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule "
                            'required username="connect" password="pw";',
        "producer.linger.ms": "7", "producer.key.serializer": "org.example.Serializer",
        "consumer.fetch.min.bytes": "2", "admin.request.timeout.ms": "99"})
    producer = internal_client_config(config, "producer", "offsets")
    # Kafka's Java names translated (worker/clients/properties.py), Java-only keys dropped.
    assert producer == {"bootstrap.servers": "k1:9092,k2:9092", "security.protocol": "SASL_SSL",
                        "sasl.mechanism": "PLAIN", "ssl.ca.location": "/ca",
                        "sasl.username": "connect", "sasl.password": "pw",
                        "linger.ms": "7", "client.id": "w1-offsets-producer"}
    assert internal_client_config(config, "consumer", "configs")["fetch.min.bytes"] == "2"
    admin = internal_client_config(config, "admin", "statuses")
    assert admin["request.timeout.ms"] == "99" and "linger.ms" not in admin
    with pytest.raises(ValueError):
        internal_client_config(config, "streams", "x")


def test_internal_client_config_leaves_out_the_rest_servers_keys() -> None:
    """Unprefixed ssl.* are the REST listener's fallback TLS settings when the worker talks
    plaintext to Kafka, and admin.listeners* are REST listeners: librdkafka refuses both."""
    config = DistributedConfig({
        "bootstrap.servers": "k1:9092", "group.id": "g", "config.storage.topic": "c",
        "offset.storage.topic": "o", "status.storage.topic": "s",
        "ssl.keystore.location": "/rest.p12", "ssl.client.auth": "required",
        "admin.listeners": "https://:8444",
        "admin.listeners.https.ssl.keystore.location": "/admin.p12",
        "admin.request.timeout.ms": "99"})
    for role in ("producer", "consumer", "admin"):
        conf = internal_client_config(config, role, "configs")
        assert not [k for k in conf if k.startswith(("ssl.", "listeners"))], (role, conf)
    assert internal_client_config(config, "admin", "configs")["request.timeout.ms"] == "99"


# --------------------------------------------------------------------------- the log

def _log(bootstrap: str, topic: str, on_record: Callable[[LogRecord], None]) -> KafkaBasedLog:
    config = distributed_config(bootstrap, topic)
    return KafkaBasedLog(topic, on_record=on_record,
                         producer_config=internal_client_config(config, "producer", "test"),
                         consumer_config=internal_client_config(config, "consumer", "test"),
                         admin_config=internal_client_config(config, "admin", "test"))


@pytest.mark.integration
def test_read_to_end_sees_records_of_another_producer(
        kafka_bootstrap: str, kafka_admin: AdminClient, unique_topic: Callable[..., str],
        request: pytest.FixtureRequest) -> None:
    topic = create_topic(kafka_admin, unique_topic(), partitions=3)
    produce(kafka_bootstrap, topic, [(b"before", b"0")], partition=1)
    seen: list[LogRecord] = []
    log = started(request, _log(kafka_bootstrap, topic, seen.append))
    assert [(r.key, r.value) for r in seen] == [(b"before", b"0")]  # start() reads to end

    records = [(f"k{n}".encode(), str(n).encode()) for n in range(30)] + [(b"gone", None)]
    produce(kafka_bootstrap, topic, records)
    log.read_to_end(30)
    assert sorted((r.key, r.value) for r in seen[1:]) == sorted(records)
    for partition in range(3):  # log order within each partition
        offsets = [r.offset for r in seen if r.partition == partition]
        assert offsets == sorted(offsets) and len(offsets) == len(set(offsets))

    own = log.send_sync(b"own", b"x")
    log.read_to_end(30)
    assert seen[-1] == own


@pytest.mark.integration
def test_concurrent_read_to_end_calls(kafka_bootstrap: str, kafka_admin: AdminClient,
                                      unique_topic: Callable[..., str],
                                      request: pytest.FixtureRequest) -> None:
    topic = create_topic(kafka_admin, unique_topic(), partitions=2)
    seen: set[bytes | None] = set()
    lock = threading.Lock()

    def on_record(record: LogRecord) -> None:
        with lock:
            seen.add(record.key)

    log = started(request, _log(kafka_bootstrap, topic, on_record))
    barrier = threading.Barrier(8)
    errors: list[BaseException] = []

    def reader(n: int) -> None:
        try:
            barrier.wait(30)
            for i in range(5):
                key = f"r{n}-{i}".encode()
                log.send_sync(key, b"v")
                log.read_to_end(30)
                with lock:
                    assert key in seen  # its own write is read back when it returns
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=reader, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == [] and not any(t.is_alive() for t in threads)
    assert len(seen) == 40


@pytest.mark.integration
def test_a_failing_callback_skips_the_record_only(kafka_bootstrap: str, kafka_admin: AdminClient,
                                                   unique_topic: Callable[..., str],
                                                   request: pytest.FixtureRequest) -> None:
    topic = create_topic(kafka_admin, unique_topic())
    seen: list[bytes | None] = []

    def on_record(record: LogRecord) -> None:
        if record.key == b"boom":
            raise ValueError("bad record")
        seen.append(record.key)

    produce(kafka_bootstrap, topic, [(b"a", b"1"), (b"boom", b"2"), (b"b", b"3")])
    log = started(request, _log(kafka_bootstrap, topic, on_record))
    assert seen == [b"a", b"b"]
    log.stop()
    with pytest.raises(StorageError, match="not running"):
        log.send(b"late", b"x")


@pytest.mark.integration
def test_malformed_config_records_are_skipped(kafka_bootstrap: str,
                                              unique_topic: Callable[..., str],
                                              request: pytest.FixtureRequest,
                                              caplog: pytest.LogCaptureFixture) -> None:
    config = distributed_config(kafka_bootstrap, unique_topic())
    first = started(request, KafkaConfigBackingStore(config))  # creates the topic
    topic = config.get("config.storage.topic")
    produce(kafka_bootstrap, topic, [
        (b"connector-bad-json", b'{"properties": {"password": "hunter2-secret"'),
        (b"connector-wrong-shape", b'{"properties":"hunter2-secret"}'),
        (b"connector-not-strings", b'{"properties":{"a":1}}'),
        (b"target-state-good", b'{"state":"hunter2-secret"}'),
        (b"commit-good", b'{"tasks":"2"}'),
        (b"task-good-x", b'{"properties":{}}'),
        (b"\xff\xfe", b'{"properties":{}}'),
        (None, b'{"properties":{}}'),
        (b"mystery-key", b'{}'),
        (b"connector-good", b'{"properties":{"password":"hunter2-secret"}}'),
    ])
    with caplog.at_level(logging.WARNING, logger="worker.storage.kafka"):
        first.refresh()
        second = started(request, KafkaConfigBackingStore(config))
    for store in (first, second):
        snap = store.snapshot()
        assert snap.connector_configs == {"good": {"password": "hunter2-secret"}}
        assert snap.target_states == {} and snap.task_configs == {}
    warned = [r.getMessage() for r in caplog.records
              if r.name == "worker.storage.kafka.formats" and r.levelno == logging.WARNING]
    assert len(warned) == 2 * 9
    assert all("hunter2-secret" not in message for message in warned)
    assert any("connector-bad-json" in m and "not JSON" in m for m in warned)
    assert any("mystery-key" in m and "unknown key" in m for m in warned)


# --------------------------------------------------------------------------- topics


def _cleanup_policy(admin: AdminClient, topic: str) -> str | None:
    resource = ConfigResource(ResourceType.TOPIC, topic)
    entry = admin.describe_configs([resource])[resource].result(30).get("cleanup.policy")
    return None if entry is None else entry.value


def _partitions(admin: AdminClient, topic: str) -> int:
    return len(admin.list_topics(topic=topic, timeout=30).topics[topic].partitions)


@pytest.mark.integration
def test_topics_are_created_compacted_with_the_configured_partitions(
        kafka_bootstrap: str, kafka_admin: AdminClient, unique_topic: Callable[..., str],
        request: pytest.FixtureRequest) -> None:
    config = distributed_config(kafka_bootstrap, unique_topic(),
                                **{"offset.storage.partitions": "7",
                                   "status.storage.partitions": "3"})
    for store in (KafkaConfigBackingStore(config), KafkaOffsetBackingStore(config),
                  KafkaStatusBackingStore(config)):
        started(request, store)
    expected = {"config.storage.topic": 1, "offset.storage.topic": 7, "status.storage.topic": 3}
    for key, partitions in expected.items():
        topic = config.get(key)
        assert _partitions(kafka_admin, topic) == partitions
        # Created with the config, so even Tansu (which reports only the configs a topic
        # was created with) reports it.
        assert _cleanup_policy(kafka_admin, topic) == "compact"


def _refused(kafka_bootstrap: str, kafka_admin: AdminClient, config: DistributedConfig,
             key: str, store_class: type) -> str:
    """Start ``store_class`` on ``config`` expecting a ConfigError about ``key``; check that
    nothing was written to the topic."""
    with pytest.raises(ConfigError) as caught:
        store_class(config).start()
    assert caught.value.key == key
    topic = config.get(key)
    consumer = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": f"{topic}-check"})
    try:
        for partition in range(_partitions(kafka_admin, topic)):
            tp = TopicPartition(topic, partition)
            assert consumer.get_watermark_offsets(tp, timeout=30, cached=False) == (0, 0)
    finally:
        consumer.close()
    return str(caught.value)


@pytest.mark.integration
def test_a_config_topic_with_two_partitions_is_refused(
        kafka_bootstrap: str, kafka_admin: AdminClient, unique_topic: Callable[..., str]) -> None:
    config = distributed_config(kafka_bootstrap, unique_topic())
    topic = create_topic(kafka_admin, config.get("config.storage.topic"), partitions=2,
                         config={"cleanup.policy": "compact"})
    message = _refused(kafka_bootstrap, kafka_admin, config, "config.storage.topic",
                       KafkaConfigBackingStore)
    assert message.endswith(
        f"Topic '{topic}' supplied via the 'config.storage.topic' property is required to "
        "have a single partition in order to guarantee consistency of connector "
        "configurations, but found 2 partitions.")


@pytest.mark.integration
@pytest.mark.parametrize(("key", "store_class", "purpose"), [
    ("config.storage.topic", KafkaConfigBackingStore, "connector configurations"),
    ("offset.storage.topic", KafkaOffsetBackingStore, "source connector offsets"),
    ("status.storage.topic", KafkaStatusBackingStore, "connector and task statuses"),
])
def test_a_topic_with_cleanup_policy_delete_is_refused(
        kafka_bootstrap: str, kafka_admin: AdminClient, unique_topic: Callable[..., str],
        key: str, store_class: type, purpose: str) -> None:
    config = distributed_config(kafka_bootstrap, unique_topic())
    topic = create_topic(kafka_admin, config.get(key), config={"cleanup.policy": "delete"})
    assert _cleanup_policy(kafka_admin, topic) == "delete"  # every broker reports a set config
    message = _refused(kafka_bootstrap, kafka_admin, config, key, store_class)
    assert message.endswith(
        f"Topic '{topic}' supplied via the '{key}' property is required to have "
        f"'cleanup.policy=compact' to guarantee consistency and durability of {purpose}, but "
        f"found the topic currently has 'cleanup.policy=delete'. Continuing would likely "
        f"result in eventually losing {purpose} and problems restarting this Connect cluster "
        f"in the future. Change the '{key}' property in the Connect worker configurations to "
        f"use a topic with 'cleanup.policy=compact'.")


@pytest.mark.integration
def test_a_topic_with_the_default_cleanup_policy(
        kafka_bootstrap: str, kafka_admin: AdminClient, unique_topic: Callable[..., str],
        request: pytest.FixtureRequest, caplog: pytest.LogCaptureFixture) -> None:
    """Apache Kafka reports the default (delete): refused. Tansu reports no config it was
    not created with: nothing can be verified, which is logged, and the store starts."""
    config = distributed_config(kafka_bootstrap, unique_topic())
    topic = create_topic(kafka_admin, config.get("config.storage.topic"))
    policy = _cleanup_policy(kafka_admin, topic)
    if policy is not None:
        assert policy == "delete"
        _refused(kafka_bootstrap, kafka_admin, config, "config.storage.topic",
                 KafkaConfigBackingStore)
        return
    with caplog.at_level(logging.WARNING, logger="worker.storage.kafka.topics"):
        store = started(request, KafkaConfigBackingStore(config))
    assert any("Unable to verify that the cleanup policy" in r.getMessage()
               for r in caplog.records)
    store.put_connector_config("c", {"a": "1"}, TargetState.PAUSED)
    assert store.snapshot().target_state("c") is TargetState.PAUSED
