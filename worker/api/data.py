"""Connect's data model: optional schemas for record keys and values.

Python connectors may ignore schemas entirely (schema ``None`` = schemaless, like
Kafka's ``schemas.enable=false``). Where a schema is given, it follows Kafka Connect's
types so ``JsonConverter`` can write and read the ``{"schema", "payload"}`` envelope.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, NamedTuple


class SchemaType(StrEnum):
    INT8 = "int8"
    INT16 = "int16"
    INT32 = "int32"
    INT64 = "int64"
    FLOAT32 = "float32"
    FLOAT64 = "float64"
    BOOLEAN = "boolean"
    STRING = "string"
    BYTES = "bytes"
    ARRAY = "array"
    MAP = "map"
    STRUCT = "struct"


@dataclass(frozen=True)
class Field:
    name: str
    index: int
    schema: Schema


@dataclass(frozen=True)
class Schema:
    """A Connect schema. Build structs with :func:`struct_schema`."""

    type: SchemaType
    optional: bool = False
    default: Any = None
    name: str | None = None
    version: int | None = None
    doc: str | None = None
    parameters: dict[str, str] | None = None
    fields: tuple[Field, ...] = ()
    key_schema: Schema | None = None
    value_schema: Schema | None = None

    def field(self, name: str) -> Field | None:
        return next((f for f in self.fields if f.name == name), None)


def struct_schema(
    fields: Mapping[str, Schema] | str | None = None,
    /,
    optional: bool = False,
    *,
    name: str | None = None,
    **field_kwargs: Schema,
) -> Schema:
    """A STRUCT schema with its fields in the given order.

    Pass the fields as a mapping (any field name works, ``name`` and ``optional``
    included)::

        USER = struct_schema({"id": INT32_SCHEMA, "name": STRING_SCHEMA},
                             name="com.example.User")

    The keyword form ``struct_schema("com.example.Point", x=INT32_SCHEMA, y=INT32_SCHEMA)``
    (schema name first) keeps working for fields whose names are Python identifiers other
    than ``name`` and ``optional``.

    Raises TypeError if the name is given twice, if fields come both as a mapping and as
    keywords, or if a field's schema is not a :class:`Schema`.
    """
    if isinstance(fields, str):  # the original signature: the schema name comes first
        if name is not None:
            raise TypeError("struct_schema() got the schema name both positionally and as "
                            "name=")
        name, fields = fields, None
    if fields is not None and field_kwargs:
        raise TypeError("struct_schema() takes its fields either as a mapping or as keyword "
                        "arguments, not both")
    items = list((fields if fields is not None else field_kwargs).items())
    for field_name, schema in items:
        if not isinstance(schema, Schema):
            raise TypeError(f"struct_schema(): field {field_name!r} needs a Schema, got "
                            f"{type(schema).__name__}")
    return Schema(SchemaType.STRUCT, optional=optional, name=name,
                  fields=tuple(Field(n, i, s) for i, (n, s) in enumerate(items)))


def primitive(type_: SchemaType, optional: bool = False) -> Schema:
    return Schema(type_, optional=optional)


STRING_SCHEMA = Schema(SchemaType.STRING)
OPTIONAL_STRING_SCHEMA = Schema(SchemaType.STRING, optional=True)
BYTES_SCHEMA = Schema(SchemaType.BYTES)
OPTIONAL_BYTES_SCHEMA = Schema(SchemaType.BYTES, optional=True)
INT64_SCHEMA = Schema(SchemaType.INT64)
INT32_SCHEMA = Schema(SchemaType.INT32)
BOOLEAN_SCHEMA = Schema(SchemaType.BOOLEAN)
FLOAT64_SCHEMA = Schema(SchemaType.FLOAT64)
INT8_SCHEMA = Schema(SchemaType.INT8)
INT16_SCHEMA = Schema(SchemaType.INT16)
FLOAT32_SCHEMA = Schema(SchemaType.FLOAT32)


@dataclass
class Struct:
    """A value of a STRUCT schema; fields are read and written by name."""

    schema: Schema
    values: dict[str, Any] = field(default_factory=dict)

    def get(self, name: str) -> Any:
        return self.values.get(name)

    def put(self, name: str, value: Any) -> Struct:
        if self.schema.field(name) is None:
            raise KeyError(f"{name} is not a valid field name")
        self.values[name] = value
        return self


class SchemaAndValue(NamedTuple):
    """A converted key or value and its schema (None = schemaless).

    A NamedTuple rather than a dataclass: converters create two per record on the sink
    path, and tuple construction is several times cheaper.
    """

    schema: Schema | None
    value: Any


NULL = SchemaAndValue(None, None)
