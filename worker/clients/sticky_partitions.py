"""Partitions for records without key and partition: one per ``poll()`` batch and topic.

Kafka's producers stick to one partition for a while for keyless records (KIP-480, KIP-794)
instead of spreading every record; the source task does the same per batch, round-robin over
the topic's partitions that have a leader. Knowing the partition up front lets the task pass
it to librdkafka (no partitioner call per record) and ask for one delivery report per batch
and partition instead of one per record (``worker.runtime.source_task``).

The partition count comes from the producer's metadata for the topic, refreshed every
``REFRESH_S``; while it is unknown (topic missing, broker unreachable), ``choose`` answers
``UNASSIGNED`` and librdkafka's partitioner decides per record as before.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

UNASSIGNED = -1
REFRESH_S = 300.0  # librdkafka's topic.metadata.refresh.interval.ms default
RETRY_S = 10.0  # after a failed lookup: per-record partitioning until then
LOOKUP_TIMEOUT_S = 5.0


class StickyPartitions:
    def __init__(self, producer: Any, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._producer = producer
        self._clock = clock
        # topic -> (partitions with a leader, next index, lookup again at)
        self._topics: dict[str, tuple[list[int], int, float]] = {}

    def choose(self, topic: str) -> int:
        """The partition for the next batch's keyless records of ``topic``, or
        ``UNASSIGNED`` when its partitions are not known."""
        now = self._clock()
        entry = self._topics.get(topic)
        if entry is None or now >= entry[2]:
            # A random first partition, so tasks sharing a topic do not all start at one.
            entry = self._lookup(topic, now, entry[1] if entry else random.randrange(1 << 16))
        partitions, index, refresh_at = entry
        if not partitions:
            return UNASSIGNED
        self._topics[topic] = (partitions, index + 1, refresh_at)
        return partitions[index % len(partitions)]

    def _lookup(self, topic: str, now: float, index: int) -> tuple[list[int], int, float]:
        try:
            metadata = self._producer.list_topics(topic, timeout=LOOKUP_TIMEOUT_S)
            described = metadata.topics.get(topic)
            if described is None or described.error is not None:
                raise LookupError(described.error if described is not None else "not listed")
            partitions = sorted(p.id for p in described.partitions.values() if p.leader >= 0)
        except Exception as exc:  # noqa: BLE001 - any failure: librdkafka partitions
            log.debug("Partitions of %s unknown (%s); librdkafka partitions its records",
                      topic, exc)
            entry: tuple[list[int], int, float] = ([], index, now + RETRY_S)
        else:
            entry = (partitions, index, now + (REFRESH_S if partitions else RETRY_S))
        self._topics[topic] = entry
        return entry
