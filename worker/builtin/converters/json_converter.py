"""Kafka's ``org.apache.kafka.connect.json.JsonConverter``, in Python.

Writes and reads the ``{"schema": ..., "payload": ...}`` envelope exactly as Kafka does
(see ``worker.builtin.converters.json_schema`` for the schema format), so either runtime
reads topics the other wrote.
"""

from __future__ import annotations

import base64
import decimal
import json
import re
import uuid
from collections.abc import Mapping
from typing import Any

import msgspec

from worker.api import (
    ConfigDef,
    Converter,
    DataException,
    Importance,
    Schema,
    SchemaAndValue,
    SchemaType,
    Struct,
    Type,
    Width,
)
from worker.api.config_def import at_least, one_of
from worker.api.logical import (
    DECIMAL_NAME,
    TIME_BASED,
    decimal_from_bytes,
    decimal_to_bytes,
    from_logical,
    to_logical,
)
from worker.builtin.converters.json_schema import (
    b64decode,
    decimals_to_floats,
    json_type_name,
    schema_from_json,
    schema_to_json,
)

SCHEMAS_ENABLE_CONFIG = "schemas.enable"
SCHEMAS_CACHE_SIZE_CONFIG = "schemas.cache.size"
DECIMAL_FORMAT_CONFIG = "decimal.format"
REPLACE_NULL_WITH_DEFAULT_CONFIG = "replace.null.with.default"

JSON_CONFIG_DEF = (
    ConfigDef()
    .define(SCHEMAS_ENABLE_CONFIG, Type.BOOLEAN, True, Importance.HIGH,
            "Include schemas within each of the serialized values and keys.",
            group="Schemas", order_in_group=0, width=Width.MEDIUM, display_name="Enable Schemas")
    .define(SCHEMAS_CACHE_SIZE_CONFIG, Type.INT, 1000, Importance.HIGH,
            "The maximum number of schemas that can be cached in this converter instance.",
            validator=at_least(0), group="Schemas", order_in_group=1, width=Width.MEDIUM,
            display_name="Schema Cache Size")
    .define(DECIMAL_FORMAT_CONFIG, Type.STRING, "BASE64", Importance.LOW,
            "Controls which format this converter will serialize decimals in. This value is "
            "case insensitive and can be either 'BASE64' (default) or 'NUMERIC'",
            validator=one_of("BASE64", "NUMERIC"), group="Serialization", order_in_group=0,
            width=Width.MEDIUM, display_name="Decimal Format")
    .define(REPLACE_NULL_WITH_DEFAULT_CONFIG, Type.BOOLEAN, True, Importance.LOW,
            "Whether to replace fields that have a default value and that are null to the "
            "default value. When set to true, the default value is used, otherwise null is "
            "used.", group="Serialization", order_in_group=1, width=Width.MEDIUM,
            display_name="Replace null with default")
)

ENVELOPE_ERROR = (
    'JsonConverter with schemas.enable requires "schema" and "payload" fields and may not '
    "contain additional fields. If you are trying to deserialize plain JSON data, set "
    "schemas.enable=false in your converter configuration.")

_INT_TYPES = frozenset((SchemaType.INT8, SchemaType.INT16, SchemaType.INT32, SchemaType.INT64))
_FLOAT_TYPES = frozenset((SchemaType.FLOAT32, SchemaType.FLOAT64))
_DECIMAL_MARK = DECIMAL_NAME.encode()
_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
# What _dumps does for a str, without its Python-level dispatch (the C encoder).
_dumps_str = json.encoder.encode_basestring


_NULL = SchemaAndValue(None, None)
# tuple.__new__ builds the NamedTuple in C; SchemaAndValue(...) runs a Python-level
# __new__, which costs as much as the rest of the decode on the sink's hot path.
_new_pair = tuple.__new__
_decode = msgspec.json.Decoder().decode


def _parse(data: Any) -> Any:
    """``json.loads(data)``, read by msgspec where it can (3–10× faster per message, the
    sink's hot path). msgspec yields the same values for what it accepts, integers of any
    size included; what it rejects and ``json.loads`` may still read (``NaN``, ``1e400``,
    a lone surrogate, other encodings) or reject with its own message (a BOM, malformed
    input) goes through ``json.loads``, so results and errors are ``json.loads``'s.

    ``DecodeError`` includes ``ValidationError`` (a number out of range); msgspec before
    0.22 raises ``UnicodeDecodeError`` (a ``ValueError``) for bytes that are not UTF-8."""
    try:
        return _decode(data)
    except (msgspec.DecodeError, ValueError):
        return json.loads(data)


class JsonConverter(Converter):
    """JSON with Kafka's optional ``{"schema": ..., "payload": ...}`` envelope.

    ``schemas.enable`` (default true) writes and requires the envelope; with it off, plain
    JSON is written and read schemaless (objects become dicts, integers int, others float).
    BYTES are base64 strings. A None value with no schema is a tombstone (None bytes).
    """

    def __init__(self) -> None:
        self._schemas_enabled = True
        self._cache_size = 1000
        self._numeric_decimals = False
        self._replace_null = True
        # id(schema) -> (schema, JSON form). Schemas hold dicts, so they are not hashable;
        # keeping the schema in the entry keeps its id from being reused.
        self._schema_cache: dict[int, tuple[Schema, dict[str, Any]]] = {}
        # id(schema) -> (schema, envelope prefix) for plain STRING schemas (the fast path).
        self._envelope_cache: dict[int, tuple[Schema | None, str]] = {}
        # NUMERIC decimals are written as placeholder strings, swapped for the exact
        # number text after encoding (json cannot emit a Decimal as a number itself).
        self._numeric_token = f"\ue000{uuid.uuid4().hex}:"
        self._numeric_values: list[decimal.Decimal] = []

    def config(self) -> ConfigDef:
        return JSON_CONFIG_DEF

    def configure(self, configs: Mapping[str, Any], is_key: bool) -> None:
        parsed = JSON_CONFIG_DEF.parse(configs)
        self._schemas_enabled = parsed[SCHEMAS_ENABLE_CONFIG]
        self._cache_size = parsed[SCHEMAS_CACHE_SIZE_CONFIG]
        self._numeric_decimals = parsed[DECIMAL_FORMAT_CONFIG].upper() == "NUMERIC"
        self._replace_null = parsed[REPLACE_NULL_WITH_DEFAULT_CONFIG]
        self._schema_cache.clear()
        self._envelope_cache.clear()

    # Kafka's JsonConverter is also a HeaderConverter: headers convert like values.
    def from_connect_header(self, topic: str, header_key: str, schema: Schema | None,
                            value: Any) -> bytes | None:
        return self.from_connect_data(topic, schema, value)

    def to_connect_header(self, topic: str, header_key: str, value: bytes | None
                          ) -> SchemaAndValue:
        return self.to_connect_data(topic, value)

    # -- Connect -> bytes ----------------------------------------------------------------

    def from_connect_data(self, topic: str, schema: Schema | None, value: Any) -> bytes | None:
        if schema is None and value is None:
            return None
        if type(value) is str and (schema is None or (schema.type is SchemaType.STRING
                                                      and schema.name is None)):
            # A line of text, the common case: no walk over the value, and with schemas on
            # the envelope's schema part is text cached per schema (same bytes as below).
            if not self._schemas_enabled:
                return _dumps_str(value).encode("utf-8")
            return (self._envelope_prefix(schema) + _dumps_str(value) + "}").encode("utf-8")
        try:
            payload = self._to_json(schema, value)
            if self._schemas_enabled:
                payload = {"schema": self.as_json_schema(schema), "payload": payload}
            text = _dumps(payload)
        except (TypeError, ValueError, RecursionError) as exc:
            raise DataException("Converting Kafka Connect data to byte[] failed due to "
                                f"serialization error of topic {topic}: {exc}") from exc
        finally:
            numbers = self._numeric_values
            if numbers:
                self._numeric_values = []
        if numbers:
            text = self._insert_numbers(text, numbers)
        return text.encode("utf-8")

    def _envelope_prefix(self, schema: Schema | None) -> str:
        """``{"schema":<schema>,"payload":`` for a plain STRING schema (or None), cached."""
        cached = self._envelope_cache.get(id(schema))
        if cached is not None and cached[0] is schema:
            return cached[1]
        prefix = '{"schema":' + _dumps(self.as_json_schema(schema)) + ',"payload":'
        if len(self._envelope_cache) >= max(self._cache_size, 1):
            self._envelope_cache.clear()
        self._envelope_cache[id(schema)] = (schema, prefix)
        return prefix

    def as_json_schema(self, schema: Schema | None) -> dict[str, Any] | None:
        """The envelope's ``schema`` member for ``schema`` (cached)."""
        if schema is None:
            return None
        cached = self._schema_cache.get(id(schema))
        if cached is not None and cached[0] is schema:
            return cached[1]
        pending_numbers = len(self._numeric_values)
        node = schema_to_json(schema, self._to_json)
        if len(self._numeric_values) != pending_numbers:
            return node  # holds NUMERIC placeholders that are only valid for this message
        if len(self._schema_cache) >= self._cache_size:
            self._schema_cache.clear()
        if self._cache_size:
            self._schema_cache[id(schema)] = (schema, node)
        return node

    def _to_json(self, schema: Schema | None, value: Any) -> Any:
        if schema is None:
            return self._schemaless_to_json(value)
        if value is None:
            if schema.default is not None and self._replace_null:
                return self._to_json(schema, schema.default)
            if schema.optional:
                return None
            raise DataException("Conversion error: null value for field that is required and "
                                "has no default value")
        if schema.name is not None:
            if schema.name == DECIMAL_NAME:
                return self._decimal_to_json(schema, value)
            if schema.name in TIME_BASED:
                return from_logical(schema, value)
        type_ = schema.type
        kind = type(value)
        if type_ is SchemaType.STRING:
            if isinstance(value, str):
                return value
        elif type_ in _INT_TYPES:
            if isinstance(value, int) and kind is not bool:
                return value
        elif type_ in _FLOAT_TYPES:
            if isinstance(value, float | int) and kind is not bool:
                return float(value)
        elif type_ is SchemaType.BOOLEAN:
            if kind is bool:
                return value
        elif type_ is SchemaType.BYTES:
            if isinstance(value, bytes | bytearray | memoryview):
                return base64.b64encode(value).decode("ascii")
        elif type_ is SchemaType.ARRAY:
            if isinstance(value, list | tuple):
                return [self._to_json(schema.value_schema, item) for item in value]
        elif type_ is SchemaType.MAP:
            if isinstance(value, Mapping):
                return self._map_to_json(schema, value)
        elif type_ is SchemaType.STRUCT and isinstance(value, Struct):
            if value.schema is not schema and value.schema != schema:
                raise DataException("Mismatching schema.")
            return {f.name: self._to_json(f.schema, value.values.get(f.name))
                    for f in schema.fields}
        raise DataException(f"Invalid type for {type_.name}: {kind.__name__}")

    def _map_to_json(self, schema: Schema, value: Mapping[Any, Any]) -> Any:
        key_schema, value_schema = schema.key_schema, schema.value_schema
        if key_schema is not None and key_schema.type is SchemaType.STRING:
            return {str(self._to_json(key_schema, k)): self._to_json(value_schema, v)
                    for k, v in value.items()}
        # Non-string keys: Kafka writes an array of [key, value] pairs.
        return [[self._to_json(key_schema, k), self._to_json(value_schema, v)]
                for k, v in value.items()]

    def _schemaless_to_json(self, value: Any) -> Any:
        kind = type(value)
        if kind is str or kind is int or kind is float or kind is bool or value is None:
            return value
        if kind is dict or isinstance(value, Mapping):
            convert = self._schemaless_to_json
            if all(type(k) is str for k in value):
                return {k: convert(v) for k, v in value.items()}
            return [[convert(k), convert(v)] for k, v in value.items()]
        if kind is list or kind is tuple:
            return [self._schemaless_to_json(item) for item in value]
        if isinstance(value, bytes | bytearray | memoryview):
            return base64.b64encode(value).decode("ascii")
        if isinstance(value, Struct):
            return self._to_json(value.schema, value)
        if isinstance(value, str | int | float):  # subclasses, e.g. enums
            return value
        raise DataException(f"Python type {kind.__name__} does not have corresponding "
                            "schema type.")

    def _decimal_to_json(self, schema: Schema, value: Any) -> Any:
        if not self._numeric_decimals:
            return base64.b64encode(decimal_to_bytes(schema, value)).decode("ascii")
        if not isinstance(value, decimal.Decimal) or not value.is_finite():
            raise DataException(f"Invalid type for Decimal, expected a finite Decimal but was "
                                f"{value!r}")
        self._numeric_values.append(value)
        return f"{self._numeric_token}{len(self._numeric_values) - 1}"

    def _insert_numbers(self, text: str, numbers: list[decimal.Decimal]) -> str:
        pattern = re.compile('"' + re.escape(self._numeric_token) + r'(\d+)"')
        return pattern.sub(lambda m: str(numbers[int(m.group(1))]), text)

    # -- bytes -> Connect ----------------------------------------------------------------

    def to_connect_data(self, topic: str, data: bytes | None) -> SchemaAndValue:
        if data is None:  # a tombstone
            return _NULL
        # Kafka parses floats as BigDecimal so NUMERIC decimals keep every digit. Parsing all
        # floats as Decimal is slow, so only messages that mention the Decimal type do.
        exact = self._schemas_enabled and isinstance(data, bytes | bytearray) \
            and _DECIMAL_MARK in data
        try:
            node = json.loads(data, parse_float=decimal.Decimal) if exact else _parse(data)
        except (ValueError, TypeError) as exc:
            raise DataException("Converting byte[] to Kafka Connect data failed due to "
                                f"serialization error of topic {topic}: {exc}") from exc
        if not self._schemas_enabled:
            # Schemaless: json.loads already yields Connect's schemaless values.
            return _new_pair(SchemaAndValue, (None, node))
        if not isinstance(node, dict) or len(node) != 2 or "schema" not in node \
                or "payload" not in node:
            raise DataException(ENVELOPE_ERROR)
        schema = self.as_connect_schema(node["schema"])
        if schema is None:
            payload = node["payload"]
            return SchemaAndValue(None, decimals_to_floats(payload) if exact else payload)
        return SchemaAndValue(schema, self._to_connect(schema, node["payload"]))

    def as_connect_schema(self, node: Any) -> Schema | None:
        """Parse the envelope's ``schema`` member."""
        return schema_from_json(node, self._to_connect)

    def _to_connect(self, schema: Schema | None, node: Any) -> Any:
        if schema is None:
            return node
        if node is None:
            if schema.default is not None and self._replace_null:
                return schema.default
            if schema.optional:
                return None
            raise DataException(f"Invalid null value for required {schema.type.name} field")
        if schema.name is not None:
            if schema.name == DECIMAL_NAME:
                return self._decimal_to_connect(schema, node)
            if schema.name in TIME_BASED:
                return to_logical(schema, node)
        type_ = schema.type
        kind = type(node)
        if type_ in _INT_TYPES:
            if kind is int:
                return node
        elif type_ is SchemaType.STRING:
            if kind is str:
                return node
        elif type_ in _FLOAT_TYPES:
            if kind is float or kind is int or kind is decimal.Decimal:
                return float(node)
        elif type_ is SchemaType.BOOLEAN:
            if kind is bool:
                return node
        elif type_ is SchemaType.BYTES:
            if kind is str:
                return b64decode(node)
        elif type_ is SchemaType.ARRAY:
            if kind is list:
                return [self._to_connect(schema.value_schema, item) for item in node]
        elif type_ is SchemaType.MAP:
            return self._map_to_connect(schema, node)
        elif type_ is SchemaType.STRUCT:
            if kind is not dict:
                raise DataException(f"Structs should be encoded as JSON objects, but found "
                                    f"{json_type_name(node)}")
            return Struct(schema, {f.name: self._to_connect(f.schema, node.get(f.name))
                                   for f in schema.fields})
        raise DataException(f"Invalid JSON {json_type_name(node)} for {type_.name} value")

    def _map_to_connect(self, schema: Schema, node: Any) -> dict[Any, Any]:
        key_schema, value_schema = schema.key_schema, schema.value_schema
        if key_schema is None or key_schema.type is SchemaType.STRING:
            if type(node) is not dict:
                raise DataException("Maps with string fields should be encoded as JSON "
                                    f"objects, but found {json_type_name(node)}")
            return {k: self._to_connect(value_schema, v) for k, v in node.items()}
        if type(node) is not list:
            raise DataException("Maps with non-string fields should be encoded as JSON array "
                                f"of tuples, but found {json_type_name(node)}")
        result: dict[Any, Any] = {}
        for entry in node:
            if type(entry) is not list or len(entry) != 2:
                raise DataException(f"Found invalid map entry instead of array tuple: {entry!r}")
            try:
                result[self._to_connect(key_schema, entry[0])] = self._to_connect(
                    value_schema, entry[1])
            except TypeError as exc:  # an unhashable (list/dict) key
                raise DataException(f"Invalid map key {entry[0]!r}: {exc}") from exc
        return result

    def _decimal_to_connect(self, schema: Schema, node: Any) -> decimal.Decimal:
        if isinstance(node, decimal.Decimal):
            return node
        if isinstance(node, int | float) and not isinstance(node, bool):
            return decimal.Decimal(repr(node)) if isinstance(node, float) \
                else decimal.Decimal(node)
        if isinstance(node, str):
            return decimal_from_bytes(schema, b64decode(node))
        raise DataException("Invalid type for Decimal, underlying representation should be "
                            f"numeric or bytes but was {json_type_name(node)}")
