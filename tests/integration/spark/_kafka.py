"""Producing test records for the Spark integration tests.

Each record is its own produce request (``flush()`` after each): the Tansu test broker's
high watermark counts batches, not records (docs/architecture.md §6), and ``latest`` offsets come
from the watermark — one record per batch keeps the two equal.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from confluent_kafka import Producer


@dataclass(frozen=True)
class Record:
    """A record as produced; ``offset`` is filled in from the delivery report."""

    topic: str
    partition: int
    key: bytes | None
    value: bytes
    timestamp_ms: int
    headers: tuple[tuple[str, bytes], ...] = ()
    offset: int = -1


def produce(bootstrap: str, records: Sequence[Record]) -> list[Record]:
    """Produce ``records`` one per request; return them with their offsets."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    delivered: list[Record] = []
    for record in records:
        offsets: list[int] = []

        def report(err: object, msg: object, sink: list[int] = offsets) -> None:
            assert err is None, err
            sink.append(msg.offset())  # type: ignore[attr-defined]

        producer.produce(record.topic, record.value, record.key, partition=record.partition,
                         timestamp=record.timestamp_ms, headers=list(record.headers) or None,
                         on_delivery=report)
        assert producer.flush(30) == 0
        delivered.append(Record(record.topic, record.partition, record.key, record.value,
                                record.timestamp_ms, record.headers, offsets[0]))
    return delivered
