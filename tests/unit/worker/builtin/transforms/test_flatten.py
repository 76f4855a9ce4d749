"""Flatten$Key / Flatten$Value, after Kafka's documented behaviour and FlattenTest."""

from __future__ import annotations

import datetime as dt
import re

import pytest

from tests.unit.worker.builtin.transforms._smt import configured, fields, sink, struct_schema
from worker.api import DataException, Schema, SchemaType, Struct
from worker.builtin.transforms.flatten import FlattenKey, FlattenValue

INT32 = Schema(SchemaType.INT32)
OPT_INT32 = Schema(SchemaType.INT32, optional=True)
STRING = Schema(SchemaType.STRING)
OPT_STRING = Schema(SchemaType.STRING, optional=True)


def test_documented_example_schemaless() -> None:
    value = {"content": {"id": 42, "name": {"first": "David", "middle": None, "last": "Wong"}}}
    result = configured(FlattenValue).apply(sink(value))
    assert result.value == {"content.id": 42, "content.name.first": "David",
                            "content.name.middle": None, "content.name.last": "Wong"}
    assert result.value_schema is None


def test_delimiter_and_arrays_schemaless() -> None:
    value = {"a": {"b": [{"c": 1}], "d": b"x", "e": 1.5, "f": True}, "g": "s"}
    result = configured(FlattenKey, delimiter="_").apply(sink("v", key=value))
    assert result.key == {"a_b": [{"c": 1}], "a_d": b"x", "a_e": 1.5, "a_f": True, "g": "s"}
    assert result.value == "v"


def test_null_value_passes_through() -> None:
    record = sink(None)
    assert configured(FlattenValue).apply(record) is record


@pytest.mark.parametrize("value, message", [
    ({"a": {"b": dt.date(2024, 1, 1)}}, "Flatten transformation was passed a value of type "
                                        "date which is not supported by Connect's data API"),
    ({"a": Struct(struct_schema())}, "Flatten transformation does not support Struct for "
                                     "record without schemas (for field a)."),
    ("text", "Only Map objects supported in absence of schema for [flattening], found: str"),
])
def test_unsupported_schemaless_values(value: object, message: str) -> None:
    with pytest.raises(DataException, match=re.escape(message)):
        configured(FlattenValue).apply(sink(value))


def test_nested_struct_with_schema() -> None:
    name = struct_schema(("first", STRING), ("last", OPT_STRING), name="Name")
    content = struct_schema(("id", INT32), ("name", name), ("tags", Schema(
        SchemaType.ARRAY, value_schema=STRING)))
    schema = struct_schema(("content", content), name="Envelope", version=2, doc="d")
    value = Struct(schema, {"content": Struct(content, {
        "id": 42, "name": Struct(name, {"first": "David", "last": None}), "tags": ["t"]})})
    result = configured(FlattenValue).apply(sink(value, schema))
    new = result.value_schema
    assert (new.name, new.version, new.doc) == ("Envelope", 2, "d")
    assert fields(new) == [("content.id", INT32), ("content.name.first", STRING),
                           ("content.name.last", OPT_STRING),
                           ("content.tags", Schema(SchemaType.ARRAY, value_schema=STRING))]
    assert result.value == Struct(new, {"content.id": 42, "content.name.first": "David",
                                        "content.name.last": None, "content.tags": ["t"]})


def test_fields_under_an_optional_struct_become_optional() -> None:
    inner = struct_schema(("x", INT32), ("y", STRING), optional=True)
    schema = struct_schema(("inner", inner), ("z", INT32))
    result = configured(FlattenValue, delimiter="#").apply(
        sink(Struct(schema, {"z": 1}), schema))
    assert fields(result.value_schema) == [("inner#x", OPT_INT32), ("inner#y", OPT_STRING),
                                           ("z", INT32)]
    assert result.value.values == {"z": 1}


def test_defaults_come_from_the_field_or_the_struct_above() -> None:
    inner = struct_schema(("x", INT32), ("y", Schema(SchemaType.STRING, default="own")))
    default = Struct(inner, {"x": 7, "y": "from parent"})
    parent = Schema(SchemaType.STRUCT, fields=inner.fields, default=default, optional=True)
    schema = struct_schema(("inner", parent))
    result = configured(FlattenValue).apply(sink(Struct(schema, {}), schema))
    assert fields(result.value_schema) == [
        ("inner.x", Schema(SchemaType.INT32, optional=True, default=7)),
        ("inner.y", Schema(SchemaType.STRING, optional=True, default="own"))]
    # A null struct is read as its default, as Kafka's Struct.get does.
    assert result.value.values == {"inner.x": 7, "inner.y": "from parent"}


def test_map_in_a_struct_is_not_supported() -> None:
    schema = struct_schema(("m", Schema(SchemaType.MAP, key_schema=STRING, value_schema=STRING)))
    with pytest.raises(DataException, match=re.escape(
            "Flatten transformation does not support MAP for record with schemas (for field m).")):
        configured(FlattenValue).apply(sink(Struct(schema, {"m": {}}), schema))


def test_struct_required_with_a_schema() -> None:
    with pytest.raises(DataException, match=re.escape("Only Struct objects supported for "
                                                      "[flattening], found: dict")):
        configured(FlattenValue).apply(sink({"a": 1}, struct_schema()))
