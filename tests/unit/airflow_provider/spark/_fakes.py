"""Fakes for the Kafka data source's unit tests: cluster look-ups and consumer messages."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from airflow_provider.spark.offsets import TopicPartitionKey


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


class FakeError:
    """A confluent-kafka ``KafkaError`` stand-in."""

    def __init__(self, code: int, fatal: bool = False) -> None:
        self._code, self._fatal = code, fatal

    def code(self) -> int:
        return self._code

    def fatal(self) -> bool:
        return self._fatal

    def str(self) -> str:
        return f"error {self._code}"


class FakeMessage:
    """A confluent-kafka ``Message`` stand-in (a record, or an event when ``err`` is set)."""

    def __init__(self, offset: int = -1, *, key: bytes | None = None,
                 value: bytes | None = None, timestamp: tuple[int, int] = (1, 1_700_000_000_123),
                 headers: list[tuple[str, bytes | None]] | None = None,
                 err: FakeError | None = None) -> None:
        self._offset, self._key, self._value = offset, key, value
        self._timestamp, self._headers, self._err = timestamp, headers, err

    def error(self) -> FakeError | None:
        return self._err

    def offset(self) -> int:
        return self._offset

    def key(self) -> bytes | None:
        return self._key

    def value(self) -> bytes | None:
        return self._value

    def timestamp(self) -> tuple[int, int]:
        return self._timestamp

    def headers(self) -> list[tuple[str, bytes | None]] | None:
        return self._headers
