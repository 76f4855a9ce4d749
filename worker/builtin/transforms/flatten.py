"""Kafka's ``Flatten$Key`` / ``Flatten$Value`` SMT (``FlattenKey`` / ``FlattenValue`` here).

Nested maps (schemaless) or structs are flattened into one level, each field named by its
path joined with ``delimiter`` (``{"a": {"b": 1}}`` -> ``{"a.b": 1}``); arrays and their
contents are kept as they are. With a schema, a flattened field is optional when it or any
struct above it is optional, and takes its default from its own schema or from the default
value of a struct above it. Maps inside a struct are not supported (as in Kafka).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from worker.api import ConfigDef, DataException, Importance, Schema, SchemaType, Struct, Type
from worker.api.transforms import R
from worker.builtin.transforms._util import (
    KeyOrValueTransformation,
    SchemaCache,
    require_map,
    require_struct,
    schema_type_of,
    struct_like,
)

FLATTEN_CONFIG_DEF = ConfigDef().define(
    "delimiter", Type.STRING, ".", Importance.MEDIUM,
    "Delimiter to insert between field names from the input record when generating field names "
    "for the output record")
_PURPOSE = "flattening"
_KEPT = frozenset((SchemaType.INT8, SchemaType.INT16, SchemaType.INT32, SchemaType.INT64,
                   SchemaType.FLOAT32, SchemaType.FLOAT64, SchemaType.BOOLEAN, SchemaType.STRING,
                   SchemaType.BYTES, SchemaType.ARRAY))


class _Flatten(KeyOrValueTransformation):
    def config(self) -> ConfigDef:
        return FLATTEN_CONFIG_DEF

    def configure(self, configs: Mapping[str, Any]) -> None:
        self._delimiter = FLATTEN_CONFIG_DEF.parse(configs)["delimiter"]
        self._schemas = SchemaCache()

    def _name(self, prefix: str, name: str) -> str:
        return f"{prefix}{self._delimiter}{name}" if prefix else name

    def apply(self, record: R) -> R | None:
        value = self._value(record)
        if value is None:
            return record
        schema = self._schema(record)
        if schema is None:
            flat: dict[str, Any] = {}
            self._flatten_map(require_map(value, _PURPOSE), "", flat)
            return self._new_record(record, None, flat)
        struct = require_struct(value, _PURPOSE)
        new_schema = self._schemas.get(schema, self._flat_schema)
        values: dict[str, Any] = {}
        self._flatten_struct(struct, "", values)
        return self._new_record(record, new_schema, Struct(new_schema, values))

    # --- schemaless -----------------------------------------------------------------------

    def _flatten_map(self, value: Mapping[str, Any], prefix: str, out: dict[str, Any]) -> None:
        for key, item in value.items():
            name = self._name(prefix, key)
            if item is None:
                out[name] = None
                continue
            kind = schema_type_of(item)
            if kind is None:
                raise DataException(f"Flatten transformation was passed a value of type "
                                    f"{type(item).__name__} which is not supported by "
                                    f"Connect's data API")
            if kind in _KEPT:
                out[name] = item
            elif kind is SchemaType.MAP:
                self._flatten_map(item, name, out)
            else:
                raise DataException(f"Flatten transformation does not support "
                                    f"{type(item).__name__} for record without schemas (for "
                                    f"field {name}).")

    # --- with a schema --------------------------------------------------------------------

    def _flat_schema(self, schema: Schema) -> Schema:
        fields: list[tuple[str, Schema]] = []
        self._flatten_schema(schema, "", schema.optional, schema.default, fields)
        return struct_like(schema, fields)

    def _flatten_schema(self, schema: Schema, prefix: str, optional: bool,
                        parent_default: Any, out: list[tuple[str, Schema]]) -> None:
        for field in schema.fields:
            name = self._name(prefix, field.name)
            field_schema = field.schema
            field_optional = optional or field_schema.optional
            default = field_schema.default
            if default is None and isinstance(parent_default, Struct):
                default = parent_default.get(field.name)
            if field_schema.type in _KEPT:
                out.append((name, dataclasses.replace(field_schema, optional=field_optional,
                                                      default=default)))
            elif field_schema.type is SchemaType.STRUCT:
                self._flatten_schema(field_schema, name, field_optional, default, out)
            else:
                raise DataException(f"Flatten transformation does not support "
                                    f"{field_schema.type.name} for record with schemas (for "
                                    f"field {name}).")

    def _flatten_struct(self, struct: Struct, prefix: str, out: dict[str, Any]) -> None:
        for field in struct.schema.fields:
            name = self._name(prefix, field.name)
            item = struct.values.get(field.name)
            if item is None:
                item = field.schema.default
            if field.schema.type is SchemaType.STRUCT:
                if item is not None:
                    self._flatten_struct(require_struct(item, _PURPOSE), name, out)
            elif field.schema.type in _KEPT:
                out[name] = item
            else:
                raise DataException(f"Flatten transformation does not support "
                                    f"{field.schema.type.name} for record with schemas (for "
                                    f"field {name}).")


class FlattenKey(_Flatten):
    """``org.apache.kafka.connect.transforms.Flatten$Key``."""

    _KEY = True


class FlattenValue(_Flatten):
    """``org.apache.kafka.connect.transforms.Flatten$Value``."""
