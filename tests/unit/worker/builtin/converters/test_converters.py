"""JsonConverter (envelope format as Kafka writes it), StringConverter, ByteArrayConverter."""

from __future__ import annotations

import datetime as dt
import decimal
import json
from typing import Any

import pytest

from worker.api import ConfigException, DataException, Schema, SchemaAndValue, SchemaType, Struct
from worker.api.data import (
    INT32_SCHEMA,
    OPTIONAL_BYTES_SCHEMA,
    OPTIONAL_STRING_SCHEMA,
    STRING_SCHEMA,
    Field,
    struct_schema,
)
from worker.api.logical import DATE_NAME, DECIMAL_NAME, TIME_NAME, TIMESTAMP_NAME
from worker.builtin.converters.json_converter import JsonConverter
from worker.builtin.converters.string_bytes import ByteArrayConverter, StringConverter


def json_converter(**configs: str) -> JsonConverter:
    converter = JsonConverter()
    converter.configure(configs, False)
    return converter


def s(type_: SchemaType, optional: bool = False, **kwargs: Any) -> Schema:
    return Schema(type_, optional=optional, **kwargs)


USER = struct_schema({"id": INT32_SCHEMA, "name": OPTIONAL_STRING_SCHEMA},
                     name="com.example.User")

# (schema, value, JSON exactly as Kafka's JsonConverter writes it)
ENVELOPES = [
    (s(SchemaType.INT8), 12, '{"schema":{"type":"int8","optional":false},"payload":12}'),
    (s(SchemaType.INT16), -300, '{"schema":{"type":"int16","optional":false},"payload":-300}'),
    (s(SchemaType.INT32), 70000, '{"schema":{"type":"int32","optional":false},"payload":70000}'),
    (s(SchemaType.INT64), 2**40,
     '{"schema":{"type":"int64","optional":false},"payload":1099511627776}'),
    (s(SchemaType.FLOAT32), 1.5, '{"schema":{"type":"float","optional":false},"payload":1.5}'),
    (s(SchemaType.FLOAT64), 2.25,
     '{"schema":{"type":"double","optional":false},"payload":2.25}'),
    (s(SchemaType.BOOLEAN), True,
     '{"schema":{"type":"boolean","optional":false},"payload":true}'),
    (s(SchemaType.STRING), "héllo",
     '{"schema":{"type":"string","optional":false},"payload":"héllo"}'),
    (s(SchemaType.BYTES), b"\x01\x02\x03",
     '{"schema":{"type":"bytes","optional":false},"payload":"AQID"}'),
    (s(SchemaType.ARRAY, value_schema=INT32_SCHEMA), [1, 2],
     '{"schema":{"type":"array","items":{"type":"int32","optional":false},"optional":false},'
     '"payload":[1,2]}'),
    (s(SchemaType.MAP, key_schema=STRING_SCHEMA, value_schema=INT32_SCHEMA), {"a": 1},
     '{"schema":{"type":"map","keys":{"type":"string","optional":false},'
     '"values":{"type":"int32","optional":false},"optional":false},"payload":{"a":1}}'),
    (s(SchemaType.MAP, key_schema=INT32_SCHEMA, value_schema=STRING_SCHEMA), {1: "a", 2: "b"},
     '{"schema":{"type":"map","keys":{"type":"int32","optional":false},'
     '"values":{"type":"string","optional":false},"optional":false},'
     '"payload":[[1,"a"],[2,"b"]]}'),
    (USER, Struct(USER, {"id": 7, "name": "ann"}),
     '{"schema":{"type":"struct","fields":[{"type":"int32","optional":false,"field":"id"},'
     '{"type":"string","optional":true,"field":"name"}],"optional":false,'
     '"name":"com.example.User"},"payload":{"id":7,"name":"ann"}}'),
    (s(SchemaType.STRING, True, name="n", version=3, doc="d", parameters={"p": "v"},
       default="dflt"), "x",
     '{"schema":{"type":"string","optional":true,"name":"n","version":3,"doc":"d",'
     '"parameters":{"p":"v"},"default":"dflt"},"payload":"x"}'),
    (s(SchemaType.BYTES, name=DECIMAL_NAME, version=1, parameters={"scale": "2"}),
     decimal.Decimal("12.34"),
     '{"schema":{"type":"bytes","optional":false,"name":"org.apache.kafka.connect.data.Decimal",'
     '"version":1,"parameters":{"scale":"2"}},"payload":"BNI="}'),
    (s(SchemaType.INT32, name=DATE_NAME, version=1), dt.date(1970, 1, 11),
     '{"schema":{"type":"int32","optional":false,"name":"org.apache.kafka.connect.data.Date",'
     '"version":1},"payload":10}'),
    (s(SchemaType.INT32, name=TIME_NAME, version=1), dt.time(1, 0, 0, 5000),
     '{"schema":{"type":"int32","optional":false,"name":"org.apache.kafka.connect.data.Time",'
     '"version":1},"payload":3600005}'),
    (s(SchemaType.INT64, name=TIMESTAMP_NAME, version=1),
     dt.datetime(2020, 1, 1, tzinfo=dt.UTC),
     '{"schema":{"type":"int64","optional":false,'
     '"name":"org.apache.kafka.connect.data.Timestamp","version":1},"payload":1577836800000}'),
]
IDS = [e[2][:40] for e in ENVELOPES]


@pytest.mark.parametrize("schema, value, expected", ENVELOPES, ids=IDS)
def test_envelope_matches_kafka(schema: Schema, value: Any, expected: str) -> None:
    assert json_converter().from_connect_data("t", schema, value) == expected.encode()


@pytest.mark.parametrize("schema, value, expected", ENVELOPES, ids=IDS)
def test_round_trip_every_type(schema: Schema, value: Any, expected: str) -> None:
    converter = json_converter()
    result = converter.to_connect_data("t", converter.from_connect_data("t", schema, value))
    assert result == SchemaAndValue(schema, value)


def test_reads_kafka_json_with_whitespace() -> None:
    data = b'{ "schema": {"type": "struct", "optional": false, "fields": [\n' \
           b'  {"field": "id", "type": "int32", "optional": false},\n' \
           b'  {"field": "name", "type": "string", "optional": true}],\n' \
           b'  "name": "com.example.User"},\n "payload": {"id": 7, "name": "ann"} }'
    assert json_converter().to_connect_data("t", data) == SchemaAndValue(
        USER, Struct(USER, {"id": 7, "name": "ann"}))


def test_negative_decimal_uses_minimal_twos_complement() -> None:
    schema = s(SchemaType.BYTES, name=DECIMAL_NAME, parameters={"scale": "0"})
    data = json_converter().from_connect_data("t", schema, decimal.Decimal(-128))
    assert json.loads(data)["payload"] == "gA=="  # 0x80


def test_numeric_decimal_format_writes_an_exact_number() -> None:
    schema = s(SchemaType.BYTES, name=DECIMAL_NAME, parameters={"scale": "20"})
    value = decimal.Decimal("0.12345678901234567890")
    converter = json_converter(**{"decimal.format": "NUMERIC"})
    data = converter.from_connect_data("t", schema, value)
    assert data.endswith(b'"payload":0.12345678901234567890}')
    assert converter.to_connect_data("t", data).value == value


def test_floats_stay_floats_in_messages_with_decimals() -> None:
    # Such messages are parsed exactly (Decimal); FLOAT fields must still come back as float.
    amount = s(SchemaType.BYTES, name=DECIMAL_NAME, parameters={"scale": "1"})
    schema = Schema(SchemaType.STRUCT, fields=(
        Field("amount", 0, amount), Field("ratio", 1, s(SchemaType.FLOAT64))))
    converter = json_converter(**{"decimal.format": "NUMERIC"})
    value = Struct(schema, {"amount": decimal.Decimal("2.5"), "ratio": 0.25})
    result = converter.to_connect_data("t", converter.from_connect_data("t", schema, value))
    assert result.value == value
    assert type(result.value.get("ratio")) is float
    schemaless = b'{"schema":null,"payload":{"n":"org.apache.kafka.connect.data.Decimal",' \
                 b'"f":[0.5]}}'
    payload = converter.to_connect_data("t", schemaless).value
    assert type(payload["f"][0]) is float


def test_schemas_disabled_writes_and_reads_plain_json() -> None:
    converter = json_converter(**{"schemas.enable": "false"})
    value = {"a": 1, "b": [True, None, 1.5], "c": {"d": "e"}}
    data = converter.from_connect_data("t", None, value)
    assert data == b'{"a":1,"b":[true,null,1.5],"c":{"d":"e"}}'
    assert converter.to_connect_data("t", data) == SchemaAndValue(None, value)


@pytest.mark.parametrize("data", [
    b'"abc"', b'{"a": [1, 2.5, null, true]}', b' 1', b'1 ', b'\xef\xbb\xbf{"a":1}',
    '"x"'.encode("utf-16"), '"\u00e9"'.encode("utf-32"), b'"caf\xc3\xa9"', b"NaN",
    b"-Infinity", b"12345678901234567890123", bytearray(b'{"k":"v"}'),
    # Where orjson and json.loads could part ways: integers at and past 64 bits, floats
    # at their limits, escapes, a lone surrogate, duplicate keys (order and value),
    # whitespace, deep nesting.
    b"18446744073709551615", b"-9223372036854775808", b"-9223372036854775809",
    b"1e400", b"-0", b"-0.0", b"5e-324", b"0.1", b"1E16", b'"\\ud800"',
    b'"\\u0000\\n\\"\\/"', b'"\\ud83d\\ude00"', b'{"b":1,"a":2,"b":3}',
    b'\t{ "a" :\r\n[ ] }\n', b"[" * 200 + b"]" * 200, memoryview(b'[1,"x"]'),
])
def test_schemaless_reads_exactly_what_json_loads_reads(data: bytes) -> None:
    # The converter reads with orjson; what orjson rejects (NaN, big integers, 1e400, a
    # lone surrogate, other encodings, a BOM) goes through json.loads: same values either
    # way, dict key order included.
    converter = json_converter(**{"schemas.enable": "false"})
    value = converter.to_connect_data("t", data).value
    expected = json.loads(bytes(data))
    assert repr(value) == repr(expected)  # NaN == NaN, -0.0 is not 0.0, keys in order
    assert type(value) is type(expected)


@pytest.mark.parametrize("data", [b"", b"nan", b'{"a":', b'"\xff"', b"1 2", b"[1,]",
                                  b"{'a': 1}", b'"\x01"', b"01"])
def test_schemaless_malformed_json_is_a_data_exception(data: bytes) -> None:
    with pytest.raises(DataException, match="serialization error of topic t"):
        json_converter(**{"schemas.enable": "false"}).to_connect_data("t", data)


def test_schemaless_bytes_and_non_string_keys() -> None:
    converter = json_converter(**{"schemas.enable": "false"})
    assert converter.from_connect_data("t", None, {1: b"\x00"}) == b'[[1,"AA=="]]'


def test_schemaless_value_with_schemas_enabled_has_null_schema() -> None:
    data = json_converter().from_connect_data("t", None, {"a": 1})
    assert data == b'{"schema":null,"payload":{"a":1}}'
    assert json_converter().to_connect_data("t", data) == SchemaAndValue(None, {"a": 1})


@pytest.mark.parametrize("enabled", ["true", "false"])
def test_null_is_a_tombstone(enabled: str) -> None:
    converter = json_converter(**{"schemas.enable": enabled})
    assert converter.from_connect_data("t", None, None) is None
    assert converter.to_connect_data("t", None) == SchemaAndValue(None, None)


def test_optional_null_and_defaults() -> None:
    optional = s(SchemaType.INT32, True)
    assert json_converter().from_connect_data("t", optional, None) == \
        b'{"schema":{"type":"int32","optional":true},"payload":null}'
    with_default = s(SchemaType.INT32, True, default=5)
    assert json.loads(json_converter().from_connect_data("t", with_default, None))[
        "payload"] == 5
    keep_null = json_converter(**{"replace.null.with.default": "false"})
    assert json.loads(keep_null.from_connect_data("t", with_default, None))["payload"] is None


def test_required_null_is_rejected() -> None:
    with pytest.raises(DataException, match="null value for field that is required"):
        json_converter().from_connect_data("t", INT32_SCHEMA, None)
    data = b'{"schema":{"type":"int32","optional":false},"payload":null}'
    with pytest.raises(DataException, match="Invalid null value for required INT32 field"):
        json_converter().to_connect_data("t", data)


def test_malformed_json_names_the_topic() -> None:
    with pytest.raises(DataException, match="orders"):
        json_converter().to_connect_data("orders", b"{not json")


@pytest.mark.parametrize("data", [b'{"a":1}', b'{"schema":null,"payload":1,"extra":2}', b"[1]"])
def test_missing_envelope_is_rejected_with_kafkas_message(data: bytes) -> None:
    with pytest.raises(DataException) as info:
        json_converter().to_connect_data("t", data)
    assert str(info.value) == (
        'JsonConverter with schemas.enable requires "schema" and "payload" fields and may not '
        "contain additional fields. If you are trying to deserialize plain JSON data, set "
        "schemas.enable=false in your converter configuration.")


@pytest.mark.parametrize("schema, value", [
    (INT32_SCHEMA, "1"),
    (STRING_SCHEMA, 1),
    (s(SchemaType.BOOLEAN), 1),
    (s(SchemaType.BYTES), "text"),
    (USER, {"id": 1}),
])
def test_value_of_the_wrong_type_is_rejected(schema: Schema, value: Any) -> None:
    with pytest.raises(DataException, match="Invalid type"):
        json_converter().from_connect_data("t", schema, value)


def test_struct_with_another_schema_is_rejected() -> None:
    other = struct_schema("other", id=INT32_SCHEMA)
    with pytest.raises(DataException, match="Mismatching schema"):
        json_converter().from_connect_data("t", USER, Struct(other, {"id": 1}))


@pytest.mark.parametrize("data, message", [
    (b'{"schema":{"type":"int32","optional":false},"payload":"x"}', "INT32"),
    (b'{"schema":{"optional":false},"payload":1}', "Schema must contain 'type' field"),
    (b'{"schema":{"type":"nope"},"payload":1}', "Unknown schema type: nope"),
    (b'{"schema":{"type":"bytes"},"payload":"***"}', "Invalid bytes field"),
    (b'{"schema":{"type":"struct","fields":[{"type":"int32"}]},"payload":{}}',
     "field name not specified"),
])
def test_bad_envelope_contents_are_rejected(data: bytes, message: str) -> None:
    with pytest.raises(DataException, match=message):
        json_converter().to_connect_data("t", data)


def test_json_header_methods_convert_like_values() -> None:
    converter = json_converter()
    data = converter.from_connect_header("t", "h", STRING_SCHEMA, "v")
    assert data == b'{"schema":{"type":"string","optional":false},"payload":"v"}'
    assert converter.to_connect_header("t", "h", data) == SchemaAndValue(STRING_SCHEMA, "v")


# --- StringConverter --------------------------------------------------------------------

def string_converter(**configs: str) -> StringConverter:
    converter = StringConverter()
    converter.configure(configs, False)
    return converter


def test_string_converter_round_trip() -> None:
    converter = string_converter()
    assert converter.from_connect_data("t", STRING_SCHEMA, "héllo") == "héllo".encode()
    assert converter.to_connect_data("t", "héllo".encode()) == SchemaAndValue(
        OPTIONAL_STRING_SCHEMA, "héllo")


def test_string_converter_uses_str_for_other_values_and_keeps_none() -> None:
    converter = string_converter()
    assert converter.from_connect_data("t", None, 42) == b"42"
    assert converter.from_connect_data("t", None, None) is None
    assert converter.to_connect_data("t", None) == SchemaAndValue(OPTIONAL_STRING_SCHEMA, None)


def test_string_converter_encoding() -> None:
    converter = string_converter(**{"converter.encoding": "ISO-8859-1"})
    assert converter.from_connect_data("t", None, "é") == b"\xe9"
    assert converter.to_connect_data("t", b"\xe9").value == "é"
    with pytest.raises(DataException):
        converter.from_connect_data("t", None, "€")  # not in Latin-1


def test_string_converter_errors() -> None:
    with pytest.raises(ConfigException) as info:
        string_converter(**{"converter.encoding": "no-such-charset"})
    assert info.value.name == "converter.encoding"
    with pytest.raises(DataException, match="topic t"):
        string_converter().to_connect_data("t", b"\xff")


def test_string_header_methods() -> None:
    converter = string_converter()
    assert converter.from_connect_header("t", "h", None, "v") == b"v"
    assert converter.to_connect_header("t", "h", b"v").value == "v"


# --- ByteArrayConverter -----------------------------------------------------------------

def test_byte_array_converter_passes_bytes_through() -> None:
    converter = ByteArrayConverter()
    data = b"\x00\x01"
    assert converter.from_connect_data("t", None, data) is data
    assert converter.from_connect_data("t", OPTIONAL_BYTES_SCHEMA, bytearray(b"ab")) == b"ab"
    assert converter.from_connect_data("t", None, memoryview(b"cd")) == b"cd"
    assert converter.from_connect_data("t", None, None) is None
    assert converter.to_connect_data("t", data) == SchemaAndValue(OPTIONAL_BYTES_SCHEMA, data)


def test_byte_array_converter_rejects_other_values() -> None:
    converter = ByteArrayConverter()
    with pytest.raises(DataException, match="not compatible with objects of type str"):
        converter.from_connect_data("t", None, "text")
    with pytest.raises(DataException, match="Invalid schema type for ByteArrayConverter: STRING"):
        converter.from_connect_data("t", STRING_SCHEMA, b"x")
