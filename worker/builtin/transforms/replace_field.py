"""Kafka's ``org.apache.kafka.connect.transforms.ReplaceField$Key/$Value``: excludes,
includes and renames fields of the key or value.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from worker.api import (
    ConfigDef,
    ConfigException,
    Importance,
    Struct,
    Type,
)
from worker.api.transforms import R
from worker.builtin.transforms._util import (
    REPLACE_NULL_WITH_DEFAULT_DOC,
    KeyOrValueTransformation,
    SchemaCache,
    require_map,
    require_struct,
    struct_like,
)


def _parse_renames(name: str, mappings: list[str]) -> dict[str, str]:
    renames: dict[str, str] = {}
    for mapping in mappings:
        parts = mapping.split(":")
        if len(parts) != 2:
            raise ConfigException(name, ",".join(mappings), f"Invalid rename mapping: {mapping}")
        renames[parts[0]] = parts[1]
    return renames


REPLACE_FIELD_CONFIG_DEF = (
    ConfigDef()
    .define("exclude", Type.LIST, "", Importance.MEDIUM,
            "Fields to exclude. This takes precedence over the fields to include.")
    .define("include", Type.LIST, "", Importance.MEDIUM,
            "Fields to include. If specified, only these fields will be used.")
    .define("renames", Type.LIST, "", Importance.MEDIUM,
            "Field rename mappings, e.g. foo:bar,abc:xyz.", validator=_parse_renames)
    .define("replace.null.with.default", Type.BOOLEAN, True, Importance.MEDIUM,
            REPLACE_NULL_WITH_DEFAULT_DOC)
)
_REPLACE_PURPOSE = "field replacement"


class _ReplaceField(KeyOrValueTransformation):
    def config(self) -> ConfigDef:
        return REPLACE_FIELD_CONFIG_DEF

    def configure(self, configs: Mapping[str, Any]) -> None:
        parsed = REPLACE_FIELD_CONFIG_DEF.parse(configs)
        self._exclude = frozenset(parsed["exclude"])
        self._include = frozenset(parsed["include"])
        self._renames = _parse_renames("renames", parsed["renames"])
        self._replace_null = parsed["replace.null.with.default"]
        self._schemas = SchemaCache()

    def _keep(self, name: str) -> bool:
        return name not in self._exclude and (not self._include or name in self._include)

    def apply(self, record: R) -> R | None:
        value = self._value(record)
        if value is None:
            return record
        schema = self._schema(record)
        renames = self._renames
        if schema is None:
            updated = {renames.get(k, k): v
                       for k, v in require_map(value, _REPLACE_PURPOSE).items() if self._keep(k)}
            return self._new_record(record, None, updated)
        struct = require_struct(value, _REPLACE_PURPOSE)
        new_schema = self._schemas.get(struct.schema, lambda s: struct_like(
            s, [(renames.get(f.name, f.name), f.schema) for f in s.fields if self._keep(f.name)]))
        values: dict[str, Any] = {}
        for field in struct.schema.fields:
            if self._keep(field.name):
                item = struct.values.get(field.name)
                if item is None and self._replace_null:
                    item = field.schema.default
                values[renames.get(field.name, field.name)] = item
        return self._new_record(record, new_schema, Struct(new_schema, values))


class ReplaceFieldKey(_ReplaceField):
    """``org.apache.kafka.connect.transforms.ReplaceField$Key``."""

    _KEY = True


class ReplaceFieldValue(_ReplaceField):
    """``org.apache.kafka.connect.transforms.ReplaceField$Value``."""
