"""Kafka's ``SetSchemaMetadata$Key/$Value`` and ``ValueToKey`` SMTs.

``SetSchemaMetadataKey/Value`` set the name and/or version of the key or value schema; a
Struct value is re-created with the new schema (its null fields replaced by their defaults
when ``replace.null.with.default``), other values are kept. As in Kafka, giving a Decimal,
Date, Time or Timestamp schema another name makes it a plain BYTES/INT32/INT64 schema whose
value no longer matches it.

``ValueToKey`` makes the key a map (schemaless) or struct of the named value fields.
``field.syntax.version=V2`` reads the names as dotted paths (KIP-821); the key then has the
same nesting (``parent.child`` becomes ``{"parent": {"child": ...}}``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from worker.api import (
    NO_DEFAULT,
    ConfigDef,
    ConfigException,
    DataException,
    Importance,
    Schema,
    SchemaType,
    Struct,
    Transformation,
    Type,
)
from worker.api.data import Field
from worker.api.transforms import R
from worker.builtin.transforms._field_path import (
    Leaf,
    Trie,
    build_trie,
    field_syntax_version,
    parse_path,
    with_field_syntax_version,
)
from worker.builtin.transforms._util import (
    REPLACE_NULL_WITH_DEFAULT_DOC,
    KeyOrValueTransformation,
    SchemaCache,
    field_value,
    non_empty_list,
    require_map,
    require_struct,
)

# --- SetSchemaMetadata ------------------------------------------------------------------

SET_SCHEMA_METADATA_CONFIG_DEF = (
    ConfigDef()
    .define("schema.name", Type.STRING, None, Importance.HIGH, "Schema name to set.")
    .define("schema.version", Type.INT, None, Importance.HIGH, "Schema version to set.")
    .define("replace.null.with.default", Type.BOOLEAN, True, Importance.MEDIUM,
            REPLACE_NULL_WITH_DEFAULT_DOC)
)


class _SetSchemaMetadata(KeyOrValueTransformation):
    def config(self) -> ConfigDef:
        return SET_SCHEMA_METADATA_CONFIG_DEF

    def configure(self, configs: Mapping[str, Any]) -> None:
        parsed = SET_SCHEMA_METADATA_CONFIG_DEF.parse(configs)
        self._name: str | None = parsed["schema.name"]
        self._version: int | None = parsed["schema.version"]
        self._replace_null = parsed["replace.null.with.default"]
        if self._name is None and self._version is None:
            raise ConfigException("schema.name", None,
                                  "Neither schema name nor version configured")
        self._schemas = SchemaCache()

    def apply(self, record: R) -> R | None:
        value, schema = self._value(record), self._schema(record)
        if value is None and schema is None:
            return record
        if schema is None:
            raise DataException("Schema required for [updating schema metadata]")
        updated = self._schemas.get(schema, lambda s: dataclasses.replace(
            s, name=self._name if self._name is not None else s.name,
            version=self._version if self._version is not None else s.version))
        if isinstance(value, Struct):
            value = Struct(updated, {f.name: field_value(value, f, self._replace_null)
                                     for f in updated.fields})
        return self._new_record(record, updated, value)


class SetSchemaMetadataKey(_SetSchemaMetadata):
    """``org.apache.kafka.connect.transforms.SetSchemaMetadata$Key``."""

    _KEY = True


class SetSchemaMetadataValue(_SetSchemaMetadata):
    """``org.apache.kafka.connect.transforms.SetSchemaMetadata$Value``."""


# --- ValueToKey -------------------------------------------------------------------------

VALUE_TO_KEY_CONFIG_DEF = with_field_syntax_version(
    ConfigDef()
    .define("fields", Type.LIST, NO_DEFAULT, Importance.HIGH,
            "Field names on the record value to extract as the record key.",
            validator=non_empty_list)
    .define("replace.null.with.default", Type.BOOLEAN, True, Importance.MEDIUM,
            REPLACE_NULL_WITH_DEFAULT_DOC)
)
_VALUE_TO_KEY_PURPOSE = "copying fields from value to key"


class ValueToKey(Transformation):
    """``org.apache.kafka.connect.transforms.ValueToKey``."""

    def config(self) -> ConfigDef:
        return VALUE_TO_KEY_CONFIG_DEF

    def configure(self, configs: Mapping[str, Any]) -> None:
        parsed = VALUE_TO_KEY_CONFIG_DEF.parse(configs)
        version = field_syntax_version(parsed)
        # Each leaf keeps its path's text, for error messages.
        self._trie = build_trie((parse_path(f, version, "fields"), f) for f in parsed["fields"])
        self._replace_null = parsed["replace.null.with.default"]
        self._schemas = SchemaCache()

    def apply(self, record: R) -> R | None:
        if record.value_schema is None:
            value = require_map(record.value, _VALUE_TO_KEY_PURPOSE)
            key = self._key_map(value, self._trie)
            return record.new_record(key_schema=None, key=key)  # type: ignore[return-value]
        struct = require_struct(record.value, _VALUE_TO_KEY_PURPOSE)
        key_schema = self._schemas.get(struct.schema, lambda s: self._key_schema(s, self._trie))
        return record.new_record(  # type: ignore[return-value]
            key_schema=key_schema, key=self._key_struct(struct, key_schema, self._trie),
            value_schema=struct.schema)

    def _key_map(self, value: Mapping[str, Any], trie: Trie) -> dict[str, Any]:
        key: dict[str, Any] = {}
        for name, node in trie.items():
            if isinstance(node, Leaf):
                key[name] = value.get(name)
            else:
                child = value.get(name)
                nested = None if child is None else require_map(child, _VALUE_TO_KEY_PURPOSE)
                key[name] = self._key_map(nested or {}, node)
        return key

    def _key_schema(self, schema: Schema, trie: Trie) -> Schema:
        fields: list[Field] = []
        for name, node in trie.items():
            field = schema.field(name) if schema.type is SchemaType.STRUCT else None
            if field is None:
                raise DataException(f"Field does not exist: {self._first_path(node)}")
            if isinstance(node, Leaf):
                field_schema = field.schema
            else:
                nested = self._key_schema(field.schema, node)
                field_schema = dataclasses.replace(nested, optional=field.schema.optional)
            fields.append(Field(name, len(fields), field_schema))
        return Schema(SchemaType.STRUCT, fields=tuple(fields))

    def _key_struct(self, struct: Struct, key_schema: Schema, trie: Trie) -> Struct:
        values: dict[str, Any] = {}
        for key_field in key_schema.fields:
            field = struct.schema.field(key_field.name)
            assert field is not None
            item = field_value(struct, field, self._replace_null)
            node = trie[key_field.name]
            if not isinstance(node, Leaf) and item is not None:
                item = self._key_struct(require_struct(item, _VALUE_TO_KEY_PURPOSE),
                                        key_field.schema, node)
            values[key_field.name] = item
        return Struct(key_schema, values)

    @staticmethod
    def _first_path(node: Any) -> str:
        while not isinstance(node, Leaf):
            node = next(iter(node.values()))
        text: str = node.payload
        return text
