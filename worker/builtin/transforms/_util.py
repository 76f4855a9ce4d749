"""Helpers shared by the field SMTs (Kafka's ``Requirements`` and ``SchemaUtil``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from worker.api import ConfigException, DataException, Schema, SchemaType, Struct, Transformation
from worker.api.data import Field
from worker.api.records import ConnectRecord
from worker.api.transforms import R

_SCHEMA_CACHE_SIZE = 16

#: Java's width of each integer schema type.
INT_BITS = {SchemaType.INT8: 8, SchemaType.INT16: 16, SchemaType.INT32: 32,
            SchemaType.INT64: 64}


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def require_map(value: Any, purpose: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise DataException(f"Only Map objects supported in absence of schema for [{purpose}], "
                            f"found: {_type_name(value)}")
    return value


def require_struct(value: Any, purpose: str) -> Struct:
    if not isinstance(value, Struct):
        raise DataException(f"Only Struct objects supported for [{purpose}], found: "
                            f"{_type_name(value)}")
    return value


def struct_like(schema: Schema, fields: list[tuple[str, Schema]]) -> Schema:
    """A struct schema with ``schema``'s name, version, doc and parameters (as Kafka's
    ``SchemaUtil.copySchemaBasics``: optionality is not copied) and the given fields."""
    return Schema(SchemaType.STRUCT, name=schema.name, version=schema.version, doc=schema.doc,
                  parameters=schema.parameters,
                  fields=tuple(Field(name, i, s) for i, (name, s) in enumerate(fields)))


def field_value(struct: Struct, field: Field, replace_null_with_default: bool) -> Any:
    """A field's value; a null one is the field's default when ``replace_null_with_default``
    (Kafka's ``Struct.get(field)`` vs ``getWithoutDefault``)."""
    value = struct.values.get(field.name)
    if value is None and replace_null_with_default:
        return field.schema.default
    return value


def schema_type_of(value: Any) -> SchemaType | None:
    """The Connect type of a schemaless value (Kafka's ``ConnectSchema.schemaType``);
    None for a Python type with no Connect equivalent (Decimal, datetime, ...)."""
    if isinstance(value, bool):
        return SchemaType.BOOLEAN
    if isinstance(value, int):
        return SchemaType.INT64
    if isinstance(value, float):
        return SchemaType.FLOAT64
    if isinstance(value, str):
        return SchemaType.STRING
    if isinstance(value, bytes | bytearray | memoryview):
        return SchemaType.BYTES
    if isinstance(value, list | tuple):
        return SchemaType.ARRAY
    if isinstance(value, Mapping):
        return SchemaType.MAP
    if isinstance(value, Struct):
        return SchemaType.STRUCT
    return None


# --- validators with Kafka's messages ---------------------------------------------------

def non_empty_list(name: str, value: Any) -> None:
    """Kafka's ``NonEmptyListValidator``."""
    if not value:
        raise ConfigException(name, value, "Empty list")


def must_be_non_empty(name: str, value: Any) -> None:
    """Kafka's ``ConfigDef.NonEmptyString``."""
    if value == "":
        raise ConfigException(name, value, "String must be non-empty")


def one_of_ignoring_case(*allowed: str) -> Callable[[str, Any], None]:
    """Kafka's ``ConfigDef.CaseInsensitiveValidString``."""
    lowered = {a.lower() for a in allowed}

    def check(name: str, value: Any) -> None:
        if str(value).lower() not in lowered:
            raise ConfigException(name, value, "String must be one of (case insensitive): "
                                               + ", ".join(allowed))
    return check


REPLACE_NULL_WITH_DEFAULT_DOC = (
    "Whether to replace fields that have a default value and that are null to the default "
    "value. When set to true, the default value is used, otherwise null is used.")


class SchemaCache:
    """A small identity cache of derived schemas (Schema holds dicts: not hashable)."""

    def __init__(self) -> None:
        self._entries: dict[int, tuple[Schema, Schema]] = {}

    def get(self, schema: Schema, build: Callable[[Schema], Schema]) -> Schema:
        entry = self._entries.get(id(schema))
        if entry is not None and entry[0] is schema:
            return entry[1]
        derived = build(schema)
        if len(self._entries) >= _SCHEMA_CACHE_SIZE:
            self._entries.clear()
        self._entries[id(schema)] = (schema, derived)
        return derived


class KeyOrValueTransformation(Transformation):
    """Operates on the record key (``_KEY = True``) or value, like Kafka's ``$Key/$Value``."""

    _KEY = False

    def _schema(self, record: ConnectRecord) -> Schema | None:
        return record.key_schema if self._KEY else record.value_schema

    def _value(self, record: ConnectRecord) -> Any:
        return record.key if self._KEY else record.value

    def _new_record(self, record: R, schema: Schema | None, value: Any) -> R:
        if self._KEY:
            return record.new_record(key_schema=schema, key=value)  # type: ignore[return-value]
        return record.new_record(value_schema=schema, value=value)  # type: ignore[return-value]
