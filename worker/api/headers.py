"""Typed record headers, as Kafka Connect has them (``org.apache.kafka.connect.header``).

A :class:`Header` is an immutable ``(key, schema, value)``; :class:`ConnectHeaders` is the
ordered multi-map a record carries: a key may occur several times, in the order the headers
were added, and the last one is the current value (``last_with_name``). As in Kafka, the
container is mutable (a task may ``record.headers.add_string(...)``) and a transformation
that copies a record gets its own copy of the headers.

For the connectors written before headers were typed, a header may still be given as a
``(key, value)`` pair (its schema is then None), and a Header unpacks into ``key, value``::

    SourceRecord(..., headers=[("trace", "abc"), ("attempt", 3)])
    for key, value in record.headers: ...

The header converter (``header.converter``, by default Kafka's ``SimpleHeaderConverter``)
turns each header into the bytes Kafka stores, and back on the sink side.
"""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Protocol

from worker.api.data import (
    BOOLEAN_SCHEMA,
    BYTES_SCHEMA,
    FLOAT32_SCHEMA,
    FLOAT64_SCHEMA,
    INT8_SCHEMA,
    INT16_SCHEMA,
    INT32_SCHEMA,
    INT64_SCHEMA,
    OPTIONAL_BYTES_SCHEMA,
    OPTIONAL_STRING_SCHEMA,
    STRING_SCHEMA,
    Schema,
    SchemaAndValue,
    SchemaType,
    Struct,
)
from worker.api.exceptions import DataException
from worker.api.logical import (
    DATE_NAME,
    DATE_SCHEMA,
    DECIMAL_NAME,
    TIME_NAME,
    TIME_SCHEMA,
    TIMESTAMP_NAME,
    TIMESTAMP_SCHEMA,
)

__all__ = ["ConnectHeaders", "Header", "HeaderConverter", "HeaderTransform"]


_INT_RANGES = {SchemaType.INT8: 1 << 7, SchemaType.INT16: 1 << 15, SchemaType.INT32: 1 << 31,
               SchemaType.INT64: 1 << 63}


class Header:
    """One header: its ``key``, ``schema`` (None when unknown) and ``value``. Immutable."""

    __slots__ = ("key", "schema", "value")

    key: str
    schema: Schema | None
    value: Any

    def __init__(self, key: str, schema: Schema | None, value: Any) -> None:
        if key is None:
            raise TypeError("Header key cannot be null")
        object.__setattr__(self, "key", key)
        object.__setattr__(self, "schema", schema)
        object.__setattr__(self, "value", value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"Header is immutable; cannot set {name}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"Header is immutable; cannot delete {name}")

    def with_value(self, schema: Schema | None, value: Any) -> Header:
        """A header with this key and the given schema and value (Kafka's ``with``)."""
        return Header(self.key, schema, value)

    def rename(self, key: str) -> Header:
        """A header with this schema and value under another key."""
        return Header(key, self.schema, self.value)

    def __iter__(self) -> Iterator[Any]:
        # ``key, value = header``: headers used to be (key, value) tuples.
        yield self.key
        yield self.value

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Header):
            return NotImplemented
        return (self.key == other.key and self.schema == other.schema
                and self.value == other.value)

    def __hash__(self) -> int:
        return hash(self.key)  # values may be unhashable (maps, lists)

    def __repr__(self) -> str:
        return f"ConnectHeader(key={self.key!r}, value={self.value!r}, schema={self.schema!r})"


HeaderTransform = Callable[[Header], "Header | None"]
"""What :meth:`ConnectHeaders.apply` calls per header: its replacement, or None to drop it."""


class HeaderConverter(Protocol):
    """What a header converter provides (a duck type: the plugin SPI has no base class)."""

    def configure(self, configs: Mapping[str, Any], is_key: bool) -> None: ...

    def from_connect_header(self, topic: str, header_key: str, schema: Schema | None,
                            value: Any) -> bytes | None: ...

    def to_connect_header(self, topic: str, header_key: str, value: bytes | None
                          ) -> SchemaAndValue: ...

    def close(self) -> None: ...


def _as_header(item: Header | tuple[str, Any]) -> Header:
    """A Header as is; a ``(key, value)`` pair as a header without schema."""
    if isinstance(item, Header):
        return item
    if item is None:
        raise TypeError("Unable to add a null header.")
    try:
        key, value = item
    except (TypeError, ValueError):
        raise TypeError(f"A header is a Header or a (key, value) pair, not {item!r}") from None
    return Header(key, None, value)


class ConnectHeaders:
    """The ordered headers of one record: a multi-map from key to :class:`Header`.

    Mutating methods return ``self``, so calls chain (``headers.add_int("a", 1).remove("b")``).
    Equality compares the headers in order; an empty ConnectHeaders is falsy. Iterating
    gives the Header objects (``dict(headers)``: key to last value, as with the old pairs).
    """

    __slots__ = ("_headers",)

    def __init__(self, headers: Iterable[Header | tuple[str, Any]] | None = None) -> None:
        if headers is None:
            self._headers: list[Header] = []
        elif type(headers) is ConnectHeaders:
            self._headers = list(headers._headers)
        else:
            self._headers = [_as_header(item) for item in headers]

    # --- adding ------------------------------------------------------------------------

    def add(self, header: Header | str, value: Any = None, schema: Schema | None = None
            ) -> ConnectHeaders:
        """Add a :class:`Header`, or the header ``key`` with ``value`` and ``schema``.

        With a schema, the value must fit it (a DataException says why not): None needs
        an optional schema, an INT8 an int in a byte's range, a Date a ``datetime.date``...
        """
        if isinstance(header, Header):
            self._headers.append(header)
            return self
        check_schema_matches(schema, value)
        self._headers.append(Header(header, schema, value))
        return self

    def add_schema_and_value(self, key: str, schema_and_value: SchemaAndValue | None
                             ) -> ConnectHeaders:
        """Add ``key`` with a converter's result (None: a null header)."""
        if schema_and_value is None:
            return self.add(key, None, None)
        return self.add(key, schema_and_value.value, schema_and_value.schema)

    def _add_unchecked(self, key: str, value: Any, schema: Schema | None) -> ConnectHeaders:
        self._headers.append(Header(key, schema, value))
        return self

    def add_string(self, key: str, value: str | None) -> ConnectHeaders:
        """A STRING header (None: with an optional STRING schema)."""
        return self.add(key, value, STRING_SCHEMA if value is not None else OPTIONAL_STRING_SCHEMA)

    def add_bytes(self, key: str, value: bytes | None) -> ConnectHeaders:
        """A BYTES header (None: with an optional BYTES schema)."""
        return self.add(key, value, BYTES_SCHEMA if value is not None else OPTIONAL_BYTES_SCHEMA)

    def add_boolean(self, key: str, value: bool) -> ConnectHeaders:
        """A BOOLEAN header."""
        return self.add(key, value, BOOLEAN_SCHEMA)

    def add_byte(self, key: str, value: int) -> ConnectHeaders:
        """An INT8 header (Java's ``byte``)."""
        return self.add(key, value, INT8_SCHEMA)

    def add_short(self, key: str, value: int) -> ConnectHeaders:
        """An INT16 header."""
        return self.add(key, value, INT16_SCHEMA)

    def add_int(self, key: str, value: int) -> ConnectHeaders:
        """An INT32 header."""
        return self.add(key, value, INT32_SCHEMA)

    def add_long(self, key: str, value: int) -> ConnectHeaders:
        """An INT64 header."""
        return self.add(key, value, INT64_SCHEMA)

    def add_float(self, key: str, value: float) -> ConnectHeaders:
        """A FLOAT32 header."""
        return self.add(key, value, FLOAT32_SCHEMA)

    def add_double(self, key: str, value: float) -> ConnectHeaders:
        """A FLOAT64 header."""
        return self.add(key, value, FLOAT64_SCHEMA)

    def add_list(self, key: str, value: list[Any] | None, schema: Schema) -> ConnectHeaders:
        """An ARRAY header (None: a null header without schema)."""
        if value is None:
            return self.add(key, None, None)
        _check_type(schema, SchemaType.ARRAY)
        return self._add_unchecked(key, value, schema)

    def add_map(self, key: str, value: Mapping[Any, Any] | None, schema: Schema
                ) -> ConnectHeaders:
        """A MAP header (None: a null header without schema)."""
        if value is None:
            return self.add(key, None, None)
        _check_type(schema, SchemaType.MAP)
        return self._add_unchecked(key, value, schema)

    def add_struct(self, key: str, value: Struct | None) -> ConnectHeaders:
        """A STRUCT header with the struct's schema (None: a null header without schema)."""
        if value is None:
            return self.add(key, None, None)
        _check_type(value.schema, SchemaType.STRUCT)
        return self._add_unchecked(key, value, value.schema)

    def add_decimal(self, key: str, value: decimal.Decimal | None) -> ConnectHeaders:
        """A Decimal header; its schema's scale is the value's."""
        if value is None:
            return self.add(key, None, None)
        if not isinstance(value, decimal.Decimal) or not value.is_finite():
            raise DataException(f"The value {value!r} is not a finite Decimal")
        exponent = value.as_tuple().exponent
        assert isinstance(exponent, int)  # finite
        schema = Schema(SchemaType.BYTES, name=DECIMAL_NAME, version=1,
                        parameters={"scale": str(-exponent)})
        return self._add_unchecked(key, value, schema)

    def add_date(self, key: str, value: dt.date | None) -> ConnectHeaders:
        """A Date header (a ``datetime.date``: days since the epoch)."""
        return self._add_logical(key, value, DATE_SCHEMA)

    def add_time(self, key: str, value: dt.time | None) -> ConnectHeaders:
        """A Time header (a ``datetime.time``: milliseconds of the day)."""
        return self._add_logical(key, value, TIME_SCHEMA)

    def add_timestamp(self, key: str, value: dt.datetime | None) -> ConnectHeaders:
        """A Timestamp header (a ``datetime.datetime``, naive ones taken as UTC)."""
        return self._add_logical(key, value, TIMESTAMP_SCHEMA)

    def _add_logical(self, key: str, value: Any, schema: Schema) -> ConnectHeaders:
        # As Kafka's addDate/addTime/addTimestamp: a null value keeps the logical schema.
        if value is not None:
            check_schema_matches(schema, value)
        return self._add_unchecked(key, value, schema)

    # --- reading -----------------------------------------------------------------------

    def last_with_name(self, key: str) -> Header | None:
        """The last header named ``key`` (the current one), or None."""
        for header in reversed(self._headers):
            if header.key == key:
                return header
        return None

    def all_with_name(self, key: str) -> list[Header]:
        """Every header named ``key``, in order."""
        return [header for header in self._headers if header.key == key]

    def __iter__(self) -> Iterator[Header]:
        return iter(self._headers)

    def __len__(self) -> int:
        return len(self._headers)

    def __getitem__(self, index: int) -> Header:
        return self._headers[index]

    # --- changing ----------------------------------------------------------------------

    def remove(self, key: str) -> ConnectHeaders:
        """Remove every header named ``key``."""
        self._headers = [header for header in self._headers if header.key != key]
        return self

    def retain_latest(self, key: str | None = None) -> ConnectHeaders:
        """Keep only the last header of each key (of ``key`` only, if given)."""
        seen: set[str] = set()
        kept: list[Header] = []
        for header in reversed(self._headers):
            if key is not None and header.key != key:
                kept.append(header)
            elif header.key not in seen:
                seen.add(header.key)
                kept.append(header)
        kept.reverse()
        self._headers = kept
        return self

    def apply(self, transform: HeaderTransform, key: str | None = None) -> ConnectHeaders:
        """Replace each header (each named ``key``, if given) by ``transform(header)``;
        a None result removes it."""
        updated: list[Header] = []
        for header in self._headers:
            if key is not None and header.key != key:
                updated.append(header)
                continue
            result = transform(header)
            if result is not None:
                updated.append(result)
        self._headers = updated
        return self

    def clear(self) -> ConnectHeaders:
        self._headers = []
        return self

    def duplicate(self) -> ConnectHeaders:
        """A copy that changes independently (the Header objects are immutable)."""
        copy = ConnectHeaders()
        copy._headers = list(self._headers)
        return copy

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ConnectHeaders):
            return NotImplemented
        return self._headers == other._headers

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        return f"ConnectHeaders(headers={self._headers!r})"


def _check_type(schema: Schema, expected: SchemaType) -> None:
    if schema.type is not expected:
        raise DataException(f"Expecting {expected.name} but instead found {schema.type.name}")


def check_schema_matches(schema: Schema | None, value: Any) -> None:
    """Raise DataException unless ``value`` fits ``schema`` (Kafka's check when a header is
    added with a schema; Python's types stand for Java's)."""
    if schema is None:
        return
    if value is None:
        if not schema.optional:
            raise DataException(f"A null value requires an optional schema but was {schema}")
        return
    if not _fits(schema, value):
        raise DataException(f"The value {value!r} is not compatible with the schema {schema}")


def _fits(schema: Schema, value: Any) -> bool:
    kind = schema.type
    name = schema.name
    if kind is SchemaType.BYTES:
        return isinstance(value, bytes | bytearray | memoryview) or (
            name == DECIMAL_NAME and isinstance(value, decimal.Decimal))
    if kind is SchemaType.STRING:
        return isinstance(value, str)
    if kind is SchemaType.BOOLEAN:
        return isinstance(value, bool)
    if kind in _INT_RANGES:
        if name == DATE_NAME and isinstance(value, dt.date) and not isinstance(value, dt.datetime):
            return True
        if name == TIME_NAME and isinstance(value, dt.time):
            return True
        if name == TIMESTAMP_NAME and isinstance(value, dt.datetime):
            return True
        if isinstance(value, bool) or not isinstance(value, int):
            return False
        bound = _INT_RANGES[kind]
        return -bound <= value < bound
    if kind is SchemaType.FLOAT32 or kind is SchemaType.FLOAT64:
        return isinstance(value, float)
    if kind is SchemaType.ARRAY:
        return isinstance(value, list | tuple)
    if kind is SchemaType.MAP:
        return isinstance(value, Mapping)
    return isinstance(value, Struct)  # STRUCT
