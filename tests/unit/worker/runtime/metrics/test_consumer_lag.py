"""worker.runtime.metrics.consumer_lag: a sink task's lag, read from its consumer's position and
cached high watermarks, without librdkafka's statistics."""

from __future__ import annotations

from typing import Any, cast

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient

from tests.support import create_topic, unique_name, wait_until
from worker.api.connector import TopicPartition
from worker.runtime.metrics.consumer_lag import REFRESH_S, LagReader, read_lags
from worker.runtime.metrics.tasks import TaskMetrics


@pytest.mark.integration
def test_the_lag_counts_from_the_position_to_the_high_watermark(kafka_bootstrap: str) -> None:
    topic = unique_name("lag")
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    create_topic(admin, topic, partitions=2)
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    for n in range(100):
        producer.produce(topic, b"r%d" % n, partition=0)
    assert producer.flush(10) == 0
    consumer = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": topic,
                         "enable.auto.commit": "false", "fetch.queue.backoff.ms": "100"})
    assignment = {TopicPartition(topic, 0), TopicPartition(topic, 1)}
    try:
        consumer.assign([KafkaTopicPartition(topic, p, OFFSET_BEGINNING) for p in (0, 1)])
        assert read_lags(consumer, assignment) == ()  # nothing handed over yet
        handed: list[Any] = []

        def thirty_handed() -> bool:
            handed.extend(consumer.consume(30 - len(handed), 0.2))
            return len(handed) == 30

        wait_until(thirty_handed, timeout=15, message="30 records")
        # Partition 1 was never handed a record: no position, so no lag.
        assert read_lags(consumer, assignment) == ((topic, 0, 70),)
        for n in range(5):
            producer.produce(topic, b"more-%d" % n, partition=0)
        assert producer.flush(10) == 0
        # The consumer learns the new end from its next fetch response (no request here).
        wait_until(lambda: read_lags(consumer, assignment) == ((topic, 0, 75),), timeout=15,
                   message="the lag to take in the 5 new records")
        assert read_lags(consumer, set()) == ()
    finally:
        consumer.close()


class FakeConsumer:
    """position()/get_watermark_offsets() of one partition at offset ``position`` of
    ``high``; counts the reads."""

    def __init__(self, position: int, high: int) -> None:
        self.position_at, self.high, self.reads = position, high, 0
        self.error: Exception | None = None

    def position(self, partitions: list[KafkaTopicPartition]) -> list[KafkaTopicPartition]:
        self.reads += 1
        if self.error is not None:
            raise self.error
        return [KafkaTopicPartition(p.topic, p.partition, self.position_at) for p in partitions]

    def get_watermark_offsets(self, partition: KafkaTopicPartition, cached: bool = False
                              ) -> tuple[int, int]:
        assert cached  # never a request to the broker
        return 0, self.high


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


ASSIGNED = {TopicPartition("t", 0)}


def reader(consumer: FakeConsumer) -> tuple[LagReader, TaskMetrics, Clock]:
    metrics, clock = TaskMetrics("sink", 0, "sink"), Clock()
    return LagReader(metrics, full_batch=10, clock=clock), metrics, clock


def after_poll(lag: LagReader, consumer: FakeConsumer, count: int,
               assignment: set[TopicPartition] = ASSIGNED) -> None:
    lag.after_poll(cast(Consumer, consumer), assignment, count)


def test_full_batches_and_empty_polls_read_the_lag_once_a_second() -> None:
    consumer = FakeConsumer(10, 50)
    lag, metrics, clock = reader(consumer)
    after_poll(lag, consumer, 10)
    assert metrics.consumer_lags == (("t", 0, 40),) and consumer.reads == 1
    consumer.position_at = 20
    for count in (10, 0, 10):
        clock.now += REFRESH_S / 4
        after_poll(lag, consumer, count)
    assert consumer.reads == 1 and metrics.consumer_lags == (("t", 0, 40),)
    clock.now += REFRESH_S / 4
    after_poll(lag, consumer, 0)
    assert consumer.reads == 2 and metrics.consumer_lags == (("t", 0, 30),)


def test_a_batch_short_of_full_reads_the_lag_at_once() -> None:
    # Caught up: the next batch may be far off, so the backlog's figure must not stay.
    consumer = FakeConsumer(10, 50)
    lag, metrics, clock = reader(consumer)
    after_poll(lag, consumer, 10)
    consumer.position_at = 50
    after_poll(lag, consumer, 3)
    assert consumer.reads == 2 and metrics.consumer_lags == (("t", 0, 0),)


def test_a_changed_assignment_reads_the_lag_at_the_next_poll() -> None:
    consumer = FakeConsumer(10, 50)
    lag, metrics, _ = reader(consumer)
    after_poll(lag, consumer, 10)
    lag.expire()
    after_poll(lag, consumer, 0, set())
    assert consumer.reads == 1 and metrics.consumer_lags == ()  # nothing assigned: no call


@pytest.mark.parametrize("error", [KafkaException("broker down"),
                                   RuntimeError("Consumer closed")])
def test_a_failed_read_keeps_the_last_figure(error: Exception) -> None:
    consumer = FakeConsumer(10, 50)
    lag, metrics, clock = reader(consumer)
    after_poll(lag, consumer, 10)
    consumer.error = error
    clock.now += REFRESH_S
    after_poll(lag, consumer, 10)
    assert consumer.reads == 2 and metrics.consumer_lags == (("t", 0, 40),)
