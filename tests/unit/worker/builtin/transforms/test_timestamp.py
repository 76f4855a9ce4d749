"""TimestampConverter$Key/$Value and TimestampRouter, after Kafka's docs and tests."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

import pytest

from tests.unit.worker.builtin.transforms._smt import configured, sink, struct_schema
from worker.api import (
    ConfigException,
    ConnectException,
    DataException,
    Schema,
    SchemaType,
    SourceRecord,
    Struct,
)
from worker.api.logical import (
    DATE_NAME,
    OPTIONAL_TIMESTAMP_SCHEMA,
    TIME_NAME,
    TIMESTAMP_SCHEMA,
)
from worker.builtin.transforms.timestamp import (
    TimestampConverterKey,
    TimestampConverterValue,
    TimestampRouter,
)

# Kafka's TimestampConverterTest values: one day and 1234 ms after the epoch.
DATE_PLUS_TIME = dt.datetime(1970, 1, 2, 0, 0, 1, 234000, tzinfo=dt.UTC)
UNIX = 86_401_234
UNIX_MICROS = UNIX * 1000 + 123
UNIX_NANOS = UNIX_MICROS * 1000 + 456
UNIX_SECONDS = 86_401
STRING_FORMAT = "yyyy MM dd HH mm ss SSS z"
STRING = "1970 01 02 00 00 01 234 UTC"
DATE_SCHEMA = Schema(SchemaType.INT32, name=DATE_NAME, version=1)
TIME_SCHEMA = Schema(SchemaType.INT32, name=TIME_NAME, version=1)


def converter(target: str, cls: type = TimestampConverterValue, **configs: str) -> Any:
    return configured(cls, **{"target.type": target, **configs})


# --- schemaless -------------------------------------------------------------------------

def test_documented_example_unix_seconds_to_string() -> None:
    transform = converter("string", format="yyyy-MM-dd", **{"unix.precision": "seconds"})
    assert transform.apply(sink(1696521093)).value == "2023-10-05"


@pytest.mark.parametrize("target, configs, value, expected", [
    ("Timestamp", {}, UNIX, DATE_PLUS_TIME),
    ("Timestamp", {"format": STRING_FORMAT}, STRING, DATE_PLUS_TIME),
    ("Date", {}, DATE_PLUS_TIME, dt.date(1970, 1, 2)),
    ("Time", {}, DATE_PLUS_TIME, dt.time(0, 0, 1, 234000)),
    ("unix", {}, DATE_PLUS_TIME, UNIX),
    ("unix", {}, dt.date(1970, 1, 2), 86_400_000),
    ("string", {"format": STRING_FORMAT}, UNIX, STRING),
    ("string", {"format": STRING_FORMAT}, DATE_PLUS_TIME, STRING),
    ("Timestamp", {"unix.precision": "microseconds"}, UNIX_MICROS, DATE_PLUS_TIME),
    ("Timestamp", {"unix.precision": "nanoseconds"}, UNIX_NANOS, DATE_PLUS_TIME),
    ("Timestamp", {"unix.precision": "seconds"}, UNIX_SECONDS,
     dt.datetime(1970, 1, 2, 0, 0, 1, tzinfo=dt.UTC)),
    ("unix", {"unix.precision": "microseconds"}, DATE_PLUS_TIME, UNIX * 1000),
    ("unix", {"unix.precision": "nanoseconds"}, DATE_PLUS_TIME, UNIX * 1_000_000),
    ("unix", {"unix.precision": "seconds"}, DATE_PLUS_TIME, UNIX_SECONDS),
    ("unix", {"unix.precision": "seconds"},  # -1500 ms: Java's division truncates
     dt.datetime(1969, 12, 31, 23, 59, 58, 500000, tzinfo=dt.UTC), -1),
    (
        "string", {"unix.precision": "microseconds", "format": STRING_FORMAT}, UNIX_MICROS,
        STRING),
])
def test_schemaless_whole_value(target: str, configs: dict[str, str], value: Any,
                                expected: Any) -> None:
    result = converter(target, **configs).apply(sink(value))
    assert (result.value_schema, result.value) == (None, expected)


def test_schemaless_field_and_nulls() -> None:
    transform = converter("Timestamp", field="ts")
    result = transform.apply(sink({"ts": UNIX, "other": "x"}))
    assert result.value == {"ts": DATE_PLUS_TIME, "other": "x"}
    assert transform.apply(sink({"other": "x"})).value == {"other": "x", "ts": None}
    assert transform.apply(sink(None)).value is None
    assert converter("Timestamp").apply(sink(None)).value is None


def test_key_variant() -> None:
    result = converter("unix", TimestampConverterKey).apply(sink("v", key=DATE_PLUS_TIME))
    assert (result.key, result.value) == (UNIX, "v")


# --- with a schema ----------------------------------------------------------------------

@pytest.mark.parametrize("target, configs, schema, value, new_schema, expected", [
    ("Timestamp", {}, Schema(SchemaType.INT64), UNIX, TIMESTAMP_SCHEMA, DATE_PLUS_TIME),
    ("Timestamp", {}, Schema(SchemaType.INT64, optional=True), UNIX, OPTIONAL_TIMESTAMP_SCHEMA,
     DATE_PLUS_TIME),
    ("unix", {"format": STRING_FORMAT}, Schema(SchemaType.STRING), STRING,
     Schema(SchemaType.INT64), UNIX),
    ("Date", {}, TIMESTAMP_SCHEMA, DATE_PLUS_TIME, DATE_SCHEMA, dt.date(1970, 1, 2)),
    ("Time", {}, TIMESTAMP_SCHEMA, DATE_PLUS_TIME, TIME_SCHEMA, dt.time(0, 0, 1, 234000)),
    ("Timestamp", {}, DATE_SCHEMA, dt.date(1970, 1, 2), TIMESTAMP_SCHEMA,
     dt.datetime(1970, 1, 2, tzinfo=dt.UTC)),
    ("Timestamp", {}, TIME_SCHEMA, dt.time(0, 0, 1, 234000), TIMESTAMP_SCHEMA,
     dt.datetime(1970, 1, 1, 0, 0, 1, 234000, tzinfo=dt.UTC)),
    ("string", {"format": "yyyy-MM-dd'T'HH:mm:ss.SSSXXX"}, TIMESTAMP_SCHEMA, DATE_PLUS_TIME,
     Schema(SchemaType.STRING), "1970-01-02T00:00:01.234Z"),
    ("Date", {}, Schema(SchemaType.INT64), None, DATE_SCHEMA, None),
])
def test_whole_value_with_schema(target: str, configs: dict[str, str], schema: Schema,
                                 value: Any, new_schema: Schema, expected: Any) -> None:
    result = converter(target, **configs).apply(sink(value, schema))
    assert (result.value_schema, result.value) == (new_schema, expected)


def test_field_with_schema() -> None:
    schema = struct_schema(("ts", Schema(SchemaType.INT64, optional=True)),
                           ("other", Schema(SchemaType.STRING)), name="Event", version=2)
    transform = converter("Timestamp", field="ts")
    result = transform.apply(sink(Struct(schema, {"ts": UNIX, "other": "x"}), schema))
    new = result.value_schema
    assert (new.name, new.version) == ("Event", 2)
    assert new.field("ts").schema == OPTIONAL_TIMESTAMP_SCHEMA
    assert new.field("other").schema == Schema(SchemaType.STRING)
    assert result.value == Struct(new, {"ts": DATE_PLUS_TIME, "other": "x"})
    null_value = transform.apply(sink(None, schema))
    assert (null_value.value_schema, null_value.value) == (new, None)


@pytest.mark.parametrize("replace, expected", [
    ("true", dt.datetime(1970, 1, 1, tzinfo=dt.UTC)), ("false", None)])
def test_replace_null_with_default(replace: str, expected: Any) -> None:
    schema = struct_schema(("ts", Schema(SchemaType.INT64, optional=True, default=0)))
    transform = converter("Timestamp", field="ts", **{"replace.null.with.default": replace})
    assert transform.apply(sink(Struct(schema, {"ts": None}), schema)).value.values == \
        {"ts": expected}


def test_nested_field() -> None:
    inner = struct_schema(("at", Schema(SchemaType.INT64)))
    schema = struct_schema(("meta", inner))
    transform = converter("Timestamp", field="meta.at", **{"field.syntax.version": "V2"})
    result = transform.apply(sink(Struct(schema, {"meta": Struct(inner, {"at": UNIX})}), schema))
    assert result.value_schema.field("meta").schema.field("at").schema == TIMESTAMP_SCHEMA
    assert result.value.values["meta"].values == {"at": DATE_PLUS_TIME}
    assert transform.apply(sink({"meta": {"at": UNIX}})).value == \
        {"meta": {"at": DATE_PLUS_TIME}}


@pytest.mark.parametrize("transform, record, error, message", [
    (converter("Timestamp", format="yyyy-MM-dd"), sink("05/10/2023"), DataException,
     "Could not parse timestamp: value (05/10/2023) does not match pattern (yyyy-MM-dd)"),
    (converter("Timestamp"), sink(1.5), DataException,
     "TimestampConverter does not support float objects as timestamps"),
    (converter("Timestamp"), sink(True, Schema(SchemaType.BOOLEAN)), ConnectException,
     "Schema Schema{BOOLEAN} does not correspond to a known timestamp type format"),
    (converter("Timestamp"), sink("x", Schema(SchemaType.INT64)), DataException,
     "Expected Unix timestamp to be a Long, but found str"),
    (converter("Timestamp", field="ts"), sink(5, Schema(SchemaType.INT64)), DataException,
     "Only Struct objects supported for [converting timestamp formats], found: int"),
])
def test_conversion_failures(transform: Any, record: Any, error: type, message: str) -> None:
    with pytest.raises(error, match=re.escape(message)):
        transform.apply(record)


@pytest.mark.parametrize("configs, key, reason", [
    ({}, "target.type", 'Missing required configuration "target.type" which has no default '
                        'value.'),
    ({"target.type": "invalid"}, "target.type",
     "String must be one of: string, unix, Date, Time, Timestamp"),
    ({"target.type": "unix", "unix.precision": "invalid"}, "unix.precision",
     "String must be one of: nanoseconds, microseconds, milliseconds, seconds"),
    ({"target.type": "string"}, "format",
     "TimestampConverter requires format option to be specified when using string timestamps"),
    ({"target.type": "string", "format": "yyyy-bb"}, "format",
     "TimestampConverter requires a SimpleDateFormat-compatible pattern for string "
     "timestamps: yyyy-bb (Illegal pattern character 'b')"),
    ({"target.type": "string", "format": "YYYY-ww"}, "format",
     "Unsupported SimpleDateFormat pattern: YYYY-ww (pattern letter 'Y' (week year) is not "
     "supported; supported letters: G y M L d D E u a H k K h m s S z Z X)"),
])
def test_invalid_config(configs: dict[str, str], key: str, reason: str) -> None:
    with pytest.raises(ConfigException) as info:
        configured(TimestampConverterValue, **configs)
    assert info.value.name == key
    assert reason in str(info.value)
    configured(TimestampConverterValue, **{"target.type": "unix", "unix.precision": "seconds"})


# --- TimestampRouter --------------------------------------------------------------------

def test_router_defaults() -> None:
    record = sink("v", timestamp=1696521093000)
    routed = configured(TimestampRouter).apply(record)
    assert routed.topic == "orders-20231005"
    assert routed.original_topic == "orders" and routed.value == "v"


def test_router_formats() -> None:
    router = configured(TimestampRouter, **{"topic.format": "${timestamp}_${topic}_${topic}",
                                            "timestamp.format": "yyyy-MM-dd'T'HH"})
    record = SourceRecord(None, None, "t", value="v", timestamp=1696521093000)
    assert router.apply(record).topic == "2023-10-05T15_t_t"


def test_router_needs_a_timestamp() -> None:
    record = sink("v", timestamp=None)
    with pytest.raises(DataException, match=re.escape(f"Timestamp missing on record: "
                                                      f"{record!r}")):
        configured(TimestampRouter).apply(record)


def test_router_invalid_format() -> None:
    with pytest.raises(ConfigException) as info:
        configured(TimestampRouter, **{"timestamp.format": "yyyy'"})
    assert info.value.name == "timestamp.format"
    assert info.value.reason == "Invalid SimpleDateFormat pattern: yyyy' (Unterminated quote)"
