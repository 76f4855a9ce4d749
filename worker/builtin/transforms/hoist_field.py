"""Kafka's ``org.apache.kafka.connect.transforms.HoistField$Key/$Value``: wraps the key or
value in a map or Struct under one field.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from worker.api import (
    NO_DEFAULT,
    ConfigDef,
    Importance,
    Schema,
    SchemaType,
    Struct,
    Type,
)
from worker.api.config_def import non_empty_string
from worker.api.data import Field
from worker.api.transforms import R
from worker.builtin.transforms._util import (
    KeyOrValueTransformation,
    SchemaCache,
)

FIELD_CONFIG_DEF = ConfigDef().define("field", Type.STRING, NO_DEFAULT, Importance.MEDIUM,
                                      "Field name.", validator=non_empty_string())


class _HoistField(KeyOrValueTransformation):
    def config(self) -> ConfigDef:
        return FIELD_CONFIG_DEF

    def configure(self, configs: Mapping[str, Any]) -> None:
        self._field = FIELD_CONFIG_DEF.parse(configs)["field"]
        self._schemas = SchemaCache()

    def apply(self, record: R) -> R | None:
        schema, value = self._schema(record), self._value(record)
        if schema is None:
            return self._new_record(record, None, {self._field: value})
        wrapper = self._schemas.get(schema, lambda s: Schema(
            SchemaType.STRUCT, fields=(Field(self._field, 0, s),)))
        return self._new_record(record, wrapper, Struct(wrapper, {self._field: value}))


class HoistFieldKey(_HoistField):
    """``org.apache.kafka.connect.transforms.HoistField$Key``."""

    _KEY = True


class HoistFieldValue(_HoistField):
    """``org.apache.kafka.connect.transforms.HoistField$Value``."""
