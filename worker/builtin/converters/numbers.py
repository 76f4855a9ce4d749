"""Kafka's primitive converters: ``org.apache.kafka.connect.converters.LongConverter``,
``IntegerConverter``, ``ShortConverter``, ``FloatConverter``, ``DoubleConverter`` and
``BooleanConverter``.

The bytes are those of Kafka's own serializers (big-endian two's complement integers,
IEEE 754 floats, one byte 0x01/0x00 for booleans), so a Java consumer with
``LongDeserializer`` reads what these write and the other way round. ``null`` stays
``null`` both ways. Like Kafka's, they ignore the schema when writing (BooleanConverter
checks it), read with the optional schema of their type, and double as header
converters.
"""

from __future__ import annotations

import struct
from typing import Any

from worker.api import Converter, DataException, Schema, SchemaAndValue, SchemaType
from worker.api.data import primitive
from worker.builtin.converters.string_bytes import _HeaderConverterMixin

OPTIONAL_INT16_SCHEMA = primitive(SchemaType.INT16, optional=True)
OPTIONAL_INT32_SCHEMA = primitive(SchemaType.INT32, optional=True)
OPTIONAL_INT64_SCHEMA = primitive(SchemaType.INT64, optional=True)
OPTIONAL_FLOAT32_SCHEMA = primitive(SchemaType.FLOAT32, optional=True)
OPTIONAL_FLOAT64_SCHEMA = primitive(SchemaType.FLOAT64, optional=True)
OPTIONAL_BOOLEAN_SCHEMA = primitive(SchemaType.BOOLEAN, optional=True)

__all__ = ["BooleanConverter", "DoubleConverter", "FloatConverter", "IntegerConverter",
           "LongConverter", "ShortConverter"]


class _NumberConverter(_HeaderConverterMixin, Converter):
    """One fixed-size primitive: ``_FORMAT`` (``struct``), Kafka's ``_TYPE_NAME`` in
    messages and its ``_DESERIALIZER`` in size errors, the schema it reads with."""

    _FORMAT: struct.Struct
    _TYPE_NAME: str
    _DESERIALIZER: str
    _SCHEMA: Schema
    _INTEGER = True

    def _check(self, value: Any) -> Any:
        """The value to pack; raises TypeError as Java's cast would fail."""
        if isinstance(value, bool) or not isinstance(value, int if self._INTEGER
                                                     else int | float):
            raise TypeError(type(value).__name__)
        return value

    def from_connect_data(self, topic: str, schema: Schema | None, value: Any) -> bytes | None:
        if value is None:
            return None
        try:
            return self._FORMAT.pack(self._check(value))
        except TypeError as exc:
            raise DataException(f"Failed to serialize to {self._TYPE_NAME} (was "
                                f"{type(value).__name__}): ") from exc
        except (struct.error, OverflowError) as exc:
            raise DataException(f"Failed to serialize to {self._TYPE_NAME}: {value} is out "
                                f"of its range") from exc

    def to_connect_data(self, topic: str, data: bytes | None) -> SchemaAndValue:
        if data is None:
            return SchemaAndValue(self._SCHEMA, None)
        if len(data) != self._FORMAT.size:
            raise DataException(f"Failed to deserialize {self._TYPE_NAME}: Size of data "
                                f"received by {self._DESERIALIZER} is not "
                                f"{self._FORMAT.size}")
        return SchemaAndValue(self._SCHEMA, self._FORMAT.unpack(data)[0])


class LongConverter(_NumberConverter):
    _FORMAT, _TYPE_NAME, _DESERIALIZER = struct.Struct(">q"), "long", "LongDeserializer"
    _SCHEMA = OPTIONAL_INT64_SCHEMA


class IntegerConverter(_NumberConverter):
    _FORMAT, _TYPE_NAME, _DESERIALIZER = struct.Struct(">i"), "integer", "IntegerDeserializer"
    _SCHEMA = OPTIONAL_INT32_SCHEMA


class ShortConverter(_NumberConverter):
    _FORMAT, _TYPE_NAME, _DESERIALIZER = struct.Struct(">h"), "short", "ShortDeserializer"
    _SCHEMA = OPTIONAL_INT16_SCHEMA


class FloatConverter(_NumberConverter):
    _FORMAT, _TYPE_NAME, _DESERIALIZER = struct.Struct(">f"), "float", "FloatDeserializer"
    _SCHEMA = OPTIONAL_FLOAT32_SCHEMA
    _INTEGER = False


class DoubleConverter(_NumberConverter):
    _FORMAT, _TYPE_NAME, _DESERIALIZER = struct.Struct(">d"), "double", "DoubleDeserializer"
    _SCHEMA = OPTIONAL_FLOAT64_SCHEMA
    _INTEGER = False


class BooleanConverter(_HeaderConverterMixin, Converter):
    """One byte: 0x01 true, 0x00 false (Kafka's BooleanSerializer)."""

    def from_connect_data(self, topic: str, schema: Schema | None, value: Any) -> bytes | None:
        if schema is not None and schema.type is not SchemaType.BOOLEAN:
            raise DataException(f"Invalid schema type for BooleanConverter: "
                                f"{schema.type.name}")
        if value is None:
            return None
        if not isinstance(value, bool):
            raise DataException(f"BooleanConverter is not compatible with objects of type "
                                f"{type(value).__name__}")
        return b"\x01" if value else b"\x00"

    def to_connect_data(self, topic: str, data: bytes | None) -> SchemaAndValue:
        if data is None:
            return SchemaAndValue(OPTIONAL_BOOLEAN_SCHEMA, None)
        if len(data) != 1:
            raise DataException("Failed to deserialize boolean: Size of data received by "
                                "BooleanDeserializer is not 1")
        if data[0] not in (0, 1):
            raise DataException(f"Failed to deserialize boolean: Unexpected byte received "
                                f"by BooleanDeserializer: {data[0]}")
        return SchemaAndValue(OPTIONAL_BOOLEAN_SCHEMA, data[0] == 1)
