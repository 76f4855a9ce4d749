"""Fakes for the Kafka data source's unit tests: cluster look-ups, and consumed messages
(real ``confluent_kafka.Message`` objects)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import KafkaError, Message

from spark_kafka_source.offsets import TopicPartitionKey
from tests.support.messages import consumed


@dataclass
class FakeLookups:
    """A cluster in memory: topics with partition counts, earliest/latest offsets per
    partition (0 / 0 unless given) and connectors' active topics. Records every call."""

    topic_partitions: dict[str, int] = field(default_factory=dict)
    earliest: dict[TopicPartitionKey, int] = field(default_factory=dict)
    latest: dict[TopicPartitionKey, int] = field(default_factory=dict)
    connectors: dict[str, list[str]] = field(default_factory=dict)
    calls: list[tuple[Any, ...]] = field(default_factory=list)
    closed: int = 0

    def topics(self) -> Mapping[str, int]:
        self.calls.append(("topics",))
        return dict(self.topic_partitions)

    def offsets(self, partitions: Sequence[TopicPartitionKey],
                which: str) -> Mapping[TopicPartitionKey, int]:
        self.calls.append(("offsets", which, tuple(partitions)))
        source = self.earliest if which == "earliest" else self.latest
        return {tp: source.get(tp, 0) for tp in partitions}

    def connector_topics(self, connect_url: str, connector: str) -> Sequence[str]:
        self.calls.append(("connector_topics", connect_url, connector))
        if connector not in self.connectors:
            raise ValueError(f"option connector: no connector {connector!r}")
        return list(self.connectors[connector])

    def close(self) -> None:
        self.closed += 1


def message(offset: int = -1, *, key: bytes | None = None, value: bytes | None = None,
            timestamp: tuple[int, int] = (1, 1_700_000_000_123),
            headers: list[tuple[str, bytes | None]] | None = None,
            error: KafkaError | None = None) -> Message:
    """A record of t-3 at ``offset`` as the consumer returns it (an event when ``error``)."""
    return consumed(value, key, topic="t", partition=3, offset=offset, headers=headers,
                    timestamp=timestamp, error=error)
