"""SetSchemaMetadata$Key/$Value and ValueToKey, after Kafka's docs and tests."""

from __future__ import annotations

import decimal
import re
from typing import Any

import pytest

from tests.unit.worker.builtin.transforms._smt import configured, fields, sink, struct_schema
from worker.api import ConfigException, DataException, Schema, SchemaType, Struct
from worker.api.logical import DECIMAL_NAME
from worker.builtin.transforms.schema import (
    SetSchemaMetadataKey,
    SetSchemaMetadataValue,
    ValueToKey,
)

INT32 = Schema(SchemaType.INT32)
STRING = Schema(SchemaType.STRING)
WITH_DEFAULT = Schema(SchemaType.STRING, optional=True, default="dflt")
PERSON = struct_schema(("id", INT32), ("nick", WITH_DEFAULT), name="Person", version=1)
NAME_AND_VERSION = {"schema.name": "foo", "schema.version": "42"}


# --- SetSchemaMetadata ------------------------------------------------------------------

@pytest.mark.parametrize("configs, name, version", [
    ({"schema.name": "foo"}, "foo", 1),
    ({"schema.version": "42"}, "Person", 42),
    (NAME_AND_VERSION, "foo", 42),
])
def test_sets_name_and_version_on_a_struct(configs: dict[str, str], name: str,
                                           version: int) -> None:
    record = sink(Struct(PERSON, {"id": 1, "nick": "a"}), PERSON)
    result = configured(SetSchemaMetadataValue, **configs).apply(record)
    new = result.value_schema
    assert (new.name, new.version) == (name, version)
    assert fields(new) == fields(PERSON) and new.type is SchemaType.STRUCT
    assert result.value.schema is new  # the struct is re-created with the new schema
    assert result.value.values == {"id": 1, "nick": "a"}


@pytest.mark.parametrize("replace, expected", [("true", "dflt"), ("false", None)])
def test_struct_null_fields_and_defaults(replace: str, expected: Any) -> None:
    transform = configured(SetSchemaMetadataValue, **NAME_AND_VERSION,
                           **{"replace.null.with.default": replace})
    result = transform.apply(sink(Struct(PERSON, {"id": 1, "nick": None}), PERSON))
    assert result.value.values == {"id": 1, "nick": expected}


def test_other_values_are_kept() -> None:
    transform = configured(SetSchemaMetadataKey, **NAME_AND_VERSION)
    result = transform.apply(sink("v", key="test-string", key_schema=STRING))
    assert result.key_schema == Schema(SchemaType.STRING, name="foo", version=42)
    assert (result.key, result.value) == ("test-string", "v")
    map_schema = Schema(SchemaType.MAP, optional=True, key_schema=STRING, value_schema=INT32)
    result = transform.apply(sink("v", key={"a": 1}, key_schema=map_schema))
    assert result.key_schema == Schema(SchemaType.MAP, optional=True, name="foo", version=42,
                                       key_schema=STRING, value_schema=INT32)


def test_a_renamed_decimal_keeps_its_value_as_in_kafka() -> None:
    schema = Schema(SchemaType.BYTES, name=DECIMAL_NAME, parameters={"scale": "2"})
    result = configured(SetSchemaMetadataValue, **{"schema.name": "money"}).apply(
        sink(decimal.Decimal("1.25"), schema))
    assert result.value_schema == Schema(SchemaType.BYTES, name="money",
                                         parameters={"scale": "2"})
    assert result.value == decimal.Decimal("1.25")


def test_schema_required() -> None:
    transform = configured(SetSchemaMetadataValue, **{"schema.name": "foo"})
    with pytest.raises(DataException, match=re.escape("Schema required for [updating schema "
                                                      "metadata]")):
        transform.apply(sink({"a": 1}))
    record = sink(None)
    assert transform.apply(record) is record  # null value and no schema: unchanged


@pytest.mark.parametrize("configs, key, reason", [
    ({}, "schema.name", "Neither schema name nor version configured"),
    ({"schema.version": "x"}, "schema.version", "Not a number of type INT"),
])
def test_set_schema_metadata_invalid_config(configs: dict[str, str], key: str,
                                            reason: str) -> None:
    with pytest.raises(ConfigException) as info:
        configured(SetSchemaMetadataValue, **configs)
    assert (info.value.name, info.value.reason) == (key, reason)


# --- ValueToKey -------------------------------------------------------------------------

def test_value_to_key_schemaless() -> None:
    result = configured(ValueToKey, fields="a,b").apply(sink({"a": 1, "b": 2, "c": 3}))
    assert (result.key_schema, result.key) == (None, {"a": 1, "b": 2})
    assert result.value == {"a": 1, "b": 2, "c": 3}
    assert configured(ValueToKey, fields="a,x").apply(sink({"a": 1})).key == \
        {"a": 1, "x": None}


def test_value_to_key_with_schema() -> None:
    schema = struct_schema(("a", INT32), ("b", WITH_DEFAULT), ("c", STRING), name="V")
    value = Struct(schema, {"a": 1, "b": None, "c": "x"})
    result = configured(ValueToKey, fields="b,a").apply(sink(value, schema))
    key_schema = result.key_schema
    assert fields(key_schema) == [("b", WITH_DEFAULT), ("a", INT32)]
    assert key_schema.name is None and not key_schema.optional
    assert result.key == Struct(key_schema, {"b": "dflt", "a": 1})
    assert (result.value_schema, result.value) == (schema, value)
    no_default = configured(ValueToKey, fields="b", **{"replace.null.with.default": "false"})
    assert no_default.apply(sink(value, schema)).key.values == {"b": None}


def test_value_to_key_failures() -> None:
    schema = struct_schema(("a", INT32))
    with pytest.raises(DataException, match="Field does not exist: d"):
        configured(ValueToKey, fields="a,d").apply(sink(Struct(schema, {"a": 1}), schema))
    with pytest.raises(DataException, match=re.escape(
            "Only Map objects supported in absence of schema for [copying fields from value "
            "to key], found: null")):
        configured(ValueToKey, fields="a").apply(sink(None))
    with pytest.raises(ConfigException) as info:
        configured(ValueToKey, fields="")
    assert (info.value.name, info.value.reason) == ("fields", "Empty list")


def test_value_to_key_nested_fields() -> None:
    v2 = {"field.syntax.version": "V2"}
    transform = configured(ValueToKey, fields="k1,parent.child.k2", **v2)
    value = {"k1": 123, "parent": {"child": {"k2": "v", "k3": 0}, "x": 1}}
    assert transform.apply(sink(value)).key == {"k1": 123, "parent": {"child": {"k2": "v"}}}
    child = struct_schema(("k2", STRING), ("k3", INT32), optional=True)
    parent = struct_schema(("child", child), ("x", INT32))
    schema = struct_schema(("k1", INT32), ("parent", parent))
    struct = Struct(schema, {"k1": 123, "parent": Struct(parent, {
        "child": Struct(child, {"k2": "v", "k3": 0}), "x": 1})})
    key = transform.apply(sink(struct, schema)).key
    key_child = key.schema.field("parent").schema.field("child").schema
    assert fields(key_child) == [("k2", STRING)] and key_child.optional
    assert key.values["parent"].values["child"] == Struct(key_child, {"k2": "v"})
    with pytest.raises(DataException, match="Field does not exist: parent.nope"):
        configured(ValueToKey, fields="parent.nope", **v2).apply(sink(struct, schema))
    dotted = configured(ValueToKey, fields="`a.b`", **v2).apply(sink({"a.b": 1}))
    assert dotted.key == {"a.b": 1}
