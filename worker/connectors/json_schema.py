"""Kafka Connect's JSON schema format and logical types, shared by JsonConverter and SMTs.

A Connect schema is written as Kafka's ``JsonConverter`` writes it (key order included):
``type`` (``float``/``double`` for FLOAT32/FLOAT64), then ``items`` (array), ``keys`` and
``values`` (map) or ``fields`` (struct; each field's schema plus ``"field": name`` last), then
``optional``, ``name``, ``version``, ``doc``, ``parameters`` and ``default`` when set.

Logical types are recognised by schema name, with these Python values:
``Decimal`` (BYTES, ``scale`` parameter) ↔ ``decimal.Decimal``; ``Date`` (INT32 days) ↔
``datetime.date``; ``Time`` (INT32 ms of the day) ↔ ``datetime.time``; ``Timestamp``
(INT64 ms since the epoch) ↔ ``datetime.datetime`` (UTC). Raw ints are accepted on write.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import decimal
from typing import Any

from worker.api import DataException
from worker.api.data import Field, Schema, SchemaType

DECIMAL_NAME = "org.apache.kafka.connect.data.Decimal"
DATE_NAME = "org.apache.kafka.connect.data.Date"
TIME_NAME = "org.apache.kafka.connect.data.Time"
TIMESTAMP_NAME = "org.apache.kafka.connect.data.Timestamp"
SCALE_PARAMETER = "scale"

TIMESTAMP_SCHEMA = Schema(SchemaType.INT64, name=TIMESTAMP_NAME, version=1)
OPTIONAL_TIMESTAMP_SCHEMA = Schema(SchemaType.INT64, optional=True, name=TIMESTAMP_NAME,
                                   version=1)

_TYPE_NAMES = {t: t.value for t in SchemaType} | {SchemaType.FLOAT32: "float",
                                                  SchemaType.FLOAT64: "double"}
_TYPES_BY_NAME = {name: t for t, name in _TYPE_NAMES.items()}
_EPOCH_DATE = dt.date(1970, 1, 1)
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_MS_PER_DAY = 86_400_000
TIME_BASED = frozenset((DATE_NAME, TIME_NAME, TIMESTAMP_NAME))


def schema_to_json(schema: Schema, default_to_json: Any) -> dict[str, Any]:
    """Kafka's JSON form of ``schema``; ``default_to_json(schema, value)`` renders defaults."""
    out: dict[str, Any] = {"type": _TYPE_NAMES[schema.type]}
    if schema.type is SchemaType.ARRAY:
        out["items"] = _child(schema.value_schema, default_to_json)
    elif schema.type is SchemaType.MAP:
        out["keys"] = _child(schema.key_schema, default_to_json)
        out["values"] = _child(schema.value_schema, default_to_json)
    elif schema.type is SchemaType.STRUCT:
        out["fields"] = [{**schema_to_json(f.schema, default_to_json), "field": f.name}
                         for f in schema.fields]
    out["optional"] = schema.optional
    if schema.name is not None:
        out["name"] = schema.name
    if schema.version is not None:
        out["version"] = schema.version
    if schema.doc is not None:
        out["doc"] = schema.doc
    if schema.parameters is not None:
        out["parameters"] = dict(schema.parameters)
    if schema.default is not None:
        out["default"] = default_to_json(schema, schema.default)
    return out


def _child(schema: Schema | None, default_to_json: Any) -> dict[str, Any] | None:
    return None if schema is None else schema_to_json(schema, default_to_json)


def schema_from_json(node: Any, default_to_connect: Any) -> Schema | None:
    """Parse Kafka's JSON schema form; ``default_to_connect(schema, node)`` parses defaults."""
    if node is None:
        return None
    if not isinstance(node, dict):
        raise DataException("Schema must be a JSON object or null")
    type_name = node.get("type")
    if not isinstance(type_name, str):
        raise DataException("Schema must contain 'type' field")
    type_ = _TYPES_BY_NAME.get(type_name)
    if type_ is None:
        raise DataException(f"Unknown schema type: {type_name}")
    key_schema = value_schema = None
    fields: tuple[Field, ...] = ()
    if type_ is SchemaType.ARRAY:
        if node.get("items") is None:
            raise DataException("Array schema did not specify the element type")
        value_schema = schema_from_json(node["items"], default_to_connect)
    elif type_ is SchemaType.MAP:
        if "keys" not in node:
            raise DataException("Map schema did not specify the key type")
        if "values" not in node:
            raise DataException("Map schema did not specify the value type")
        key_schema = schema_from_json(node["keys"], default_to_connect)
        value_schema = schema_from_json(node["values"], default_to_connect)
    elif type_ is SchemaType.STRUCT:
        raw_fields = node.get("fields")
        if not isinstance(raw_fields, list):
            raise DataException('Struct schema\'s "fields" argument is not an array.')
        parsed = []
        for index, raw in enumerate(raw_fields):
            name = raw.get("field") if isinstance(raw, dict) else None
            if not isinstance(name, str):
                raise DataException("Struct schema's field name not specified properly")
            field_schema = schema_from_json(raw, default_to_connect)
            assert field_schema is not None
            parsed.append(Field(name, index, field_schema))
        fields = tuple(parsed)
    parameters = node.get("parameters")
    if parameters is not None:
        if not isinstance(parameters, dict) or not all(isinstance(v, str)
                                                       for v in parameters.values()):
            raise DataException("Schema parameters must have string values.")
    version = node.get("version")
    name, doc = node.get("name"), node.get("doc")
    schema = Schema(type_, optional=node.get("optional") is True,
                    name=name if isinstance(name, str) else None,
                    version=version if isinstance(version, int) else None,
                    doc=doc if isinstance(doc, str) else None, parameters=parameters,
                    fields=fields, key_schema=key_schema, value_schema=value_schema)
    if node.get("default") is not None:
        default = default_to_connect(schema, node["default"])
        schema = Schema(type_, schema.optional, default, schema.name, schema.version,
                        schema.doc, parameters, fields, key_schema, value_schema)
    return schema


# --- logical types ----------------------------------------------------------------------

def decimal_to_bytes(schema: Schema, value: Any) -> bytes:
    """Kafka's Decimal: the unscaled value as big-endian two's complement (minimal length)."""
    if not isinstance(value, decimal.Decimal):
        raise DataException(f"Invalid type for Decimal, expected Decimal but was "
                            f"{type(value).__name__}")
    scale = _scale(schema)
    unscaled = int(value.scaleb(scale))
    if decimal.Decimal(unscaled).scaleb(-scale) != value:
        raise DataException("Decimal value has mismatching scale for given Decimal schema")
    # Java's BigInteger.toByteArray: bitLength excludes the sign bit, plus one sign byte.
    length = (unscaled if unscaled >= 0 else ~unscaled).bit_length() // 8 + 1
    return unscaled.to_bytes(length, "big", signed=True)


def decimal_from_bytes(schema: Schema, data: bytes) -> decimal.Decimal:
    return decimal.Decimal(int.from_bytes(data, "big", signed=True)).scaleb(-_scale(schema))


def _scale(schema: Schema) -> int:
    try:
        return int((schema.parameters or {})[SCALE_PARAMETER])
    except (KeyError, ValueError):
        raise DataException("Invalid Decimal schema: scale parameter not found.") from None


def logical_to_json(schema: Schema, value: Any) -> Any:
    """Date/Time/Timestamp values to their int form (ints pass through unchanged)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    name = schema.name
    if name == TIMESTAMP_NAME and isinstance(value, dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.UTC)
        delta = value - _EPOCH
        return delta.days * _MS_PER_DAY + delta.seconds * 1000 + delta.microseconds // 1000
    if name == DATE_NAME and isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        return (value - _EPOCH_DATE).days
    if name == TIME_NAME and isinstance(value, dt.time):
        return ((value.hour * 60 + value.minute) * 60 + value.second) * 1000 \
            + value.microsecond // 1000
    kind = name.rsplit(".", 1)[-1] if name else "logical type"
    raise DataException(f"Invalid type for {kind}: {type(value).__name__}")


def logical_from_json(schema: Schema, value: Any) -> Any:
    if not isinstance(value, int) or isinstance(value, bool):
        kind = schema.name.rsplit(".", 1)[-1] if schema.name else "logical type"
        raise DataException(f"Invalid type for {kind}, underlying representation should be "
                            f"integral but was {type(value).__name__}")
    if schema.name == TIMESTAMP_NAME:
        return _EPOCH + dt.timedelta(milliseconds=value)
    if schema.name == DATE_NAME:
        return _EPOCH_DATE + dt.timedelta(days=value)
    millis = value % _MS_PER_DAY
    return (dt.datetime.min + dt.timedelta(milliseconds=millis)).time()


# --- JSON value helpers -----------------------------------------------------------------

def decimals_to_floats(node: Any) -> Any:
    """Schemaless values hold floats, not the Decimals an exact parse produced."""
    if isinstance(node, decimal.Decimal):
        return float(node)
    if isinstance(node, list):
        return [decimals_to_floats(item) for item in node]
    if isinstance(node, dict):
        return {k: decimals_to_floats(v) for k, v in node.items()}
    return node


def b64decode(text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise DataException(f"Invalid bytes field: {exc}") from exc


def json_type_name(node: Any) -> str:
    names = {dict: "OBJECT", list: "ARRAY", str: "STRING", bool: "BOOLEAN", int: "NUMBER",
             float: "NUMBER", type(None): "NULL"}
    return names.get(type(node), type(node).__name__)
