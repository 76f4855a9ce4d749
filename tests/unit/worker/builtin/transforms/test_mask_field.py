"""MaskField$Key / MaskField$Value, after Kafka's documented behaviour and MaskFieldTest."""

from __future__ import annotations

import datetime as dt
import decimal
import re
from typing import Any

import pytest

from tests.unit.worker.builtin.transforms._smt import configured, sink, struct_schema
from worker.api import ConfigException, DataException, Schema, SchemaType, Struct
from worker.api.logical import (
    DATE_NAME,
    DECIMAL_NAME,
    TIME_NAME,
    TIMESTAMP_SCHEMA,
)
from worker.builtin.transforms.mask_field import MaskFieldKey, MaskFieldValue

EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
NOW = dt.datetime(2024, 5, 6, 7, 8, 9, tzinfo=dt.UTC)
SCHEMALESS = {"magic": 42, "bool": True, "int": 42, "float": 42.0, "string": "55.121.20.20",
              "date": NOW, "decimal": decimal.Decimal("42.0"), "list": [42],
              "map": {"key": "value"}}
SCHEMA = struct_schema(
    ("magic", Schema(SchemaType.INT32)), ("bool", Schema(SchemaType.BOOLEAN)),
    ("byte", Schema(SchemaType.INT8)), ("short", Schema(SchemaType.INT16)),
    ("int", Schema(SchemaType.INT32)), ("long", Schema(SchemaType.INT64)),
    ("float", Schema(SchemaType.FLOAT32)), ("double", Schema(SchemaType.FLOAT64)),
    ("string", Schema(SchemaType.STRING)),
    ("date", Schema(SchemaType.INT32, name=DATE_NAME, version=1)),
    ("time", Schema(SchemaType.INT32, name=TIME_NAME, version=1)),
    ("timestamp", TIMESTAMP_SCHEMA),
    ("decimal", Schema(SchemaType.BYTES, name=DECIMAL_NAME, parameters={"scale": "0"})),
    ("array", Schema(SchemaType.ARRAY, value_schema=Schema(SchemaType.INT32))),
    ("map", Schema(SchemaType.MAP, key_schema=Schema(SchemaType.STRING),
                   value_schema=Schema(SchemaType.STRING))),
    ("withDefault", Schema(SchemaType.STRING, optional=True, default="default")))
WITH_SCHEMA = Struct(SCHEMA, {
    "magic": 42, "bool": True, "byte": 42, "short": 42, "int": 42, "long": 42, "float": 42.0,
    "double": 42.0, "string": "hmm", "date": NOW.date(), "time": NOW.time(),
    "timestamp": NOW, "decimal": decimal.Decimal(42), "array": [1, 2, 3],
    "map": {"what": "what"}, "withDefault": None})


def mask(*names: str, replacement: str | None = None, **configs: Any) -> Any:
    if replacement is not None:
        configs["replacement"] = replacement
    return configured(MaskFieldValue, fields=",".join(names),
                      **{"replace.null.with.default": "false", **configs})


def test_schemaless_null_values() -> None:
    names = [n for n in SCHEMALESS if n != "magic"]
    result = mask(*names).apply(sink(dict(SCHEMALESS))).value
    assert result == {"magic": 42, "bool": False, "int": 0, "float": 0.0, "string": "",
                      "date": EPOCH, "decimal": decimal.Decimal(0), "list": [], "map": {}}
    assert SCHEMALESS["list"] == [42]  # the input is not modified


def test_with_schema_null_values() -> None:
    names = [f.name for f in SCHEMA.fields if f.name != "magic"]
    result = mask(*names).apply(sink(WITH_SCHEMA, SCHEMA))
    assert result.value_schema is SCHEMA and result.value.schema is SCHEMA
    assert result.value.values == {
        "magic": 42, "bool": False, "byte": 0, "short": 0, "int": 0, "long": 0, "float": 0.0,
        "double": 0.0, "string": "", "date": dt.date(1970, 1, 1), "time": dt.time(0),
        "timestamp": EPOCH, "decimal": decimal.Decimal(0), "array": [], "map": {},
        "withDefault": None}


def test_replace_null_with_default_masks_the_default() -> None:
    result = mask("withDefault", **{"replace.null.with.default": "true"}).apply(
        sink(WITH_SCHEMA, SCHEMA))
    assert result.value.values["withDefault"] == ""


@pytest.mark.parametrize("field, replacement, expected", [
    ("short", "123", 123), ("byte", "300", 44), ("int", "12.7", 12), ("long", "1e3", 1000),
    ("float", "123.1", 123.0999984741211), ("double", "123.0", 123.0),
    ("string", "123", "123"), ("decimal", "123.0", decimal.Decimal("123.0")),
])
def test_replacement_with_schema(field: str, replacement: str, expected: Any) -> None:
    result = mask(field, replacement=replacement).apply(sink(WITH_SCHEMA, SCHEMA))
    assert result.value.values[field] == expected
    assert type(result.value.values[field]) is type(expected)


@pytest.mark.parametrize("field, replacement, expected", [
    ("int", "123", 123), ("float", "123", 123.0), ("string", "***", "***"),
    ("decimal", "123.0", decimal.Decimal("123.0")),
])
def test_replacement_schemaless(field: str, replacement: str, expected: Any) -> None:
    result = mask(field, replacement=replacement).apply(sink(dict(SCHEMALESS))).value
    assert result[field] == expected and type(result[field]) is type(expected)


@pytest.mark.parametrize("field, message", [
    ("date", "Cannot mask value of type datetime with custom replacement."),
    ("bool", "Cannot mask value of type bool with custom replacement."),
    ("list", "Cannot mask value of type list with custom replacement."),
    ("map", "Cannot mask value of type dict with custom replacement."),
])
def test_unsupported_replacement_types(field: str, message: str) -> None:
    with pytest.raises(DataException, match=re.escape(message)):
        mask(field, replacement="123").apply(sink(dict(SCHEMALESS)))


@pytest.mark.parametrize("field, message", [
    ("int", "Unable to convert foo (str) to a number"),
    ("float", "Unable to convert foo (str) to a number"),
    ("decimal", "Unable to convert foo (str) to number"),
])
def test_replacement_type_mismatch(field: str, message: str) -> None:
    with pytest.raises(DataException, match=re.escape(message)):
        mask(field, replacement="foo").apply(sink(dict(SCHEMALESS)))


def test_values_that_cannot_be_masked() -> None:
    with pytest.raises(DataException, match="Cannot mask value of type: bytes"):
        mask("b").apply(sink({"b": b"x"}))
    assert mask("missing", "none").apply(sink({"none": None})).value == \
        {"none": None, "missing": None}


def test_key_and_tombstones() -> None:
    result = configured(MaskFieldKey, fields="id").apply(sink("v", key={"id": 5}))
    assert (result.key, result.value) == ({"id": 0}, "v")
    with pytest.raises(DataException, match=re.escape(
            "Only Map objects supported in absence of schema for [mask fields], found: null")):
        mask("a").apply(sink(None))


def test_nested_fields() -> None:
    v2 = {"field.syntax.version": "V2"}
    value = {"user": {"ssn": "123-45", "name": "ann"}, "ssn": "x"}
    assert mask("user.ssn", **v2).apply(sink(value)).value == \
        {"user": {"ssn": "", "name": "ann"}, "ssn": "x"}
    inner = struct_schema(("ssn", Schema(SchemaType.STRING)), ("age", Schema(SchemaType.INT8)))
    schema = struct_schema(("user", inner))
    result = mask("user.ssn", "user.age", replacement="99", **v2).apply(
        sink(Struct(schema, {"user": Struct(inner, {"ssn": "123", "age": 30})}), schema))
    assert result.value.values["user"] == Struct(inner, {"ssn": "99", "age": 99})


@pytest.mark.parametrize("configs, key, reason", [
    ({"fields": ""}, "fields", "Empty list"),
    ({"fields": "a", "replacement": ""}, "replacement", "String must be non-empty"),
])
def test_invalid_config(configs: dict[str, str], key: str, reason: str) -> None:
    with pytest.raises(ConfigException) as info:
        configured(MaskFieldValue, **configs)
    assert (info.value.name, info.value.reason) == (key, reason)
