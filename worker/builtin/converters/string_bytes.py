"""Built-in converters: StringConverter and ByteArrayConverter (JsonConverter:
``worker.builtin.converters.json_converter``).

They behave like Kafka's ``org.apache.kafka.connect.storage.StringConverter`` and
``...converters.ByteArrayConverter``, so topics written by either runtime read the same.
Each also works as a header converter (``from_connect_header`` / ``to_connect_header``), as
its Java counterpart does.
"""

from __future__ import annotations

import codecs
from collections.abc import Mapping
from typing import Any

from worker.api import (
    ConfigDef,
    ConfigException,
    Converter,
    DataException,
    Importance,
    Schema,
    SchemaAndValue,
    SchemaType,
    Type,
    Width,
)
from worker.api.data import OPTIONAL_BYTES_SCHEMA, OPTIONAL_STRING_SCHEMA
from worker.builtin.converters.json_converter import _new_pair

_NULL_STRING = SchemaAndValue(OPTIONAL_STRING_SCHEMA, None)

__all__ = ["ByteArrayConverter", "StringConverter"]


class _HeaderConverterMixin:
    """Kafka's converters double as HeaderConverters: headers convert like values."""

    def from_connect_header(self, topic: str, header_key: str, schema: Schema | None,
                            value: Any) -> bytes | None:
        return self.from_connect_data(topic, schema, value)  # type: ignore[attr-defined]

    def to_connect_header(self, topic: str, header_key: str, value: bytes | None
                          ) -> SchemaAndValue:
        return self.to_connect_data(topic, value)  # type: ignore[attr-defined]


# --- StringConverter --------------------------------------------------------------------

ENCODING_CONFIG = "converter.encoding"

STRING_CONFIG_DEF = ConfigDef().define(
    ENCODING_CONFIG, Type.STRING, "UTF8", Importance.HIGH,
    "The name of the Java character set to use for encoding strings as byte arrays.",
    group="Converter", width=Width.MEDIUM, display_name="Character encoding")


class StringConverter(_HeaderConverterMixin, Converter):
    """Strings as encoded bytes; other values via ``str()``; reads OPTIONAL_STRING values."""

    def __init__(self) -> None:
        self._encoding = "utf-8"

    def config(self) -> ConfigDef:
        return STRING_CONFIG_DEF

    def configure(self, configs: Mapping[str, Any], is_key: bool) -> None:
        name = STRING_CONFIG_DEF.parse(configs)[ENCODING_CONFIG]
        try:
            # The codec's canonical name ("utf-8") takes str.encode's fastest path.
            self._encoding = codecs.lookup(name).name
        except LookupError:
            raise ConfigException(ENCODING_CONFIG, name, "Unsupported encoding") from None

    def from_connect_data(self, topic: str, schema: Schema | None, value: Any) -> bytes | None:
        if value is None:
            return None
        try:
            if type(value) is str:
                return value.encode(self._encoding)
            return str(value).encode(self._encoding)
        except UnicodeError as exc:
            raise DataException(f"Failed to serialize to a string on topic {topic}: {exc}"
                                ) from exc

    def to_connect_data(self, topic: str, data: bytes | None) -> SchemaAndValue:
        if data is None:
            return _NULL_STRING
        try:
            text = (data if type(data) is bytes else bytes(data)).decode(self._encoding)
            return _new_pair(SchemaAndValue, (OPTIONAL_STRING_SCHEMA, text))
        except UnicodeError as exc:
            raise DataException(f"Failed to deserialize string on topic {topic}: {exc}"
                                ) from exc


# --- ByteArrayConverter -----------------------------------------------------------------

class ByteArrayConverter(_HeaderConverterMixin, Converter):
    """Passes raw bytes through (bytearray/memoryview become bytes); reads OPTIONAL_BYTES."""

    def from_connect_data(self, topic: str, schema: Schema | None, value: Any) -> bytes | None:
        if schema is not None and schema.type is not SchemaType.BYTES:
            raise DataException(f"Invalid schema type for ByteArrayConverter: "
                                f"{schema.type.name}")
        if value is None or type(value) is bytes:
            return value
        if isinstance(value, bytes | bytearray | memoryview):
            return bytes(value)
        raise DataException(f"ByteArrayConverter is not compatible with objects of type "
                            f"{type(value).__name__}")

    def to_connect_data(self, topic: str, data: bytes | None) -> SchemaAndValue:
        return SchemaAndValue(OPTIONAL_BYTES_SCHEMA, data)
