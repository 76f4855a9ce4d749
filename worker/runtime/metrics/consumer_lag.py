"""A sink task's consumer lag (``records-lag`` and ``records-lag-max`` on /metrics), read
on the task's own thread from what librdkafka already holds: the consumer's position (the
offset after the last record handed to the task, as the Java consumer's ``records-lag``
counts) and each partition's high watermark as of its latest fetch response
(``get_watermark_offsets(..., cached=True)``: no request to the broker). Neither needs
librdkafka's statistics, which cost a producer about 110 kB and a consumer about 140 kB of
latency histograms, so the task consumers build none by default.

The consumer is only called from the thread that owns it (never from the scrape's: a call
racing ``close()`` could touch a destroyed handle); the result is one tuple assigned to
``TaskMetrics.consumer_lags``, which the scrape reads without a lock.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable

from confluent_kafka import Consumer, KafkaException
from confluent_kafka import TopicPartition as KafkaTopicPartition

from worker.api.connector import TopicPartition
from worker.runtime.metrics.tasks import Lags, TaskMetrics

log = logging.getLogger(__name__)

#: While full batches come (a backlog), the lag is read at most this often.
REFRESH_S = 1.0


def read_lags(consumer: Consumer, assignment: Iterable[TopicPartition]) -> Lags:
    """(topic, partition, lag) of each assigned partition whose lag is known: it has a
    position (a record of it was handed over, or it was sought) and librdkafka has had a
    fetch response for it (its high watermark). Sorted by topic and partition."""
    partitions = [KafkaTopicPartition(t, p) for t, p in sorted(assignment)]
    if not partitions:
        return ()
    lags = []
    for position in consumer.position(partitions):
        if position.offset < 0:  # no position yet: nothing handed over from it
            continue
        _, high = consumer.get_watermark_offsets(position, cached=True)
        if high >= 0:
            lags.append((position.topic, position.partition, max(high - position.offset, 0)))
    return tuple(lags)


class LagReader:
    """When a sink task reads its lag: after the first poll, after every batch smaller than
    a full one (the consumer has caught up, and the next batch may be a long way off, so
    the figure must not stay at the backlog's), at most once per ``REFRESH_S`` while full
    batches or empty polls come, and at once after the assignment changed (``expire``,
    called by the rebalance callbacks, on whichever thread serves them)."""

    __slots__ = ("_metrics", "_full", "_due", "_clock")

    def __init__(self, metrics: TaskMetrics, full_batch: int,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._metrics = metrics
        self._full = full_batch
        self._due = 0.0
        self._clock = clock

    def expire(self) -> None:
        self._due = 0.0

    def after_poll(self, consumer: Consumer, assignment: Iterable[TopicPartition],
                   count: int) -> None:
        """On the task's thread, after each poll that handed over ``count`` records."""
        now = self._clock()
        if now < self._due and not 0 < count < self._full:
            return
        self._due = now + REFRESH_S
        try:
            self._metrics.consumer_lags = read_lags(consumer, assignment)
        except (KafkaException, RuntimeError) as exc:  # keep the last figure
            log.debug("Task %s-%s: the consumer lag could not be read: %s",
                      self._metrics.connector, self._metrics.task, exc)
