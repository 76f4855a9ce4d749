"""Kafka's header SMTs: ``DropHeaders``, ``HeaderFrom$Key`` / ``HeaderFrom$Value``
(``HeaderFromKey`` / ``HeaderFromValue`` here) and ``InsertHeader``.

- ``DropHeaders`` removes every header whose key is in ``headers``.
- ``HeaderFrom`` copies (``operation=copy``) or moves (``move``: removed from the key/value
  and, with a schema, from its schema) the fields ``fields`` of a map (schemaless) or struct
  key/value into the headers ``headers``, pairwise; the header has the field's schema. A
  field missing from a map gives a null header. ``replace.null.with.default`` (default true)
  puts a struct field's default value in place of null, in the header and, with ``move``, in
  the fields that stay.
- ``InsertHeader`` adds the header ``header`` with ``value.literal`` parsed as
  SimpleHeaderConverter parses header text (``42`` is INT8 42, ``true`` a boolean,
  ``[1,2]`` an array, ``hello`` a string: ``worker.api.values.parse_string``).

Each returns a new record whose headers are a copy: the original record's stay as they were.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from worker.api import (
    NO_DEFAULT,
    ConfigDef,
    ConfigException,
    ConnectHeaders,
    DataException,
    Importance,
    Schema,
    Struct,
    Transformation,
    Type,
)
from worker.api.config_def import one_of
from worker.api.records import ConnectRecord
from worker.api.transforms import R
from worker.api.values import parse_string
from worker.builtin.transforms._util import (
    REPLACE_NULL_WITH_DEFAULT_DOC,
    KeyOrValueTransformation,
    SchemaCache,
    field_value,
    non_empty_list,
    require_map,
    require_struct,
    struct_like,
)

__all__ = ["DropHeaders", "HeaderFromKey", "HeaderFromValue", "InsertHeader"]


def _with_headers(record: R, headers: ConnectHeaders) -> R:
    return record.new_record(headers=headers)  # type: ignore[return-value]


def _copy_of_headers(record: ConnectRecord) -> ConnectHeaders:
    """A copy of the record's headers (reading ``headers`` of a record without any would
    give it an empty ConnectHeaders: not needed)."""
    return record.headers.duplicate() if record.has_headers() else ConnectHeaders()


# --- DropHeaders ------------------------------------------------------------------------

DROP_HEADERS_CONFIG_DEF = ConfigDef().define(
    "headers", Type.LIST, NO_DEFAULT, Importance.HIGH, "The name of the headers to be removed.",
    validator=non_empty_list)


class DropHeaders(Transformation):
    """``org.apache.kafka.connect.transforms.DropHeaders``: removes one or more headers from
    each record."""

    def config(self) -> ConfigDef:
        return DROP_HEADERS_CONFIG_DEF

    def configure(self, configs: Mapping[str, Any]) -> None:
        self._names = frozenset(DROP_HEADERS_CONFIG_DEF.parse(configs)["headers"])

    def apply(self, record: R) -> R | None:
        names = self._names
        kept = ConnectHeaders(h for h in record.headers if h.key not in names) \
            if record.has_headers() else ConnectHeaders()
        return _with_headers(record, kept)


# --- HeaderFrom -------------------------------------------------------------------------

FIELDS_CONFIG = "fields"
HEADERS_CONFIG = "headers"
OPERATION_CONFIG = "operation"
REPLACE_NULL_CONFIG = "replace.null.with.default"
MOVE, COPY = "move", "copy"

HEADER_FROM_CONFIG_DEF = (
    ConfigDef()
    .define(FIELDS_CONFIG, Type.LIST, NO_DEFAULT, Importance.HIGH,
            "Field names in the record whose values are to be copied or moved to headers.",
            validator=non_empty_list)
    .define(HEADERS_CONFIG, Type.LIST, NO_DEFAULT, Importance.HIGH,
            "Header names, in the same order as the field names listed in the fields "
            "configuration property.", validator=non_empty_list)
    .define(OPERATION_CONFIG, Type.STRING, NO_DEFAULT, Importance.HIGH,
            "Either <code>move</code> if the fields are to be moved to the headers (removed "
            "from the key/value), or <code>copy</code> if the fields are to be copied to the "
            "headers (retained in the key/value).",
            validator=one_of(MOVE, COPY, case_sensitive=True))
    .define(REPLACE_NULL_CONFIG, Type.BOOLEAN, True, Importance.MEDIUM,
            REPLACE_NULL_WITH_DEFAULT_DOC)
)


def _config_error(name: str, value: Any, message: str) -> ConfigException:
    """A ConfigException whose text is exactly ``message`` (Kafka's one-argument form)."""
    error = ConfigException(name, value, message)
    error.args = (message,)
    return error


class _HeaderFrom(KeyOrValueTransformation):
    """Moves or copies fields in the key/value of a record into that record's headers."""

    def config(self) -> ConfigDef:
        return HEADER_FROM_CONFIG_DEF

    def configure(self, configs: Mapping[str, Any]) -> None:
        parsed = HEADER_FROM_CONFIG_DEF.parse(configs)
        fields, headers = list(parsed[FIELDS_CONFIG]), list(parsed[HEADERS_CONFIG])
        if len(fields) != len(headers):
            raise _config_error(HEADERS_CONFIG, headers,
                                f"'{FIELDS_CONFIG}' config must have the same number of "
                                f"elements as '{HEADERS_CONFIG}' config.")
        self._pairs = list(zip(fields, headers, strict=True))
        self._fields = frozenset(fields)
        self._move = parsed[OPERATION_CONFIG] == MOVE
        self._purpose = f"header {parsed[OPERATION_CONFIG]}"
        self._replace_null = bool(parsed[REPLACE_NULL_CONFIG])
        self._moved_schemas = SchemaCache()

    def apply(self, record: R) -> R | None:
        schema = self._schema(record)
        if schema is None:
            return self._schemaless(record, require_map(self._value(record), self._purpose))
        return self._with_schema(record, schema,
                                 require_struct(self._value(record), self._purpose))

    def _schemaless(self, record: R, value: Mapping[str, Any]) -> R:
        headers = _copy_of_headers(record)
        updated = dict(value)
        for field, header in self._pairs:
            if self._move:
                updated.pop(field, None)
            headers.add(header, value.get(field), None)
        return self._new(record, None, updated, headers)

    def _with_schema(self, record: R, schema: Schema, value: Struct) -> R:
        headers = _copy_of_headers(record)
        for field_name, header in self._pairs:
            field = schema.field(field_name)
            if field is None:
                raise DataException(f"{field_name} is not a valid field name of the "
                                    f"{'key' if self._KEY else 'value'} schema")
            own = value.schema.field(field_name)
            current = field_value(value, own, self._replace_null) if own is not None else None
            headers.add(header, current, field.schema)
        if not self._move:
            return self._new(record, schema, value, headers)
        moved = self._moved_schemas.get(schema, lambda s: struct_like(
            s, [(f.name, f.schema) for f in s.fields if f.name not in self._fields]))
        kept = Struct(moved, {f.name: field_value(value, f, self._replace_null)
                              for f in value.schema.fields if f.name not in self._fields})
        return self._new(record, moved, kept, headers)

    def _new(self, record: R, schema: Schema | None, value: Any, headers: ConnectHeaders
             ) -> R:
        if self._KEY:
            return record.new_record(key_schema=schema, key=value,  # type: ignore[return-value]
                                     headers=headers)
        return record.new_record(value_schema=schema, value=value,  # type: ignore[return-value]
                                 headers=headers)


class HeaderFromKey(_HeaderFrom):
    """``org.apache.kafka.connect.transforms.HeaderFrom$Key``."""

    _KEY = True


class HeaderFromValue(_HeaderFrom):
    """``org.apache.kafka.connect.transforms.HeaderFrom$Value``."""


# --- InsertHeader -----------------------------------------------------------------------

INSERT_HEADER_CONFIG_DEF = (
    ConfigDef()
    .define("header", Type.STRING, NO_DEFAULT, Importance.HIGH, "The name of the header.")
    .define("value.literal", Type.STRING, NO_DEFAULT, Importance.HIGH,
            "The literal value that is to be set as the header value on all records.")
)


class InsertHeader(Transformation):
    """``org.apache.kafka.connect.transforms.InsertHeader``: adds a header to each record."""

    def config(self) -> ConfigDef:
        return INSERT_HEADER_CONFIG_DEF

    def configure(self, configs: Mapping[str, Any]) -> None:
        parsed = INSERT_HEADER_CONFIG_DEF.parse(configs)
        for name in ("header", "value.literal"):  # Kafka's NonNullValidator
            if parsed[name] is None:
                raise ConfigException(name, None, "Entry must be non null")
        self._header: str = parsed["header"]
        self._literal = parse_string(parsed["value.literal"])

    def apply(self, record: R) -> R | None:
        headers = _copy_of_headers(record)
        headers.add_schema_and_value(self._header, self._literal)
        return _with_headers(record, headers)
