"""Records flowing through the runtime.

``SourceRecord`` is what a SourceTask returns from ``poll()``; ``SinkRecord`` is what a
SinkTask receives in ``put()``. Both are plain ``__slots__`` classes (not dataclasses) because
they are created once per record on the hot path.

``record.headers`` is a :class:`~worker.api.headers.ConnectHeaders`. Records accept headers
as ConnectHeaders, Header objects or ``(key, value)`` pairs. A record created without
headers holds none until ``headers`` is first read: most records have no headers, and they
cost nothing extra.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from operator import attrgetter
from typing import Any, NamedTuple

from worker.api.data import Schema
from worker.api.headers import ConnectHeaders, Header

__all__ = ["ConnectRecord", "Header", "HeadersLike", "SinkRecord", "SourceRecord"]

HeadersLike = ConnectHeaders | Iterable[Header | tuple[str, Any]]
"""What records accept as headers: ConnectHeaders (kept as is), or Header objects and
``(key, value)`` pairs (schema None), in order."""


class TopicPartition(NamedTuple):
    """A topic's partition (Kafka's ``org.apache.kafka.common.TopicPartition``)."""

    topic: str
    partition: int


def _own_headers(headers: HeadersLike | None) -> ConnectHeaders | None:
    """The record's headers slot: the given ConnectHeaders itself, other input copied into
    a new one, None for no headers (materialized on first read)."""
    if headers is None or isinstance(headers, ConnectHeaders):
        return headers
    if not headers:  # (), [] -- the old default
        return None
    return ConnectHeaders(headers)


_FIELD_ACCESS: dict[type, tuple[tuple[str, ...], Callable[[Any], tuple[Any, ...]]]] = {}


def _field_access(cls: type) -> tuple[tuple[str, ...], Callable[[Any], tuple[Any, ...]]]:
    """The slot names of a record class (in MRO order) and one getter returning them all."""
    access = _FIELD_ACCESS.get(cls)
    if access is None:
        slots = tuple(name for klass in cls.__mro__
                      for name in getattr(klass, "__slots__", ()))
        # Every record class has ConnectRecord's eight slots, so attrgetter returns a tuple.
        # The headers slot is read raw (no ConnectHeaders made for a record without any)
        # and named as the constructor's argument.
        names = tuple("headers" if name == "_headers" else name for name in slots)
        access = _FIELD_ACCESS[cls] = (names, attrgetter(*slots))
    return access


class ConnectRecord:
    __slots__ = ("topic", "kafka_partition", "key_schema", "key", "value_schema", "value",
                 "timestamp", "_headers")

    def __init__(self, topic: str, kafka_partition: int | None, key_schema: Schema | None,
                 key: Any, value_schema: Schema | None, value: Any,
                 timestamp: int | None = None, headers: HeadersLike | None = None) -> None:
        self.topic = topic
        self.kafka_partition = kafka_partition
        self.key_schema = key_schema
        self.key = key
        self.value_schema = value_schema
        self.value = value
        self.timestamp = timestamp
        self._headers = None if headers is None else _own_headers(headers)

    @property
    def headers(self) -> ConnectHeaders:
        """The record's headers (mutable, as Kafka's: ``record.headers.add_string(...)``)."""
        headers = self._headers
        if headers is None:
            headers = self._headers = ConnectHeaders()
        return headers

    @headers.setter
    def headers(self, headers: HeadersLike | None) -> None:
        self._headers = None if headers is None else _own_headers(headers)

    def has_headers(self) -> bool:
        """Whether the record has at least one header (without materializing any)."""
        return bool(self._headers)

    def _fields(self) -> dict[str, Any]:
        # Transformations copy a record per record: the slot names and a C-level getter
        # are computed once per class, not walked through the MRO every time.
        names, getter = _field_access(type(self))
        return dict(zip(names, getter(self), strict=True))

    def new_record(self, **changes: Any) -> ConnectRecord:
        """A copy with ``changes`` applied (what transformations return). Unless
        ``headers`` is among the changes, the copy gets a copy of this record's headers
        (as in Kafka: changing one record's headers never changes another's)."""
        fields = self._fields()
        if "headers" not in changes and fields["headers"] is not None:
            fields["headers"] = fields["headers"].duplicate()
        fields.update(changes)
        return type(self)(**fields)

    def _compared(self) -> dict[str, Any]:
        fields = self._fields()
        fields["headers"] = fields["headers"] or None  # no headers == empty headers
        return fields

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ConnectRecord) and type(self) is type(other) \
            and self._compared() == other._compared()

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={v!r}" for k, v in self._fields().items())
        return f"{type(self).__name__}({shown})"


class SourceRecord(ConnectRecord):
    """A record produced by a source task.

    ``source_partition`` (e.g. ``{"filename": "a.txt"}``) and ``source_offset``
    (e.g. ``{"position": 42}``) are JSON-compatible dicts; the runtime commits the offset
    once Kafka acknowledged the record.
    """

    __slots__ = ("source_partition", "source_offset")

    def __init__(self, source_partition: Mapping[str, Any] | None,
                 source_offset: Mapping[str, Any] | None, topic: str,
                 kafka_partition: int | None = None, key_schema: Schema | None = None,
                 key: Any = None, value_schema: Schema | None = None, value: Any = None,
                 timestamp: int | None = None, headers: HeadersLike | None = None) -> None:
        # Assigned inline rather than via ConnectRecord.__init__: tasks create one of these
        # per record, so the extra call is measurable.
        self.topic = topic
        self.kafka_partition = kafka_partition
        self.key_schema = key_schema
        self.key = key
        self.value_schema = value_schema
        self.value = value
        self.timestamp = timestamp
        self._headers = None if headers is None else _own_headers(headers)
        self.source_partition = source_partition
        self.source_offset = source_offset


class SinkRecord(ConnectRecord):
    """A record consumed from Kafka, with its Kafka coordinates."""

    __slots__ = ("kafka_offset", "timestamp_type", "original_topic", "original_kafka_partition",
                 "original_kafka_offset")

    def __init__(self, topic: str, kafka_partition: int | None, key_schema: Schema | None,
                 key: Any, value_schema: Schema | None, value: Any, kafka_offset: int,
                 timestamp: int | None = None, timestamp_type: str = "CreateTime",
                 headers: HeadersLike | None = None, original_topic: str | None = None,
                 original_kafka_partition: int | None = None,
                 original_kafka_offset: int | None = None) -> None:
        self.topic = topic  # inline, not ConnectRecord.__init__: one per consumed record
        self.kafka_partition = kafka_partition
        self.key_schema = key_schema
        self.key = key
        self.value_schema = value_schema
        self.value = value
        self.timestamp = timestamp
        self._headers = None if headers is None else _own_headers(headers)
        self.kafka_offset = kafka_offset
        self.timestamp_type = timestamp_type
        # Transformations may rename the topic; offsets are committed for the original.
        self.original_topic = original_topic if original_topic is not None else topic
        self.original_kafka_partition = (original_kafka_partition
                                         if original_kafka_partition is not None
                                         else kafka_partition)
        self.original_kafka_offset = (original_kafka_offset if original_kafka_offset is not None
                                      else kafka_offset)


_new_object = object.__new__


def consumed_record(topic: str, kafka_partition: int, key_schema: Schema | None, key: Any,
                    value_schema: Schema | None, value: Any, kafka_offset: int,
                    timestamp: int | None, timestamp_type: str,
                    headers: ConnectHeaders | None) -> SinkRecord:
    """``SinkRecord(...)`` of a record just consumed, for the sink runtime's hot path: the
    original coordinates are the record's own and ``headers`` is ConnectHeaders or None,
    so none of the constructor's checks run (a quarter of its cost, per record)."""
    record = _new_object(SinkRecord)
    record.topic = record.original_topic = topic
    record.kafka_partition = record.original_kafka_partition = kafka_partition
    record.key_schema = key_schema
    record.key = key
    record.value_schema = value_schema
    record.value = value
    record.timestamp = timestamp
    record._headers = headers
    record.kafka_offset = record.original_kafka_offset = kafka_offset
    record.timestamp_type = timestamp_type
    return record
