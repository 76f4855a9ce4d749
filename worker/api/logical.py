"""Kafka Connect's logical types (connect-api's ``org.apache.kafka.connect.data`` Decimal,
Date, Time and Timestamp): their schema names and their conversions.

Logical types are recognised by schema name, with these Python values:
``Decimal`` (BYTES, ``scale`` parameter) ↔ ``decimal.Decimal``; ``Date`` (INT32 days) ↔
``datetime.date``; ``Time`` (INT32 ms of the day) ↔ ``datetime.time``; ``Timestamp``
(INT64 ms since the epoch) ↔ ``datetime.datetime`` (UTC). Raw ints are accepted on write.
"""

from __future__ import annotations

import datetime as dt
import decimal
from typing import Any

from worker.api.data import Schema, SchemaType
from worker.api.exceptions import DataException

DECIMAL_NAME = "org.apache.kafka.connect.data.Decimal"
DATE_NAME = "org.apache.kafka.connect.data.Date"
TIME_NAME = "org.apache.kafka.connect.data.Time"
TIMESTAMP_NAME = "org.apache.kafka.connect.data.Timestamp"
SCALE_PARAMETER = "scale"

DATE_SCHEMA = Schema(SchemaType.INT32, name=DATE_NAME, version=1)
TIME_SCHEMA = Schema(SchemaType.INT32, name=TIME_NAME, version=1)
TIMESTAMP_SCHEMA = Schema(SchemaType.INT64, name=TIMESTAMP_NAME, version=1)
OPTIONAL_TIMESTAMP_SCHEMA = Schema(SchemaType.INT64, optional=True, name=TIMESTAMP_NAME,
                                   version=1)

_EPOCH_DATE = dt.date(1970, 1, 1)
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_MS_PER_DAY = 86_400_000
TIME_BASED = frozenset((DATE_NAME, TIME_NAME, TIMESTAMP_NAME))


def decimal_to_bytes(schema: Schema, value: Any) -> bytes:
    """Kafka's Decimal: the unscaled value as big-endian two's complement (minimal length)."""
    if not isinstance(value, decimal.Decimal):
        raise DataException(f"Invalid type for Decimal, expected Decimal but was "
                            f"{type(value).__name__}")
    scale = _scale(schema)
    unscaled = int(value.scaleb(scale))
    if decimal.Decimal(unscaled).scaleb(-scale) != value:
        raise DataException("Decimal value has mismatching scale for given Decimal schema")
    # Java's BigInteger.toByteArray: bitLength excludes the sign bit, plus one sign byte.
    length = (unscaled if unscaled >= 0 else ~unscaled).bit_length() // 8 + 1
    return unscaled.to_bytes(length, "big", signed=True)


def decimal_from_bytes(schema: Schema, data: bytes) -> decimal.Decimal:
    return decimal.Decimal(int.from_bytes(data, "big", signed=True)).scaleb(-_scale(schema))


def _scale(schema: Schema) -> int:
    try:
        return int((schema.parameters or {})[SCALE_PARAMETER])
    except (KeyError, ValueError):
        raise DataException("Invalid Decimal schema: scale parameter not found.") from None


def from_logical(schema: Schema, value: Any) -> Any:
    """A Date/Time/Timestamp value as its int form, as Kafka's ``fromLogical`` (ints pass
    through unchanged)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    name = schema.name
    if name == TIMESTAMP_NAME and isinstance(value, dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.UTC)
        delta = value - _EPOCH
        return delta.days * _MS_PER_DAY + delta.seconds * 1000 + delta.microseconds // 1000
    if name == DATE_NAME and isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        return (value - _EPOCH_DATE).days
    if name == TIME_NAME and isinstance(value, dt.time):
        return ((value.hour * 60 + value.minute) * 60 + value.second) * 1000 \
            + value.microsecond // 1000
    kind = name.rsplit(".", 1)[-1] if name else "logical type"
    raise DataException(f"Invalid type for {kind}: {type(value).__name__}")


def to_logical(schema: Schema, value: Any) -> Any:
    """A Date/Time/Timestamp's int form as its Python value, as Kafka's ``toLogical``."""
    if not isinstance(value, int) or isinstance(value, bool):
        kind = schema.name.rsplit(".", 1)[-1] if schema.name else "logical type"
        raise DataException(f"Invalid type for {kind}, underlying representation should be "
                            f"integral but was {type(value).__name__}")
    if schema.name == TIMESTAMP_NAME:
        return _EPOCH + dt.timedelta(milliseconds=value)
    if schema.name == DATE_NAME:
        return _EPOCH_DATE + dt.timedelta(days=value)
    millis = value % _MS_PER_DAY
    return (dt.datetime.min + dt.timedelta(milliseconds=millis)).time()
