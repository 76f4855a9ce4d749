"""Cast$Key / Cast$Value, after Kafka's documented behaviour and CastTest."""

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
from worker.builtin.transforms.cast import CastKey, CastValue

DATE = Schema(SchemaType.INT32, name=DATE_NAME, version=1)
TIME = Schema(SchemaType.INT32, name=TIME_NAME, version=1)
DECIMAL = Schema(SchemaType.BYTES, name=DECIMAL_NAME, version=1, parameters={"scale": "0"})
V2 = {"field.syntax.version": "V2"}


# --- schemaless -------------------------------------------------------------------------

def test_documented_example_casts_fields_of_a_map() -> None:
    transform = configured(CastValue, spec="ID:string,score:float64")
    result = transform.apply(sink({"ID": 46290, "score": 4, "name": "x"}))
    assert result.value == {"ID": "46290", "score": 4.0, "name": "x"}
    assert result.value_schema is None


def test_whole_key_schemaless() -> None:
    result = configured(CastKey, spec="int8").apply(sink("bogus", key=42))
    assert (result.key_schema, result.key, result.value) == (None, 42, "bogus")


def test_fields_schemaless() -> None:
    transform = configured(CastValue, spec="int8:int16,int16:int32,int32:int64,int64:boolean,"
                                            "float32:float64,float64:boolean,boolean:int8,"
                                            "string:int32")
    result = transform.apply(sink({"int8": 8, "int16": 16, "int32": 32, "int64": 64,
                                   "float32": 32.0, "float64": -64.0, "boolean": True,
                                   "string": "42"})).value
    assert result == {"int8": 8, "int16": 16, "int32": 32, "int64": True, "float32": 32.0,
                      "float64": True, "boolean": 1, "string": 42}
    assert type(result["boolean"]) is int and result["int64"] is True


def test_a_missing_field_becomes_null_as_in_kafka() -> None:
    assert configured(CastValue, spec="a:int32").apply(sink({"b": 1})).value == \
        {"b": 1, "a": None}


def test_null_values_pass_through() -> None:
    record = sink(None, key=None)
    assert configured(CastValue, spec="a:int64").apply(record) is record
    assert configured(CastKey, spec="int64").apply(record) is record


@pytest.mark.parametrize("value, message", [
    ([1], "Cast transformation does not support casting from ARRAY; supported types are "
          "[INT8, INT16, INT32, INT64, FLOAT32, FLOAT64, BOOLEAN, STRING, BYTES]"),
    (dt.datetime(2024, 1, 1), "Cast transformation was passed a value of type datetime which "
                              "is not supported by Connect's data API"),
    (b"\x01", "Unexpected type in Cast transformation: bytes"),
    ("300", "Value (300) was out of range for requested data type"),
    ("4x", "Value (4x) was out of range for requested data type"),
    (decimal.Decimal(1), "Cast transformation was passed a value of type Decimal which is not "
                         "supported by Connect's data API"),
])
def test_whole_value_cast_failures(value: Any, message: str) -> None:
    with pytest.raises(DataException, match=re.escape(message)):
        configured(CastValue, spec="int8").apply(sink(value))


@pytest.mark.parametrize("target, value, expected", [
    ("int8", 300, 44),  # narrowing wraps around, as Java's (byte)
    ("int16", -32769, 32767),
    ("int32", 1e20, 2147483647),  # a double saturates first
    ("int64", -1.9, -1),  # and is truncated toward zero
    ("int32", "+17", 17),
    ("float32", 1.1, 1.100000023841858),
    ("float64", "1e3", 1000.0),
    ("float64", "1.5d", 1.5),
    ("boolean", 0.5, False),  # longValue() != 0
    ("boolean", "TRUE", True),
    ("boolean", "yes", False),
    ("string", 1e10, "1.0E10"),
    ("string", 100.0, "100.0"),
    ("string", False, "false"),
    ("string", b"\xfe\xdc\xba\x98\x76\x54\x32\x10", "/ty6mHZUMhA="),
])
def test_java_conversions(target: str, value: Any, expected: Any) -> None:
    result = configured(CastValue, spec=target).apply(sink(value)).value
    assert result == expected and type(result) is type(expected)


# --- with a schema ----------------------------------------------------------------------

def test_fields_with_schema() -> None:
    schema = struct_schema(
        ("int8", Schema(SchemaType.INT8)), ("int16", Schema(SchemaType.INT16, optional=True)),
        ("int32", Schema(SchemaType.INT32, default=2)), ("int64", Schema(SchemaType.INT64)),
        ("float32", Schema(SchemaType.FLOAT32)),
        ("float64", Schema(SchemaType.FLOAT64, default=-1.125)),
        ("boolean", Schema(SchemaType.BOOLEAN)), ("string", Schema(SchemaType.STRING)),
        ("bigdecimal", DECIMAL), ("date", DATE),
        ("optional", Schema(SchemaType.FLOAT32, optional=True)), ("timestamp", TIMESTAMP_SCHEMA),
        ("bytes", Schema(SchemaType.BYTES)), name="Types", version=3)
    epoch = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
    value = Struct(schema, {
        "int8": 8, "int16": 16, "int32": 32, "int64": 64, "float32": 32.0, "float64": -64.0,
        "boolean": True, "string": "42", "bigdecimal": decimal.Decimal(42),
        "date": dt.date(1970, 1, 2), "timestamp": epoch,
        "bytes": b"\xfe\xdc\xba\x98\x76\x54\x32\x10"})
    transform = configured(CastValue, spec="int8:int16,int16:int32,int32:int64,int64:boolean,"
                                            "float32:float64,float64:boolean,boolean:int8,"
                                            "string:int32,bigdecimal:string,date:string,"
                                            "optional:int32,bytes:string")
    result = transform.apply(sink(value, schema))
    assert result.value.values == {
        "int8": 8, "int16": 16, "int32": 32, "int64": True, "float32": 32.0, "float64": True,
        "boolean": 1, "string": 42, "bigdecimal": "42", "date": "1970-01-02",
        "optional": None, "timestamp": epoch, "bytes": "/ty6mHZUMhA="}
    new = result.value_schema
    assert result.value.schema is new and (new.name, new.version) == ("Types", 3)
    types = {f.name: f.schema.type.value for f in new.fields}
    assert types == {"int8": "int16", "int16": "int32", "int32": "int64", "int64": "boolean",
                     "float32": "float64", "float64": "boolean", "boolean": "int8",
                     "string": "int32", "bigdecimal": "string", "date": "string",
                     "optional": "int32", "timestamp": "int64", "bytes": "string"}
    assert new.field("int16").schema.optional and new.field("optional").schema.optional
    assert new.field("int32").schema.default == 2  # defaults are cast too
    assert new.field("float64").schema.default is True
    assert new.field("timestamp").schema is TIMESTAMP_SCHEMA  # not in the spec: unchanged


def test_logical_values_cast_from_their_encoded_form() -> None:
    schema = struct_schema(("date", DATE), ("timestamp", TIMESTAMP_SCHEMA), ("time", TIME),
                           ("decimal", DECIMAL),
                           ("none", Schema(SchemaType.INT64, optional=True,
                                           name=TIMESTAMP_SCHEMA.name)))
    value = Struct(schema, {"date": dt.date(1970, 1, 2),
                            "timestamp": dt.datetime(1970, 1, 1, tzinfo=dt.UTC),
                            "time": dt.time(0, 0, 0, 1000),
                            "decimal": decimal.Decimal(2**31)})
    transform = configured(CastValue, spec="date:int32,timestamp:int64,time:int64,"
                                            "decimal:int32,none:int32")
    assert transform.apply(sink(value, schema)).value.values == {
        "date": 1, "timestamp": 0, "time": 1, "decimal": -2**31, "none": None}


def test_logical_values_to_string_as_kafka_values_prints_them() -> None:
    schema = struct_schema(("date", DATE), ("time", TIME), ("timestamp", TIMESTAMP_SCHEMA),
                           ("decimal", DECIMAL))
    value = Struct(schema, {"date": dt.date(1970, 1, 2), "time": dt.time(1, 0),
                            "timestamp": dt.datetime(2024, 5, 6, 7, 8, 9, 123000, tzinfo=dt.UTC),
                            "decimal": decimal.Decimal(1982)})
    transform = configured(CastValue, spec="date:string,time:string,timestamp:string,"
                                            "decimal:string")
    assert transform.apply(sink(value, schema)).value.values == {
        "date": "1970-01-02", "time": "01:00:00.000Z", "timestamp": "2024-05-06T07:08:09.123Z",
        "decimal": "1982"}


def test_whole_value_with_schema_casts_the_default() -> None:
    schema = Schema(SchemaType.FLOAT32, default=-42.125, doc="d")
    result = configured(CastValue, spec="int32").apply(sink(42.125, schema))
    assert result.value == 42
    assert result.value_schema == Schema(SchemaType.INT32, default=-42, doc="d")


def test_whole_key_with_schema() -> None:
    result = configured(CastKey, spec="int8").apply(
        sink("v", key=42, key_schema=Schema(SchemaType.INT32, optional=True)))
    assert (result.key, result.key_schema) == (42, Schema(SchemaType.INT8, optional=True))


def test_whole_logical_value_drops_the_logical_name() -> None:
    value = dt.datetime(1970, 1, 2, 0, 0, 0, 1000, tzinfo=dt.UTC)
    result = configured(CastValue, spec="string").apply(sink(value, TIMESTAMP_SCHEMA))
    assert result.value == "1970-01-02T00:00:00.001Z"
    assert result.value_schema == Schema(SchemaType.STRING)


@pytest.mark.parametrize("replace, expected", [(True, "10"), ("false", None)])
def test_replace_null_with_default(replace: Any, expected: Any) -> None:
    schema = struct_schema(("magic", Schema(SchemaType.INT32, optional=True, default=10)))
    transform = configured(CastValue, spec="magic:string",
                           **{"replace.null.with.default": replace})
    result = transform.apply(sink(Struct(schema, {"magic": None}), schema))
    assert result.value_schema.field("magic").schema.type is SchemaType.STRING
    assert result.value.values == {"magic": expected}


def test_struct_required_with_a_schema() -> None:
    with pytest.raises(DataException, match=r"Only Struct objects supported for \[cast types\]"):
        configured(CastValue, spec="a:int8").apply(sink({"a": 1}, struct_schema()))


# --- KIP-821 nested fields --------------------------------------------------------------

def test_nested_fields_schemaless() -> None:
    transform = configured(CastValue, spec="parent.child.k2:int64,k1:string", **V2)
    value = {"k1": 123, "parent": {"child": {"k2": "123"}, "other": 1}}
    assert transform.apply(sink(value)).value == \
        {"k1": "123", "parent": {"child": {"k2": 123}, "other": 1}}
    assert value["parent"]["child"]["k2"] == "123"  # the input is not modified
    assert transform.apply(sink({"k1": 1, "parent": None})).value == {"k1": "1", "parent": None}


def test_nested_fields_with_schema() -> None:
    child = struct_schema(("k2", Schema(SchemaType.STRING)), name="Child", optional=True)
    schema = struct_schema(("k1", Schema(SchemaType.INT32)), ("child", child))
    transform = configured(CastValue, spec="child.k2:int64", **V2)
    result = transform.apply(sink(Struct(schema, {"k1": 1, "child": Struct(child, {"k2": "7"})}),
                                  schema))
    new_child = result.value_schema.field("child").schema
    assert (new_child.name, new_child.optional) == ("Child", True)
    assert new_child.field("k2").schema == Schema(SchemaType.INT64)
    assert result.value.values["child"] == Struct(new_child, {"k2": 7})
    assert transform.apply(sink(Struct(schema, {"k1": 1}), schema)).value.values["child"] is None


def test_v1_and_backticks() -> None:
    assert configured(CastValue, spec="a.b:int32").apply(sink({"a.b": "5"})).value == \
        {"a.b": 5}
    assert configured(CastValue, spec="`a.b`.c:int32", **V2).apply(
        sink({"a.b": {"c": "5"}})).value == {"a.b": {"c": 5}}


# --- configuration ----------------------------------------------------------------------

SUPPORTED_OUTPUTS = "[INT8, INT16, INT32, INT64, FLOAT32, FLOAT64, BOOLEAN, STRING]"


@pytest.mark.parametrize("spec, reason", [
    ("", "Must specify at least one field to cast."),
    ("foo:faketype", "Invalid type found in casting spec: faketype"),
    ("foo:array", f"Cast transformation does not support casting to ARRAY; supported types "
                  f"are {SUPPORTED_OUTPUTS}"),
    ("array", f"Cast transformation does not support casting to ARRAY; supported types are "
              f"{SUPPORTED_OUTPUTS}"),
    ("foo:bytes", f"Cast transformation does not support casting to BYTES; supported types "
                  f"are {SUPPORTED_OUTPUTS}"),
    ("foo:int8:extra", "Invalid rename mapping: foo:int8:extra"),
    ("foo:int8,int32", "Cast transformations that specify a type to cast the entire value to "
                       "may only specify a single cast in their spec"),
])
def test_invalid_spec(spec: str, reason: str) -> None:
    with pytest.raises(ConfigException) as info:
        configured(CastValue, spec=spec)
    assert (info.value.name, info.value.reason) == ("spec", reason)


def test_spec_is_required_and_syntax_version_checked() -> None:
    with pytest.raises(ConfigException, match='Missing required configuration "spec"'):
        configured(CastValue)
    with pytest.raises(ConfigException) as info:
        configured(CastValue, spec="a:int8", **{"field.syntax.version": "V3"})
    assert info.value.reason == "String must be one of (case insensitive): V1, V2"
    with pytest.raises(ConfigException, match="Incomplete backtick pair in path: \\[`a\\]"):
        configured(CastValue, spec="`a:int8", **V2)
    configured(CastValue, spec="a:int8", **{"field.syntax.version": "v2"})  # any case
