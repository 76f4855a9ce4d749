"""SimpleHeaderConverter and Kafka's ``Values`` string form: the cases of Kafka's
``SimpleHeaderConverterTest`` and ``ValuesTest``, and the bytes a Java worker writes."""

from __future__ import annotations

import datetime as dt
import decimal
from typing import Any

import pytest

from worker.api import ConnectHeaders, DataException, Header, Schema, SchemaType, Struct
from worker.api.data import STRING_SCHEMA, struct_schema
from worker.api.header_converter import (
    SimpleHeaderConverter,
    decode_headers,
    encode_headers,
)
from worker.api.values import convert_to_string, parse_string
from worker.builtin.converters.json_converter import JsonConverter
from worker.plugins.registry import PluginType, builtin_registry

TOPIC, HEADER = "topic", "header"


def schema(type_: SchemaType, **kwargs: Any) -> Schema:
    return Schema(type_, **kwargs)


INT8, INT16, INT32, INT64 = (schema(t) for t in (SchemaType.INT8, SchemaType.INT16,
                                                 SchemaType.INT32, SchemaType.INT64))
FLOAT32, BOOLEAN = schema(SchemaType.FLOAT32), schema(SchemaType.BOOLEAN)
DATE = schema(SchemaType.INT32, name="org.apache.kafka.connect.data.Date", version=1)
TIME = schema(SchemaType.INT32, name="org.apache.kafka.connect.data.Time", version=1)
TIMESTAMP = schema(SchemaType.INT64, name="org.apache.kafka.connect.data.Timestamp", version=1)


def array_of(element: Schema | None) -> Schema:
    return schema(SchemaType.ARRAY, value_schema=element)


def map_of(key: Schema | None, value: Schema | None) -> Schema:
    return schema(SchemaType.MAP, key_schema=key, value_schema=value)


@pytest.fixture
def converter() -> SimpleHeaderConverter:
    return SimpleHeaderConverter()


def round_trip(converter: SimpleHeaderConverter, schema_: Schema | None, value: Any) -> Any:
    return converter.to_connect_header(
        TOPIC, HEADER, converter.from_connect_header(TOPIC, HEADER, schema_, value))


# --- SimpleHeaderConverterTest --------------------------------------------------------------

@pytest.mark.parametrize(("schema_", "value"), [
    (STRING_SCHEMA, "simple"),
    (STRING_SCHEMA, ""),
    (STRING_SCHEMA, 'three"blind\\"mice'),
    (STRING_SCHEMA, "string with delimiters: <>?,./\\=+-!@#$%^&*(){}[]|;':"),
    (STRING_SCHEMA, "null"),  # Kafka's shouldConvertStringOfNull... reads back as null
    (map_of(STRING_SCHEMA, STRING_SCHEMA), {"foo": "123", "bar": "baz"}),
    (map_of(STRING_SCHEMA, INT16), {"foo": 12345, "bar": 0, "baz": -4321}),
    (map_of(STRING_SCHEMA, INT32), {"foo": 1234567890, "bar": 0, "baz": -987654321}),
    (array_of(STRING_SCHEMA), ["foo", "bar"]),
    (array_of(INT32), [1234567890, -987654321]),
])
def test_round_trips(converter: SimpleHeaderConverter, schema_: Schema, value: Any) -> None:
    serialized = converter.from_connect_header(TOPIC, HEADER, schema_, value)
    assert serialized is not None
    result = converter.to_connect_header(TOPIC, HEADER, serialized)
    if value == "null":  # the text null is null, as in Kafka
        assert tuple(result) == (None, None)
        return
    assert tuple(result) == (schema_, value)
    again = converter.from_connect_header(TOPIC, HEADER, result.schema, result.value)
    assert again == serialized
    assert converter.to_connect_header(TOPIC, HEADER, again) == result


def test_null_is_a_null_header(converter: SimpleHeaderConverter) -> None:
    assert converter.from_connect_header(TOPIC, HEADER, STRING_SCHEMA, None) is None
    assert tuple(converter.to_connect_header(TOPIC, HEADER, None)) == (None, None)


@pytest.mark.parametrize(("text", "expected_schema", "expected"), [
    ('{"foo":"123","bar":"baz"}', map_of(STRING_SCHEMA, STRING_SCHEMA),
     {"foo": "123", "bar": "baz"}),
    ('{ "foo" : "123", \n"bar" : "baz" } ', map_of(STRING_SCHEMA, STRING_SCHEMA),
     {"foo": "123", "bar": "baz"}),
    (' { "foo" :  12345 , "bar" : 0,  "baz" : -4321 }  ', map_of(STRING_SCHEMA, INT16),
     {"foo": 12345, "bar": 0, "baz": -4321}),
    ('{"foo":1234567890,"bar":0,"baz":-987654321}', map_of(STRING_SCHEMA, INT32),
     {"foo": 1234567890, "bar": 0, "baz": -987654321}),
])
def test_strings_of_maps_parse_as_maps(converter: SimpleHeaderConverter, text: str,
                                       expected_schema: Schema, expected: Any) -> None:
    result = round_trip(converter, STRING_SCHEMA, text)
    assert tuple(result) == (expected_schema, expected)


def test_mixed_and_empty_collections_have_no_element_schema(
        converter: SimpleHeaderConverter) -> None:
    mixed_map = round_trip(converter, None, {"foo": "bar", "baz": 3456})
    assert mixed_map.schema == map_of(STRING_SCHEMA, None)
    assert mixed_map.value == {"foo": "bar", "baz": 3456}
    mixed_list = round_trip(converter, None, ["foo", 13344])
    assert tuple(mixed_list) == (array_of(None), ["foo", 13344])
    assert tuple(round_trip(converter, None, {})) == (map_of(None, None), {})
    assert tuple(round_trip(converter, None, [])) == (array_of(None), [])


# --- what a Java worker writes --------------------------------------------------------------

@pytest.mark.parametrize(("schema_", "value", "written"), [
    (None, 42, b"42"),
    (INT64, -7, b"-7"),
    (BOOLEAN, True, b"true"),
    (None, False, b"false"),
    (None, 1.5, b"1.5"),
    (None, 1e20, b"1.0E20"),  # Double.toString
    (FLOAT32, 0.10000000149011612, b"0.1"),  # Float.toString of 0.1f
    (schema(SchemaType.FLOAT64), 2, b"2.0"),  # an int where Java has a double
    (None, decimal.Decimal("12.50"), b"12.50"),
    (None, "héllo", "héllo".encode()),
    (None, b"\x00\xff", b"AP8="),  # byte arrays as Base64
    (None, {"a": 1, "b": [True, None], "c": 'q"uote'}, b'{"a":1,"b":[true,null],"c":"q\\"uote"}'),
    (None, [b"ab"], b'["YWI="]'),
    (None, dt.date(2024, 5, 1), b"2024-05-01"),
    (None, dt.time(12, 30, 5, 7000), b"12:30:05.007Z"),
    (None, dt.datetime(2024, 5, 1, 12, 30, tzinfo=dt.UTC), b"2024-05-01T12:30:00.000Z"),
    (TIMESTAMP, 1714566600000, b"2024-05-01T12:30:00.000Z"),  # a raw int of a logical type
    (DATE, 19844, b"2024-05-01"),
])
def test_writes_what_kafkas_simple_header_converter_writes(
        converter: SimpleHeaderConverter, schema_: Schema | None, value: Any,
        written: bytes) -> None:
    assert converter.from_connect_header(TOPIC, HEADER, schema_, value) == written


def test_a_struct_is_written_as_a_map_with_defaults_for_nulls(
        converter: SimpleHeaderConverter) -> None:
    point = struct_schema({"x": INT32, "label": schema(SchemaType.STRING, optional=True,
                                                       default="none")})
    written = converter.from_connect_header(TOPIC, HEADER, point, Struct(point, {"x": 3}))
    assert written == b'{"x":3,"label":"none"}'
    assert tuple(converter.to_connect_header(TOPIC, HEADER, written)) == (
        map_of(STRING_SCHEMA, None), {"x": 3, "label": "none"})


def test_values_of_types_connect_lacks_are_refused(converter: SimpleHeaderConverter) -> None:
    with pytest.raises(DataException, match="Failed to serialize unexpected value type"):
        converter.from_connect_header(TOPIC, HEADER, None, object())


def test_bytes_that_are_not_utf8_read_as_bytes(converter: SimpleHeaderConverter) -> None:
    result = converter.to_connect_header(TOPIC, HEADER, b"\xff\xfe")
    assert result.schema is not None and result.schema.type is SchemaType.BYTES
    assert result.value == b"\xff\xfe"


# --- ValuesTest: type inference -------------------------------------------------------------

@pytest.mark.parametrize(("text", "schema_", "value"), [
    ("", STRING_SCHEMA, ""),
    ("  ", STRING_SCHEMA, "  "),
    ("simple string", STRING_SCHEMA, "simple string"),
    (" \t true \n", BOOLEAN, True),
    ("false", BOOLEAN, False),
    ("42", INT8, 42),
    ("-129", INT16, -129),
    ("66000", INT32, 66000),
    ("3000000000", INT64, 3000000000),
    ("1.0", INT8, 1),
    ("300.0", INT16, 300),
    ("66000.0", INT32, 66000),
    ("1.1", FLOAT32, 1.100000023841858),
    ("66000.0008", FLOAT32, 66000.0),
    ("2019-08-23", DATE, dt.date(2019, 8, 23)),
    ("14:34:54.346Z", TIME, dt.time(14, 34, 54, 346000)),
    ("2019-08-23T14:34:54.346Z", TIMESTAMP,
     dt.datetime(2019, 8, 23, 14, 34, 54, 346000, tzinfo=dt.UTC)),
    ("[true, false]", array_of(BOOLEAN), [True, False]),
    ("[1, 300, 2.5]", array_of(FLOAT32), [1.0, 300.0, 2.5]),  # numbers widen
    ('["2019-08-23"]', array_of(DATE), [dt.date(2019, 8, 23)]),
    ("{true: false, false: true}", map_of(BOOLEAN, BOOLEAN), {True: False, False: True}),
    ("{3: null}", map_of(INT8, None), {3: None}),
    ("[null]", array_of(None), [None]),
    ("[[]]", array_of(array_of(None)), [[]]),
    ('{"a":[]}', map_of(STRING_SCHEMA, array_of(None)), {"a": []}),
])
def test_parse_string_infers_kafkas_schemas(text: str, schema_: Schema, value: Any) -> None:
    assert tuple(parse_string(text)) == (schema_, value)


@pytest.mark.parametrize("text", [
    "true}", "false]", "null=", "{foo: 3}", "{3: foo}", "[foo]", "{6:9 4:20}", "[0 1 2]",
    "{null: 3}", "[1, 2, 3,,,]", "[1, null]", "[null, 1]", "[1,", "{\"a\":1", "\uffff",
])
def test_what_is_not_quite_a_value_is_a_string(text: str) -> None:
    assert tuple(parse_string(text)) == (STRING_SCHEMA, text)


def test_null_and_big_numbers() -> None:
    assert tuple(parse_string("null")) == (None, None)
    assert tuple(parse_string("  null ")) == (None, None)
    assert tuple(parse_string(None)) == (None, None)
    huge = parse_string("99999999999999999999")  # beyond a long, no fraction: Decimal
    assert huge.schema.name == "org.apache.kafka.connect.data.Decimal"
    assert huge.schema.parameters == {"scale": "0"}
    assert huge.value == decimal.Decimal("99999999999999999999")
    assert parse_string("1e400").schema.parameters == {"scale": "-400"}
    # A huge exponent is not expanded into an integer (that would take forever).
    assert parse_string("1e999999999").value == decimal.Decimal("1e999999999")


def test_convert_to_string_escapes_embedded_strings_only() -> None:
    assert convert_to_string(None, 'three"blind\\"mice') == 'three"blind\\"mice'
    assert convert_to_string(None, ['three"blind\\"mice']) == '["three\\"blind\\\\\\"mice"]'
    assert convert_to_string(None, None) is None


# --- helpers the runtime uses -----------------------------------------------------------

def test_encode_and_decode_headers_with_the_default_and_another_converter() -> None:
    headers = ConnectHeaders().add_int("n", 42).add("m", {"a": [1, 2]}).add("none", None)
    encoded = encode_headers(headers, None, TOPIC)
    assert encoded == [("n", b"42"), ("m", b'{"a":[1,2]}'), ("none", None)]
    decoded = decode_headers(encoded, SimpleHeaderConverter(), TOPIC)
    assert list(decoded) == [Header("n", INT8, 42),
                             Header("m", map_of(STRING_SCHEMA, array_of(INT8)), {"a": [1, 2]}),
                             Header("none", None, None)]
    assert encode_headers([("old", "pair")]) == [("old", b"pair")]
    json = JsonConverter()
    json.configure({"schemas.enable": "false"}, False)
    assert encode_headers(headers, json, TOPIC)[1] == ("m", b'{"a":[1,2]}')
    assert [h.value for h in decode_headers([("x", b"[1]")], json, TOPIC)] == [[1]]


def test_a_converter_failure_names_the_header() -> None:
    with pytest.raises(DataException, match="header 'bad' on topic 't'"):
        encode_headers([Header("bad", None, object())], None, "t")


def test_registered_as_a_header_converter_only() -> None:
    registry = builtin_registry()
    desc = registry.resolve("org.apache.kafka.connect.storage.SimpleHeaderConverter",
                            PluginType.HEADER_CONVERTER)
    assert desc.plugin_class is SimpleHeaderConverter
    assert registry.resolve("SimpleHeaderConverter", PluginType.HEADER_CONVERTER) is desc
    assert [d.type for d in registry.plugins()
            if d.class_name.endswith(".SimpleHeaderConverter")] == [PluginType.HEADER_CONVERTER]

