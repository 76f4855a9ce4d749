"""Kafka's ``MaskField$Key`` / ``MaskField$Value`` SMT (``MaskFieldKey`` / ``MaskFieldValue``).

Each field in ``fields`` is replaced by the "null value" of its type: ``False``, ``0``,
``0.0``, ``Decimal(0)``, ``""``, the epoch (datetime, date or time of day), ``[]`` or
``{}``; bytes and structs cannot be masked. With ``replacement``, numeric and string fields
get that text converted to their type instead (a number is parsed as Java's ``BigDecimal``
and narrowed to an integer field's width), other types fail. Null fields stay null. As in
Kafka, a record whose key/value is null fails (it is not a map or struct).
``field.syntax.version=V2`` makes the field names dotted paths (KIP-821).
"""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Mapping
from typing import Any

from worker.api import (
    NO_DEFAULT,
    ConfigDef,
    DataException,
    Importance,
    Schema,
    SchemaType,
    Type,
)
from worker.api.logical import DECIMAL_NAME
from worker.api.transforms import R
from worker.builtin.transforms._field_path import (
    StructUpdater,
    build_trie,
    field_syntax_version,
    parse_path,
    update_map,
    with_field_syntax_version,
)
from worker.builtin.transforms._util import (
    INT_BITS,
    REPLACE_NULL_WITH_DEFAULT_DOC,
    KeyOrValueTransformation,
    must_be_non_empty,
    non_empty_list,
    require_map,
    require_struct,
)
from worker.util.java_numbers import parse_big_decimal, to_float32, wrap

MASK_FIELD_CONFIG_DEF = with_field_syntax_version(
    ConfigDef()
    .define("fields", Type.LIST, NO_DEFAULT, Importance.HIGH, "Names of fields to mask.",
            validator=non_empty_list)
    .define("replacement", Type.STRING, None, Importance.LOW,
            "Custom value replacement, that will be applied to all 'fields' values (numeric or "
            "non-empty string values only).", validator=must_be_non_empty)
    .define("replace.null.with.default", Type.BOOLEAN, True, Importance.MEDIUM,
            REPLACE_NULL_WITH_DEFAULT_DOC)
)
_PURPOSE = "mask fields"
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def _null_value(value: Any) -> Any:
    """Kafka's masked value for ``value``'s type."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return 0
    if isinstance(value, float):
        return 0.0
    if isinstance(value, decimal.Decimal):
        return decimal.Decimal(0)
    if isinstance(value, str):
        return ""
    if isinstance(value, dt.datetime):
        return _EPOCH
    if isinstance(value, dt.date):
        return dt.date(1970, 1, 1)
    if isinstance(value, dt.time):
        return dt.time(0)
    if isinstance(value, list | tuple):
        return []
    if isinstance(value, Mapping):
        return {}
    raise DataException(f"Cannot mask value of type: {type(value).__name__}")


def _replacement_value(value: Any, schema: Schema | None, replacement: str) -> Any:
    """``replacement`` converted to the type of ``value`` (of ``schema``, if known)."""
    if isinstance(value, str):
        return replacement
    numeric = isinstance(value, int | float | decimal.Decimal) and not isinstance(value, bool)
    if not numeric:
        raise DataException(f"Cannot mask value of type {type(value).__name__} with custom "
                            f"replacement.")
    try:
        number = parse_big_decimal(replacement)
    except ValueError:
        to_what = "number" if isinstance(value, decimal.Decimal) else "a number"
        raise DataException(f"Unable to convert {replacement} (str) to {to_what}") from None
    if isinstance(value, decimal.Decimal) or (schema is not None and schema.name == DECIMAL_NAME):
        return number
    if isinstance(value, float):
        result = float(number)
        return to_float32(result) if schema is not None and \
            schema.type is SchemaType.FLOAT32 else result
    bits = INT_BITS.get(schema.type, 64) if schema is not None else 64
    return wrap(int(number), bits)


class _MaskField(KeyOrValueTransformation):
    def config(self) -> ConfigDef:
        return MASK_FIELD_CONFIG_DEF

    def configure(self, configs: Mapping[str, Any]) -> None:
        parsed = MASK_FIELD_CONFIG_DEF.parse(configs)
        version = field_syntax_version(parsed)
        self._trie = build_trie((parse_path(f, version, "fields"), None)
                                for f in parsed["fields"])
        self._replacement: str | None = parsed["replacement"]
        self._structs = StructUpdater(self._trie, lambda s, v, _: self._masked(s, v), None,
                                      parsed["replace.null.with.default"])

    def _masked(self, schema: Schema | None, value: Any) -> Any:
        if value is None:
            return None
        if self._replacement is None:
            return _null_value(value)
        return _replacement_value(value, schema, self._replacement)

    def apply(self, record: R) -> R | None:
        value = self._value(record)
        schema = self._schema(record)
        if schema is None:
            updated = update_map(require_map(value, _PURPOSE), self._trie,
                                 lambda v, _: self._masked(None, v))
            return self._new_record(record, None, updated)
        struct = require_struct(value, _PURPOSE)
        return self._new_record(record, schema, self._structs.value(struct, struct.schema))


class MaskFieldKey(_MaskField):
    """``org.apache.kafka.connect.transforms.MaskField$Key``."""

    _KEY = True


class MaskFieldValue(_MaskField):
    """``org.apache.kafka.connect.transforms.MaskField$Value``."""
