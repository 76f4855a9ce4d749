"""Types for confluent-kafka values whose library annotations are narrower or looser than
what the library does.

``ClientConfig``: librdkafka settings as confluent-kafka takes them — strings, numbers,
booleans, and Python objects for a few keys (``logger``, callbacks) that its annotations
(``dict[str, str | int | float | bool]``) leave out.

``ConsumedMessage``: the message a consumer returned, for code that reads its coordinates.

confluent-kafka types ``Message.topic()``, ``partition()`` and ``offset()`` as optional,
because a ``Message`` object is also what a producer's delivery report carries before the
broker answered. A message returned by ``poll()``/``consume()`` always has all three (an
error event such as partition EOF included), so hot loops cast a whole batch to
``list[ConsumedMessage]`` once instead of checking every record.
"""

from __future__ import annotations

from typing import Any, Protocol

from confluent_kafka import KafkaError

ClientConfig = dict[str, Any]


class ConsumedMessage(Protocol):
    """What a consumed ``confluent_kafka.Message`` answers."""

    def error(self) -> KafkaError | None: ...
    def topic(self) -> str: ...
    def partition(self) -> int: ...
    def offset(self) -> int: ...
    def key(self) -> bytes | None: ...
    def value(self) -> bytes | None: ...
    def timestamp(self) -> tuple[int, int]: ...
    def headers(self) -> list[tuple[str, Any]] | None: ...
