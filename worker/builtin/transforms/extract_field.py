"""Kafka's ``org.apache.kafka.connect.transforms.ExtractField$Key/$Value``: replaces the key
or value with one of its fields (a dotted path with ``field.syntax.version=V2``, KIP-821).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from worker.api import (
    NO_DEFAULT,
    ConfigDef,
    DataException,
    Importance,
    Schema,
    SchemaType,
    Struct,
    Type,
)
from worker.api.config_def import non_empty_string
from worker.api.data import Field
from worker.api.transforms import R
from worker.builtin.transforms._field_path import (
    field_syntax_version,
    parse_path,
    with_field_syntax_version,
)
from worker.builtin.transforms._util import (
    REPLACE_NULL_WITH_DEFAULT_DOC,
    KeyOrValueTransformation,
    field_value,
    require_map,
    require_struct,
)

_EXTRACT_PURPOSE = "field extraction"

EXTRACT_FIELD_CONFIG_DEF = with_field_syntax_version(
    ConfigDef()
    .define("field", Type.STRING, NO_DEFAULT, Importance.MEDIUM, "Field name to extract.",
            validator=non_empty_string())
    .define("replace.null.with.default", Type.BOOLEAN, True, Importance.MEDIUM,
            REPLACE_NULL_WITH_DEFAULT_DOC))


class _ExtractField(KeyOrValueTransformation):
    """Kafka's ExtractField: ``field`` is a top-level name (``field.syntax.version=V1``)
    or a dotted path into nested maps and structs (``V2``, KIP-821)."""

    def config(self) -> ConfigDef:
        return EXTRACT_FIELD_CONFIG_DEF

    def configure(self, configs: Mapping[str, Any]) -> None:
        parsed = EXTRACT_FIELD_CONFIG_DEF.parse(configs)
        self._field = parsed["field"]
        self._path = parse_path(self._field, field_syntax_version(parsed), "field")
        self._replace_null = bool(parsed["replace.null.with.default"])

    def apply(self, record: R) -> R | None:
        schema, value = self._schema(record), self._value(record)
        if schema is None:
            mapping = None if value is None else require_map(value, _EXTRACT_PURPOSE)
            return self._new_record(record, None,
                                    None if mapping is None else self._from_map(mapping))
        if value is not None:
            require_struct(value, _EXTRACT_PURPOSE)
        fields = self._fields(schema)
        if fields is None:
            raise DataException(f"Unknown field: {self._field}")
        return self._new_record(record, fields[-1].schema,
                                None if value is None else self._from_struct(value, fields))

    def _from_map(self, mapping: Mapping[str, Any]) -> Any:
        current: Any = mapping
        for step in self._path:
            if not isinstance(current, Mapping):
                return None  # a step into something that is not a map: no value
            current = current.get(step)
        return current

    def _fields(self, schema: Schema) -> list[Field] | None:
        """The fields along the path, or None where a step is missing or not a struct."""
        fields: list[Field] = []
        for step in self._path:
            if schema.type is not SchemaType.STRUCT:
                return None
            field = schema.field(step)
            if field is None:
                return None
            fields.append(field)
            schema = field.schema
        return fields

    def _from_struct(self, struct: Struct, fields: list[Field]) -> Any:
        current: Any = struct
        for field in fields:
            if current is None:
                return None
            current = field_value(current, field, self._replace_null)
        return current


class ExtractFieldKey(_ExtractField):
    """``org.apache.kafka.connect.transforms.ExtractField$Key``."""

    _KEY = True


class ExtractFieldValue(_ExtractField):
    """``org.apache.kafka.connect.transforms.ExtractField$Value``."""
