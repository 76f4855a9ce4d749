"""Kafka Connect's ``Values.convertToString``: the text form of a Connect value.

Numbers and booleans as Java prints them (``42``, ``1.5``, ``1.0E10``, ``true``), strings as
they are (quoted and escaped inside arrays and maps), bytes as Base64, arrays ``[a,b]``, maps
and structs ``{"k":v}``, dates and times in ISO 8601 (``2024-05-01``, ``12:30:00.000Z``,
``2024-05-01T12:30:00.000Z``: which one depends on the instant, as in Kafka), in UTC.
``worker.api.values.parse_string`` reads the text back.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
from collections.abc import Mapping
from typing import Any

from worker.api import DataException, Schema, SchemaType, Struct
from worker.api.logical import (
    DATE_NAME,
    TIME_NAME,
    TIMESTAMP_NAME,
    to_logical,
)
from worker.util.java_numbers import double_to_string

__all__ = ["convert_to_string"]

_MS_PER_DAY = 86_400_000
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_EPOCH_DATE = dt.date(1970, 1, 1)
TEMPORAL_NAMES = frozenset((DATE_NAME, TIME_NAME, TIMESTAMP_NAME))
_FLOATS = frozenset((SchemaType.FLOAT32, SchemaType.FLOAT64))


def convert_to_string(schema: Schema | None, value: Any) -> str | None:
    """Kafka's ``Values.convertToString``: the text of ``value`` (None for None).

    The schema only tells what Python's types cannot: FLOAT32 (printed as Java's ``float``),
    an int of a float schema (printed as a float) and ints of the Date/Time/Timestamp
    logical types. DataException for a value of a type Connect does not have.
    """
    if value is None:
        return None
    out: list[str] = []
    _append(out, schema, value, False)
    return "".join(out)


def _append(out: list[str], schema: Schema | None, value: Any, embedded: bool) -> None:
    if value is None:
        out.append("null")
    elif value is True or value is False:
        out.append("true" if value else "false")
    elif isinstance(value, str):
        out.append(f'"{_escape(value)}"' if embedded else value)
    elif isinstance(value, int):
        if schema is not None and schema.name in TEMPORAL_NAMES:
            _append_temporal(out, to_logical(schema, value))
        elif schema is not None and schema.type in _FLOATS:  # Java would hold a 1.0 here
            out.append(double_to_string(float(value), schema.type is SchemaType.FLOAT32))
        else:
            out.append(str(value))
    elif isinstance(value, float):
        float32 = schema is not None and schema.type is SchemaType.FLOAT32
        out.append(double_to_string(value, float32=float32))
    elif isinstance(value, decimal.Decimal):
        out.append(str(value))  # BigDecimal.toString's notation
    elif isinstance(value, bytes | bytearray | memoryview):
        text = base64.b64encode(bytes(value)).decode("ascii")
        out.append(f'"{text}"' if embedded else text)
    elif isinstance(value, list | tuple):
        element = schema.value_schema if schema is not None else None
        out.append("[")
        for index, item in enumerate(value):
            if index:
                out.append(",")
            _append(out, element, item, True)
        out.append("]")
    elif isinstance(value, Mapping):
        key_schema = schema.key_schema if schema is not None else None
        value_schema = schema.value_schema if schema is not None else None
        out.append("{")
        for index, (key, item) in enumerate(value.items()):
            if index:
                out.append(",")
            _append(out, key_schema, key, True)
            out.append(":")
            _append(out, value_schema, item, True)
        out.append("}")
    elif isinstance(value, Struct):
        out.append("{")
        for index, field in enumerate(value.schema.fields):
            if index:
                out.append(",")
            _append(out, None, field.name, True)
            out.append(":")
            item = value.values.get(field.name)
            if item is None:  # Kafka's Struct.get: a null field reads as its default
                item = field.schema.default
            _append(out, field.schema, item, True)
        out.append("}")
    elif isinstance(value, dt.datetime | dt.date | dt.time):
        _append_temporal(out, value)
    else:
        raise DataException(f"Failed to serialize unexpected value type "
                            f"{type(value).__module__}.{type(value).__qualname__}: {value!r}")


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def _append_temporal(out: list[str], value: dt.datetime | dt.date | dt.time) -> None:
    # Kafka formats a java.util.Date by its instant: before one day after the epoch as a
    # time of day, at a whole day as a date, otherwise as a timestamp.
    if isinstance(value, dt.datetime):
        instant = value if value.tzinfo is not None else value.replace(tzinfo=dt.UTC)
        delta = instant - _EPOCH
        millis = delta.days * _MS_PER_DAY + delta.seconds * 1000 + delta.microseconds // 1000
    elif isinstance(value, dt.date):
        millis = (value - _EPOCH_DATE).days * _MS_PER_DAY
    else:
        millis = ((value.hour * 60 + value.minute) * 60 + value.second) * 1000 \
            + value.microsecond // 1000
    at = _EPOCH + dt.timedelta(milliseconds=millis)
    date = f"{at.year:04d}-{at.month:02d}-{at.day:02d}"
    time = f"{at.hour:02d}:{at.minute:02d}:{at.second:02d}.{at.microsecond // 1000:03d}Z"
    if millis < _MS_PER_DAY:
        out.append(time)
    elif millis % _MS_PER_DAY == 0:
        out.append(date)
    else:
        out.append(f"{date}T{time}")
