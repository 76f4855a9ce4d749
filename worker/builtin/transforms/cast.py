"""Kafka's ``Cast$Key`` / ``Cast$Value`` SMT (``CastKey`` / ``CastValue`` here).

``spec`` is a single type for the whole key or value, or ``field:type,...`` pairs for the
fields of a map (schemaless) or struct. Types: int8, int16, int32, int64, float32, float64,
boolean and string; bytes (and Decimal, Date, Time, Timestamp values) are read too, bytes
only to string (base64). Numbers narrow as Java's casts do (wrap-around, truncation toward
zero), strings parse as Java's ``parseInt`` & co., logical values are cast from their
encoded form (days, milliseconds) and printed to string as Kafka's ``Values`` does.
``field.syntax.version=V2`` makes the field names dotted paths (KIP-821).

One difference from Kafka: casting a whole Decimal/Date/Time/Timestamp value does not copy
the logical type's schema name onto the new schema (Kafka does, and its JsonConverter then
rejects the record).
"""

from __future__ import annotations

import base64
import dataclasses
import decimal
from collections.abc import Callable, Mapping
from typing import Any

from worker.api import (
    NO_DEFAULT,
    ConfigDef,
    ConfigException,
    DataException,
    Importance,
    Schema,
    SchemaType,
    Type,
)
from worker.api.logical import (
    DATE_NAME,
    DECIMAL_NAME,
    TIME_BASED,
    from_logical,
)
from worker.api.transforms import R
from worker.builtin.transforms._field_path import (
    StructUpdater,
    Trie,
    build_trie,
    field_syntax_version,
    parse_path,
    update_map,
    with_field_syntax_version,
)
from worker.builtin.transforms._java_date_format import compile_pattern, from_epoch_millis
from worker.builtin.transforms._util import (
    INT_BITS,
    REPLACE_NULL_WITH_DEFAULT_DOC,
    KeyOrValueTransformation,
    SchemaCache,
    require_map,
    require_struct,
    schema_type_of,
)
from worker.util.java_numbers import (
    double_to_string,
    float_to_int,
    parse_boolean,
    parse_float,
    parse_int,
    to_float32,
    wrap,
)

_OUTPUT_TYPES = (SchemaType.INT8, SchemaType.INT16, SchemaType.INT32, SchemaType.INT64,
                 SchemaType.FLOAT32, SchemaType.FLOAT64, SchemaType.BOOLEAN, SchemaType.STRING)
_INPUT_TYPES = (*_OUTPUT_TYPES, SchemaType.BYTES)
_PURPOSE = "cast types"
_MS_PER_DAY = 86_400_000
# Kafka's Values.dateFormatFor: a time of day, a date, or both.
_TIME_FORMAT = compile_pattern("HH:mm:ss.SSS'Z'")
_DATE_FORMAT = compile_pattern("yyyy-MM-dd")
_TIMESTAMP_FORMAT = compile_pattern("yyyy-MM-dd'T'HH:mm:ss.SSS'Z'")
_LOGICAL_NAMES = TIME_BASED | {DECIMAL_NAME}


def _type_list(types: tuple[SchemaType, ...]) -> str:
    return "[" + ", ".join(t.name for t in types) + "]"


def _java_split(text: str) -> list[str]:
    """Java's ``split(":")``: trailing empty parts are dropped."""
    parts = text.split(":")
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def _target_type(name: str, spec: str, text: str) -> SchemaType:
    try:
        target = SchemaType[text.strip().upper()]
    except KeyError:
        raise ConfigException(name, spec, f"Invalid type found in casting spec: {text.strip()}"
                              ) from None
    if target not in _OUTPUT_TYPES:
        raise ConfigException(name, spec, f"Cast transformation does not support casting to "
                                          f"{target.name}; supported types are "
                                          f"{_type_list(_OUTPUT_TYPES)}")
    return target


def parse_spec(name: str, mappings: list[str]) -> dict[str | None, SchemaType]:
    """Field name (None: the whole value) -> target type; ConfigException for a bad spec."""
    spec = ",".join(mappings)
    if not mappings:
        raise ConfigException(name, spec, "Must specify at least one field to cast.")
    casts: dict[str | None, SchemaType] = {}
    for mapping in mappings:
        parts = _java_split(mapping)
        if len(parts) > 2:
            raise ConfigException(name, spec, f"Invalid rename mapping: {mapping}")
        if len(parts) == 1:
            casts[None] = _target_type(name, spec, parts[0])
        elif len(parts) == 2:
            casts[parts[0].strip()] = _target_type(name, spec, parts[1])
    if None in casts and len(mappings) > 1:
        raise ConfigException(name, spec,
                              "Cast transformations that specify a type to cast the entire "
                              "value to may only specify a single cast in their spec")
    return casts


CAST_CONFIG_DEF = with_field_syntax_version(
    ConfigDef()
    .define("spec", Type.LIST, NO_DEFAULT, Importance.HIGH,
            "List of fields and the type to cast them to of the form field1:type,field2:type to "
            "cast fields of Maps or Structs. A single type to cast the entire value. Valid "
            "types are int8, int16, int32, int64, float32, float64, boolean, and string. Note "
            "that binary fields can only be cast to string.", validator=parse_spec)
    .define("replace.null.with.default", Type.BOOLEAN, True, Importance.MEDIUM,
            REPLACE_NULL_WITH_DEFAULT_DOC)
)


# --- casting one value ------------------------------------------------------------------

def _unexpected(value: Any) -> DataException:
    return DataException(f"Unexpected type in Cast transformation: {type(value).__name__}")


def _integer(bits: int) -> Callable[[Any], int]:
    def cast(value: Any) -> int:
        if isinstance(value, bool):
            return int(value)
        if isinstance(value, int):
            return wrap(value, bits)
        if isinstance(value, float):
            return float_to_int(value, bits)
        if isinstance(value, decimal.Decimal):
            return wrap(int(value), bits)
        if isinstance(value, str):
            return parse_int(value, bits)
        raise _unexpected(value)
    return cast


def _floating(float32: bool) -> Callable[[Any], float]:
    def cast(value: Any) -> float:
        if isinstance(value, bool):
            result = 1.0 if value else 0.0
        elif isinstance(value, int | float | decimal.Decimal):
            result = float(value)
        elif isinstance(value, str):
            result = parse_float(value)
        else:
            raise _unexpected(value)
        return to_float32(result) if float32 else result
    return cast


def _boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return wrap(value, 64) != 0
    if isinstance(value, float):
        return float_to_int(value, 64) != 0
    if isinstance(value, decimal.Decimal):
        return wrap(int(value), 64) != 0
    if isinstance(value, str):
        return parse_boolean(value)
    raise _unexpected(value)


_CASTS: dict[SchemaType, Callable[[Any], Any]] = {
    **{t: _integer(bits) for t, bits in INT_BITS.items()},
    SchemaType.FLOAT32: _floating(True),
    SchemaType.FLOAT64: _floating(False),
    SchemaType.BOOLEAN: _boolean,
}


def _to_string(schema: Schema | None, source: SchemaType, value: Any) -> str:
    if schema is not None and schema.name in TIME_BASED:
        encoded = from_logical(schema, value)
        millis = encoded * _MS_PER_DAY if schema.name == DATE_NAME else encoded
        if millis < _MS_PER_DAY:
            text_format = _TIME_FORMAT
        elif millis % _MS_PER_DAY == 0:
            text_format = _DATE_FORMAT
        else:
            text_format = _TIMESTAMP_FORMAT
        return text_format.format(from_epoch_millis(millis))
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return double_to_string(value, float32=source is SchemaType.FLOAT32)
    return str(value)


def cast_value(schema: Schema | None, value: Any, target: SchemaType) -> Any:
    """``value`` (of ``schema``, or schemaless) cast to ``target``; None stays None."""
    if value is None:
        return None
    source = schema_type_of(value) if schema is None else schema.type
    if source is None:
        raise DataException(f"Cast transformation was passed a value of type "
                            f"{type(value).__name__} which is not supported by Connect's data "
                            f"API")
    if source not in _INPUT_TYPES:
        raise DataException(f"Cast transformation does not support casting from {source.name}; "
                            f"supported types are {_type_list(_INPUT_TYPES)}")
    try:
        if target is SchemaType.STRING:
            return _to_string(schema, source, value)
        if schema is not None and schema.name in TIME_BASED:
            value = from_logical(schema, value)  # days or milliseconds
        return _CASTS[target](value)
    except (ValueError, OverflowError):
        raise DataException(f"Value ({value}) was out of range for requested data type"
                            ) from None


# --- the transformation -----------------------------------------------------------------

def _cast_schema(schema: Schema, target: SchemaType) -> Schema:
    """A field's new schema: the target type, the field's optionality and default."""
    default = None if schema.default is None else cast_value(schema, schema.default, target)
    return Schema(target, optional=schema.optional, default=default)


class _Cast(KeyOrValueTransformation):
    def config(self) -> ConfigDef:
        return CAST_CONFIG_DEF

    def configure(self, configs: Mapping[str, Any]) -> None:
        parsed = CAST_CONFIG_DEF.parse(configs)
        casts = parse_spec("spec", parsed["spec"])
        self._whole = casts.pop(None, None)
        version = field_syntax_version(parsed)
        self._trie: Trie = build_trie((parse_path(f, version, "spec"), t)
                                      for f, t in casts.items() if f is not None)
        self._structs = StructUpdater(self._trie, lambda s, v, t: cast_value(s, v, t),
                                      _cast_schema, parsed["replace.null.with.default"])
        self._schemas = SchemaCache()

    def apply(self, record: R) -> R | None:
        value = self._value(record)
        if value is None:
            return record
        schema = self._schema(record)
        if schema is None:
            if self._whole is not None:
                return self._new_record(record, None, cast_value(None, value, self._whole))
            updated = update_map(require_map(value, _PURPOSE), self._trie,
                                 lambda v, t: cast_value(None, v, t))
            return self._new_record(record, None, updated)
        new_schema = self._schemas.get(schema, self._updated_schema)
        if self._whole is not None:
            return self._new_record(record, new_schema, cast_value(schema, value, self._whole))
        struct = require_struct(value, _PURPOSE)
        return self._new_record(record, new_schema, self._structs.value(struct, new_schema))

    def _updated_schema(self, schema: Schema) -> Schema:
        if self._whole is None:
            return self._structs.schema(schema)
        updated = dataclasses.replace(_cast_schema(schema, self._whole), name=schema.name,
                                      version=schema.version, doc=schema.doc,
                                      parameters=schema.parameters)
        if schema.name in _LOGICAL_NAMES:  # the cast value is no longer of that logical type
            updated = dataclasses.replace(updated, name=None, version=None, parameters=None)
        return updated


class CastKey(_Cast):
    """``org.apache.kafka.connect.transforms.Cast$Key``."""

    _KEY = True


class CastValue(_Cast):
    """``org.apache.kafka.connect.transforms.Cast$Value``."""
