"""The session Kafka fixture and the embedded broker work end to end.

These run against whatever ``kafka_bootstrap`` resolves to (env, testcontainers or
Tansu); the pause/resume test always uses its own :class:`EmbeddedBroker`.
"""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from tests.support import create_topic, unique_name, wait_until
from worker.testing import EmbeddedBroker

pytestmark = pytest.mark.integration

log = logging.getLogger(__name__)

RECORDS = 1000
PARTITIONS = 3


def _producer(bootstrap: str, **extra: object) -> Producer:
    return Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "logger": log, **extra})


def _consumer(bootstrap: str, group: str) -> Consumer:
    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "session.timeout.ms": 6000,
            "logger": log,
        }
    )


def _consume(consumer: Consumer, expected: int, timeout: float) -> list[Message]:
    """Poll until ``expected`` records arrived (bounded by ``timeout``), then 1 s more."""
    received: list[Message] = []
    deadline = time.monotonic() + timeout
    while len(received) < expected and time.monotonic() < deadline:
        for msg in consumer.consume(num_messages=500, timeout=0.5):
            if msg.error() is not None:
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    continue
                raise AssertionError(f"consumer error: {msg.error()}")
            received.append(msg)
    # Anything beyond the expected records (duplicates, strays) shows up here.
    extra_deadline = time.monotonic() + 1.0
    while time.monotonic() < extra_deadline:
        received.extend(m for m in consumer.consume(500, timeout=0.2) if m.error() is None)
    return received


def test_produce_and_consume_1000_records_with_a_group(
    kafka_bootstrap: str,
    kafka_admin: AdminClient,
    unique_topic: Callable[..., str],
) -> None:
    topic = create_topic(kafka_admin, unique_topic(), partitions=PARTITIONS)
    expected = {f"key-{i}".encode(): f"value-{i}".encode() for i in range(RECORDS)}

    delivered: list[tuple[int, int]] = []
    errors: list[KafkaError] = []

    def on_delivery(err: KafkaError | None, msg: Message) -> None:
        if err is not None:
            errors.append(err)
        else:
            delivered.append((msg.partition(), msg.offset()))

    producer = _producer(kafka_bootstrap)
    for key, value in expected.items():
        producer.produce(topic, key=key, value=value, on_delivery=on_delivery)
        producer.poll(0)
    assert producer.flush(30) == 0, "producer did not deliver everything within 30 s"
    assert errors == []
    assert len(delivered) == RECORDS

    group = unique_name("group")
    consumer = _consumer(kafka_bootstrap, group)
    try:
        consumer.subscribe([topic])
        received = _consume(consumer, RECORDS, timeout=60)
        assert len(received) == RECORDS, f"got {len(received)} records, expected {RECORDS}"
        assert {m.key(): m.value() for m in received} == expected

        # Keyed records spread over all partitions, in produce order within each one.
        by_partition: dict[int, list[int]] = {}
        for msg in received:
            by_partition.setdefault(msg.partition(), []).append(msg.offset())
        assert sorted(by_partition) == list(range(PARTITIONS))
        for offsets in by_partition.values():
            assert offsets == sorted(offsets)
            assert len(set(offsets)) == len(offsets)
        assert sorted(delivered) == sorted((m.partition(), m.offset()) for m in received)

        # Group offsets are record positions (never use Tansu's high watermark as a count).
        consumer.commit(asynchronous=False)
        committed = consumer.committed(
            [TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=10
        )
        assert {tp.partition: tp.offset for tp in committed} == {
            p: max(offsets) + 1 for p, offsets in by_partition.items()
        }
    finally:
        consumer.close()


def _port_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def test_embedded_broker_pause_and_resume(tmp_path: Path) -> None:
    with EmbeddedBroker(log_dir=tmp_path) as broker:
        assert broker.is_running and not broker.is_paused
        bootstrap = broker.bootstrap_servers
        admin = AdminClient({"bootstrap.servers": bootstrap, "logger": log})
        topic = create_topic(admin, "outage", partitions=1)

        producer = _producer(bootstrap, **{"message.timeout.ms": 120_000})
        producer.produce(topic, value=b"before")
        assert producer.flush(10) == 0

        broker.pause()
        assert broker.is_paused and broker.is_running
        producer.produce(topic, value=b"during")
        # While frozen nothing is acknowledged (the request just waits).
        assert producer.flush(3) == 1
        with pytest.raises(Exception):  # noqa: B017 - KafkaException; any failure is fine
            admin.list_topics(timeout=1)

        broker.resume()
        assert not broker.is_paused
        assert producer.flush(60) == 0, "record produced during the pause was not delivered"

        consumer = _consumer(bootstrap, "outage-group")
        try:
            consumer.subscribe([topic])
            values = [m.value() for m in _consume(consumer, 2, timeout=60)]
        finally:
            consumer.close()
        assert values == [b"before", b"during"]
        port = broker.port

    assert not broker.is_running
    wait_until(lambda: not _port_open(port), timeout=10, message="broker port closed")
    assert "listening on" in (tmp_path / "tansu.log").read_text()


def test_embedded_broker_restart_keeps_the_port_and_memory_storage_keeps_nothing(
        tmp_path: Path) -> None:
    with EmbeddedBroker(log_dir=tmp_path) as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers, "logger": log})
        topic = create_topic(admin, "restarted", partitions=1)
        port, pid = broker.port, broker.pid

        broker.restart()

        assert broker.port == port and broker.is_running and broker.pid != pid
        # The same bootstrap answers again, and memory storage came back empty (the S3
        # storage that keeps data is tests/faults/test_broker_restart.py's case).
        topics = admin.list_topics(timeout=10).topics
        assert topic not in topics
    assert (tmp_path / "tansu.log").read_text().count("listening on") == 2
