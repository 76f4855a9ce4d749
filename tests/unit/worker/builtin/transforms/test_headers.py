"""DropHeaders, HeaderFrom$Key / HeaderFrom$Value and InsertHeader, after Kafka's documented
behaviour and its DropHeadersTest, HeaderFromTest and InsertHeaderTest."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.worker.builtin.transforms._smt import configured, fields, struct_schema
from worker.api import (
    ConfigException,
    ConnectHeaders,
    DataException,
    Header,
    Schema,
    SchemaType,
    SinkRecord,
    SourceRecord,
    Struct,
)
from worker.api.data import STRING_SCHEMA
from worker.builtin.transforms.headers import (
    DropHeaders,
    HeaderFromKey,
    HeaderFromValue,
    InsertHeader,
)
from worker.plugins.registry import PluginType, builtin_registry

INT8 = Schema(SchemaType.INT8)
INT32 = Schema(SchemaType.INT32)
OPTIONAL_STRING = Schema(SchemaType.STRING, optional=True)
WITH_DEFAULT = Schema(SchemaType.STRING, optional=True, default="dflt")


def source(key: Any = "key", value: Any = "value", key_schema: Schema | None = None,
           value_schema: Schema | None = None, headers: Any = None) -> SourceRecord:
    return SourceRecord({"foo": "bar"}, {"baz": "quxx"}, "topic", 0, key_schema, key,
                        value_schema, value, 0, headers)


def pairs(headers: ConnectHeaders) -> list[tuple[str, Any]]:
    return [(h.key, h.value) for h in headers]


# --- DropHeaders --------------------------------------------------------------------------

def test_drop_headers_removes_every_header_of_the_named_keys() -> None:
    transform = configured(DropHeaders, headers="dont-keep-me,and-me")
    record = source(headers=[("keep-me", 1), ("dont-keep-me", 2), ("and-me", 3),
                             ("keep-me", 4), ("dont-keep-me", 5)])
    dropped = transform.apply(record)
    assert pairs(dropped.headers) == [("keep-me", 1), ("keep-me", 4)]
    assert len(record.headers) == 5  # the original record keeps its headers
    assert (dropped.key, dropped.value, dropped.topic, dropped.timestamp,
            dropped.source_offset) == ("key", "value", "topic", 0, {"baz": "quxx"})


def test_drop_headers_on_records_without_headers_or_without_the_named_ones() -> None:
    transform = configured(DropHeaders, headers=["gone"])
    plain = SinkRecord("t", 0, None, None, None, {"a": 1}, 7)
    assert not transform.apply(plain).has_headers()
    assert not plain.has_headers()  # reading nothing created nothing on the input
    kept = transform.apply(source(headers=[Header("x", INT32, 1)]))
    assert list(kept.headers) == [Header("x", INT32, 1)]


@pytest.mark.parametrize(("configs", "message"), [
    ({}, 'Missing required configuration "headers" which has no default value.'),
    ({"headers": ""}, "Invalid value [] for configuration headers: Empty list"),
])
def test_drop_headers_bad_configs(configs: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigException) as failure:
        configured(DropHeaders, **configs)
    assert str(failure.value) == message


# --- HeaderFrom ---------------------------------------------------------------------------

BASIC = struct_schema(("field1", STRING_SCHEMA), ("field2", STRING_SCHEMA),
                      name="com.example.Basic", version=2)
BASIC_VALUE = {"field1": "field1-value", "field2": "field2-value"}
EXISTING = [Header("header1", STRING_SCHEMA, "existing-value")]

KEY_AND_VALUE = pytest.mark.parametrize("transform_class", [HeaderFromKey, HeaderFromValue])


def operated(record: Any, key: bool) -> tuple[Schema | None, Any]:
    return (record.key_schema, record.key) if key else (record.value_schema, record.value)


def with_struct(transform_class: type, struct: Struct, headers: Any = EXISTING) -> SourceRecord:
    if transform_class is HeaderFromKey:
        return source(key=struct, key_schema=struct.schema, headers=headers)
    return source(value=struct, value_schema=struct.schema, headers=headers)


def with_map(transform_class: type, value: dict[str, Any], headers: Any = EXISTING
             ) -> SourceRecord:
    if transform_class is HeaderFromKey:
        return source(key=value, headers=headers)
    return source(value=value, headers=headers)


@KEY_AND_VALUE
def test_copy_with_schema(transform_class: type) -> None:
    transform = configured(transform_class, fields="field1", headers="inserted1",
                           operation="copy")
    record = with_struct(transform_class, Struct(BASIC, dict(BASIC_VALUE)))
    copied = transform.apply(record)
    schema, value = operated(copied, transform_class is HeaderFromKey)
    assert schema is BASIC and value.values == BASIC_VALUE
    assert list(copied.headers) == [*EXISTING, Header("inserted1", STRING_SCHEMA,
                                                      "field1-value")]
    assert list(record.headers) == EXISTING
    other = copied.value if transform_class is HeaderFromKey else copied.key
    assert other == ("value" if transform_class is HeaderFromKey else "key")


@KEY_AND_VALUE
def test_move_with_schema_removes_the_field_from_value_and_schema(transform_class: type
                                                                  ) -> None:
    transform = configured(transform_class, fields="field1", headers="inserted1",
                           operation="move")
    moved = transform.apply(with_struct(transform_class, Struct(BASIC, dict(BASIC_VALUE)),
                                        headers=[Header("inserted1", STRING_SCHEMA, "old")]))
    schema, value = operated(moved, transform_class is HeaderFromKey)
    assert fields(schema) == [("field2", STRING_SCHEMA)]
    assert (schema.name, schema.version) == ("com.example.Basic", 2)
    assert value.values == {"field2": "field2-value"} and value.schema is schema
    # A header already named so stays; the moved field is added after it.
    assert pairs(moved.headers) == [("inserted1", "old"), ("inserted1", "field1-value")]


@KEY_AND_VALUE
def test_several_fields_to_several_headers_schemaless(transform_class: type) -> None:
    transform = configured(transform_class, fields="field1,field2,missing",
                           headers="inserted1,inserted2,inserted3", operation="move")
    moved = transform.apply(with_map(transform_class, {**BASIC_VALUE, "field3": 3}))
    _, value = operated(moved, transform_class is HeaderFromKey)
    assert value == {"field3": 3}
    # Schemaless: the headers have no schema; a missing field is a null header.
    assert list(moved.headers)[1:] == [Header("inserted1", None, "field1-value"),
                                       Header("inserted2", None, "field2-value"),
                                       Header("inserted3", None, None)]
    copy = configured(transform_class, fields="field1", headers="h", operation="copy")
    copied = copy.apply(with_map(transform_class, dict(BASIC_VALUE)))
    assert operated(copied, transform_class is HeaderFromKey)[1] == BASIC_VALUE


@pytest.mark.parametrize(("replace", "header_value", "kept"), [
    ("true", "dflt", "dflt"), ("false", None, None)])
def test_replace_null_with_default(replace: str, header_value: Any, kept: Any) -> None:
    schema = struct_schema(("a", WITH_DEFAULT), ("b", WITH_DEFAULT), ("c", INT32))
    transform = configured(HeaderFromValue, fields="a", headers="ha", operation="move",
                           **{"replace.null.with.default": replace})
    moved = transform.apply(source(value=Struct(schema, {"c": 1}), value_schema=schema))
    assert list(moved.headers) == [Header("ha", WITH_DEFAULT, header_value)]
    assert moved.value.values == {"b": kept, "c": 1}


def test_a_null_field_of_a_required_schema_cannot_become_a_header() -> None:
    schema = struct_schema(("a", INT32),)
    transform = configured(HeaderFromValue, fields="a", headers="ha", operation="copy")
    with pytest.raises(DataException, match="null value requires an optional schema"):
        transform.apply(source(value=Struct(schema, {}), value_schema=schema))


def test_a_field_not_in_the_schema_is_an_error() -> None:
    transform = configured(HeaderFromValue, fields="nope", headers="h", operation="copy")
    record = source(value=Struct(BASIC, dict(BASIC_VALUE)), value_schema=BASIC)
    with pytest.raises(DataException, match="nope is not a valid field name of the value"):
        transform.apply(record)


def test_header_from_needs_a_map_or_struct() -> None:
    copy = configured(HeaderFromValue, fields="a", headers="h", operation="copy")
    with pytest.raises(DataException, match=r"Only Map objects supported in absence of schema "
                                            r"for \[header copy\], found: str"):
        copy.apply(source(value="text"))
    move = configured(HeaderFromKey, fields="a", headers="h", operation="move")
    with pytest.raises(DataException, match=r"Only Struct objects supported for "
                                            r"\[header move\], found: dict"):
        move.apply(source(key={"a": 1}, key_schema=BASIC))


@pytest.mark.parametrize(("configs", "message"), [
    ({"fields": "a,b", "headers": "h", "operation": "copy"},
     "'fields' config must have the same number of elements as 'headers' config."),
    ({"fields": "a", "headers": "h", "operation": "rename"},
     "Invalid value rename for configuration operation: String must be one of: move, copy"),
    ({"fields": "a", "headers": "h", "operation": "MOVE"},
     "Invalid value MOVE for configuration operation: String must be one of: move, copy"),
    ({"fields": "", "headers": "h", "operation": "copy"},
     "Invalid value [] for configuration fields: Empty list"),
    ({"fields": "a", "headers": "h"},
     'Missing required configuration "operation" which has no default value.'),
])
def test_header_from_bad_configs(configs: dict[str, Any], message: str) -> None:
    transform = HeaderFromValue()
    with pytest.raises(ConfigException) as failure:
        transform.configure(configs)
    assert str(failure.value) == message
    assert not hasattr(transform, "_pairs")  # nothing configured


# --- InsertHeader -------------------------------------------------------------------------

@pytest.mark.parametrize(("literal", "schema", "value"), [
    ("inserted-value", STRING_SCHEMA, "inserted-value"),
    ("42", INT8, 42),
    ("true", Schema(SchemaType.BOOLEAN), True),
    ("[1, 2]", Schema(SchemaType.ARRAY, value_schema=INT8), [1, 2]),
    ("null", None, None),
])
def test_insert_header_parses_the_literal_as_simple_header_converter(
        literal: str, schema: Schema | None, value: Any) -> None:
    transform = configured(InsertHeader, header="inserted", **{"value.literal": literal})
    record = source(headers=[("existing", "existing-value")])
    inserted = transform.apply(record)
    assert list(inserted.headers) == [Header("existing", None, "existing-value"),
                                      Header("inserted", schema, value)]
    assert len(record.headers) == 1
    assert transform.apply(inserted).headers.all_with_name("inserted") == [
        Header("inserted", schema, value)] * 2  # a second one: headers are a multi-map


def test_insert_header_on_a_record_without_headers() -> None:
    transform = configured(InsertHeader, header="h", **{"value.literal": "x"})
    plain = SinkRecord("t", 1, None, None, None, "v", 9)
    inserted = transform.apply(plain)
    assert pairs(inserted.headers) == [("h", "x")] and not plain.has_headers()
    assert (inserted.kafka_offset, inserted.original_kafka_offset) == (9, 9)


@pytest.mark.parametrize(("configs", "message"), [
    ({"value.literal": "x"}, 'Missing required configuration "header" which has no default '
                             'value.'),
    ({"header": "h"}, 'Missing required configuration "value.literal" which has no default '
                      'value.'),
    ({"header": None, "value.literal": "x"},
     "Invalid value None for configuration header: Entry must be non null"),
])
def test_insert_header_bad_configs(configs: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigException) as failure:
        InsertHeader().configure(configs)
    assert str(failure.value) == message


# --- registration -------------------------------------------------------------------------

@pytest.mark.parametrize(("name", "cls"), [
    ("org.apache.kafka.connect.transforms.DropHeaders", DropHeaders),
    ("org.apache.kafka.connect.transforms.HeaderFrom$Key", HeaderFromKey),
    ("org.apache.kafka.connect.transforms.HeaderFrom$Value", HeaderFromValue),
    ("org.apache.kafka.connect.transforms.InsertHeader", InsertHeader),
])
def test_registered_under_kafkas_names(name: str, cls: type) -> None:
    assert builtin_registry().resolve(name, PluginType.TRANSFORMATION).plugin_class is cls
