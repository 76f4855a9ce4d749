"""worker.builtin.converters.numbers: Kafka's primitive converters, byte for byte.

The expected bytes are those of Kafka's serializers (``LongSerializer`` & co.: big-endian
two's complement, IEEE 754, one byte per boolean), so Java clients read what these write.
"""

from __future__ import annotations

import math

import pytest

from worker.api import DataException, SchemaType
from worker.api.data import STRING_SCHEMA
from worker.builtin.converters import numbers as nc
from worker.plugins.registry import PluginType, builtin_registry

CASES = [  # converter, value, Kafka's bytes, schema type read back
    (nc.LongConverter, -2, b"\xff\xff\xff\xff\xff\xff\xff\xfe", SchemaType.INT64),
    (nc.LongConverter, 2**63 - 1, b"\x7f" + b"\xff" * 7, SchemaType.INT64),
    (nc.IntegerConverter, 258, b"\x00\x00\x01\x02", SchemaType.INT32),
    (nc.ShortConverter, -32768, b"\x80\x00", SchemaType.INT16),
    (nc.FloatConverter, 1.5, b"\x3f\xc0\x00\x00", SchemaType.FLOAT32),
    (nc.DoubleConverter, -0.25, b"\xbf\xd0\x00\x00\x00\x00\x00\x00", SchemaType.FLOAT64),
    (nc.BooleanConverter, True, b"\x01", SchemaType.BOOLEAN),
    (nc.BooleanConverter, False, b"\x00", SchemaType.BOOLEAN),
]


@pytest.mark.parametrize(("cls", "value", "raw", "schema_type"), CASES)
def test_round_trip_with_kafkas_bytes(cls: type, value: object, raw: bytes,
                                      schema_type: SchemaType) -> None:
    converter = cls()
    converter.configure({}, False)

    assert converter.from_connect_data("t", None, value) == raw
    schema, read = converter.to_connect_data("t", raw)
    assert read == value and schema.type is schema_type and schema.optional
    # As header converters too.
    assert converter.from_connect_header("t", "h", None, value) == raw
    assert converter.to_connect_header("t", "h", raw).value == value


@pytest.mark.parametrize("cls", [c for c, *_ in CASES])
def test_null_stays_null(cls: type) -> None:
    converter = cls()

    assert converter.from_connect_data("t", None, None) is None
    schema, value = converter.to_connect_data("t", None)
    assert value is None and schema.optional


def test_int_is_accepted_by_float_converters_and_nan_survives() -> None:
    assert nc.DoubleConverter().from_connect_data("t", None, 3) == b"\x40\x08" + b"\x00" * 6
    raw = nc.DoubleConverter().from_connect_data("t", None, math.nan)
    assert raw is not None and math.isnan(nc.DoubleConverter().to_connect_data("t", raw).value)


@pytest.mark.parametrize(("cls", "value", "message"), [
    (nc.LongConverter, "12", "Failed to serialize to long (was str)"),
    (nc.LongConverter, 1.0, "Failed to serialize to long (was float)"),
    (nc.IntegerConverter, True, "Failed to serialize to integer (was bool)"),
    (nc.ShortConverter, 40000, "Failed to serialize to short: 40000 is out of its range"),
    (nc.IntegerConverter, 2**31, "out of its range"),
    (nc.FloatConverter, 1e40, "Failed to serialize to float"),
    (nc.BooleanConverter, 1, "BooleanConverter is not compatible with objects of type int"),
])
def test_values_of_the_wrong_type_or_range(cls: type, value: object, message: str) -> None:
    with pytest.raises(DataException, match=message.replace("(", r"\(").replace(")", r"\)")):
        cls().from_connect_data("t", None, value)


@pytest.mark.parametrize(("cls", "raw", "message"), [
    (nc.LongConverter, b"\x00" * 4, "Failed to deserialize long: Size of data received by "
                                    "LongDeserializer is not 8"),
    (nc.ShortConverter, b"\x00", "Size of data received by ShortDeserializer is not 2"),
    (nc.BooleanConverter, b"\x00\x01", "BooleanDeserializer is not 1"),
    (nc.BooleanConverter, b"\x02", "Unexpected byte received by BooleanDeserializer: 2"),
])
def test_bytes_of_the_wrong_size_or_content(cls: type, raw: bytes, message: str) -> None:
    with pytest.raises(DataException, match=message):
        cls().to_connect_data("t", raw)


def test_boolean_converter_checks_the_schema() -> None:
    with pytest.raises(DataException, match="Invalid schema type for BooleanConverter: STRING"):
        nc.BooleanConverter().from_connect_data("t", STRING_SCHEMA, True)


@pytest.mark.parametrize("name", ["Long", "Integer", "Short", "Float", "Double", "Boolean"])
def test_resolvable_by_kafkas_class_name_as_converter_and_header_converter(name: str) -> None:
    registry = builtin_registry()
    for kind in (PluginType.CONVERTER, PluginType.HEADER_CONVERTER):
        plugin = registry.new_instance(f"org.apache.kafka.connect.converters.{name}Converter",
                                       kind)
        assert type(plugin).__name__ == f"{name}Converter"
