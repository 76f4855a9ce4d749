"""Consumed messages for unit tests: real ``confluent_kafka.Message`` objects.

confluent-kafka (2.x) lets tests construct a ``Message`` with keyword arguments, so tests
build the real object with :func:`consumed` instead of each file keeping its own
hand-written stand-in that may drift from what the library returns (``headers()`` and
``error()`` are ``None`` when not given, ``len()`` is the value's size).
"""

from __future__ import annotations

from collections.abc import Sequence

from confluent_kafka import KafkaError, Message

__all__ = ["consumed"]


def consumed(
    value: bytes | None,
    key: bytes | None = None,
    *,
    topic: str = "t",
    partition: int = 0,
    offset: int = 0,
    headers: Sequence[tuple[str, bytes | None]] | None = None,
    timestamp: tuple[int, int] = (1, 1_700_000_000_000),
    error: KafkaError | None = None,
) -> Message:
    """A message as ``Consumer.poll()``/``consume()`` returns it.

    A record by default (``timestamp`` is ``(type, ms)``, 1 being CreateTime); with
    ``error``, an event such as partition EOF.
    """
    return Message(
        topic=topic,
        partition=partition,
        offset=offset,
        key=key,
        value=value,
        headers=None if headers is None else [(k, v) for k, v in headers],
        error=error,
        timestamp=timestamp,
    )
