"""StickyPartitions: round-robin over the partitions that have a leader, metadata looked up
once per refresh interval, and librdkafka's partitioner while the partitions are unknown."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from worker.clients.sticky_partitions import REFRESH_S, RETRY_S, UNASSIGNED, StickyPartitions


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class MetadataProducer:
    """Answers list_topics from ``leaders`` (partition id -> leader id; -1: none)."""

    def __init__(self, leaders: dict[int, int] | None, error: Any = None) -> None:
        self.leaders, self.error, self.lookups = leaders, error, 0

    def list_topics(self, topic: str, timeout: float) -> Any:
        self.lookups += 1
        if self.leaders is None:
            raise RuntimeError("broker unreachable")
        partitions = {p: SimpleNamespace(id=p, leader=leader)
                      for p, leader in self.leaders.items()}
        return SimpleNamespace(topics={topic: SimpleNamespace(partitions=partitions,
                                                              error=self.error)})


def test_batches_rotate_over_the_partitions_with_a_leader() -> None:
    producer = MetadataProducer({0: 1, 1: -1, 2: 1, 3: 2})
    sticky = StickyPartitions(producer, clock=Clock())
    chosen = [sticky.choose("t") for _ in range(6)]
    assert set(chosen) == {0, 2, 3}  # partition 1 has no leader
    assert chosen[:3] == chosen[3:]  # round-robin
    assert producer.lookups == 1


def test_metadata_is_looked_up_again_after_the_refresh_interval() -> None:
    producer = MetadataProducer({0: 1})
    clock = Clock()
    sticky = StickyPartitions(producer, clock=clock)
    assert sticky.choose("t") == 0
    producer.leaders = {0: 1, 1: 1}
    clock.now += REFRESH_S - 1
    assert sticky.choose("t") == 0
    clock.now += 2
    assert {sticky.choose("t") for _ in range(2)} == {0, 1}
    assert producer.lookups == 2


def test_unknown_partitions_leave_partitioning_to_librdkafka_until_the_retry() -> None:
    producer = MetadataProducer(None)
    clock = Clock()
    sticky = StickyPartitions(producer, clock=clock)
    assert sticky.choose("t") == UNASSIGNED
    assert sticky.choose("t") == UNASSIGNED
    assert producer.lookups == 1  # no lookup per batch while the broker is away
    producer.leaders = {0: 1}
    clock.now += RETRY_S
    assert sticky.choose("t") == 0


def test_a_topic_error_in_the_metadata_counts_as_unknown() -> None:
    sticky = StickyPartitions(MetadataProducer({0: 1}, error="UNKNOWN_TOPIC_OR_PART"),
                              clock=Clock())
    assert sticky.choose("t") == UNASSIGNED
