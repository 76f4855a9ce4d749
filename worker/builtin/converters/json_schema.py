"""Kafka Connect's JSON schema format, shared by JsonConverter and SMTs.

A Connect schema is written as Kafka's ``JsonConverter`` writes it (key order included):
``type`` (``float``/``double`` for FLOAT32/FLOAT64), then ``items`` (array), ``keys`` and
``values`` (map) or ``fields`` (struct; each field's schema plus ``"field": name`` last), then
``optional``, ``name``, ``version``, ``doc``, ``parameters`` and ``default`` when set.

Logical types (Decimal, Date, Time, Timestamp) are those of ``worker.api.logical``.
"""

from __future__ import annotations

import base64
import binascii
import decimal
from typing import Any

from worker.api import DataException
from worker.api.data import Field, Schema, SchemaType

_TYPE_NAMES = {t: t.value for t in SchemaType} | {SchemaType.FLOAT32: "float",
                                                  SchemaType.FLOAT64: "double"}
_TYPES_BY_NAME = {name: t for t, name in _TYPE_NAMES.items()}


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
