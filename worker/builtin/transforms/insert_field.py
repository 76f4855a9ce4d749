"""Kafka's ``org.apache.kafka.connect.transforms.InsertField$Key/$Value``: adds the
record's topic, partition, offset, timestamp or a static value as fields (schemaless maps
and Structs); the Python classes drop the ``$`` (``InsertFieldValue``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from worker.api import (
    ConfigDef,
    ConfigException,
    DataException,
    Importance,
    Schema,
    SchemaType,
    SinkRecord,
    Struct,
    Type,
)
from worker.api.logical import OPTIONAL_TIMESTAMP_SCHEMA, TIMESTAMP_SCHEMA
from worker.api.records import ConnectRecord
from worker.api.transforms import R
from worker.builtin.transforms._util import (
    KeyOrValueTransformation,
    SchemaCache,
    require_map,
    require_struct,
    struct_like,
)

_OPTIONALITY_DOC = "Suffix with ! to make this a required field, or ? to keep it optional " \
                   "(the default)."
INSERT_FIELD_CONFIG_DEF = (
    ConfigDef()
    .define("topic.field", Type.STRING, None, Importance.MEDIUM,
            f"Field name for Kafka topic. {_OPTIONALITY_DOC}")
    .define("partition.field", Type.STRING, None, Importance.MEDIUM,
            f"Field name for Kafka partition. {_OPTIONALITY_DOC}")
    .define("offset.field", Type.STRING, None, Importance.MEDIUM,
            f"Field name for Kafka offset - only applicable to sink connectors. "
            f"{_OPTIONALITY_DOC}")
    .define("timestamp.field", Type.STRING, None, Importance.MEDIUM,
            f"Field name for record timestamp. {_OPTIONALITY_DOC}")
    .define("static.field", Type.STRING, None, Importance.MEDIUM,
            f"Field name for static data field. {_OPTIONALITY_DOC}")
    .define("static.value", Type.STRING, None, Importance.MEDIUM,
            "Static field value, if field name configured.")
)
_INSERT_PURPOSE = "field insertion"
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def _insertion_spec(spec: str | None) -> tuple[str, bool] | None:
    """Kafka's InsertionSpec: (name, optional); ``!`` = required, ``?`` or none = optional."""
    if spec is None:
        return None
    if spec.endswith("?"):
        return spec[:-1], True
    if spec.endswith("!"):
        return spec[:-1], False
    return spec, True


class _InsertField(KeyOrValueTransformation):
    def config(self) -> ConfigDef:
        return INSERT_FIELD_CONFIG_DEF

    def configure(self, configs: Mapping[str, Any]) -> None:
        parsed = INSERT_FIELD_CONFIG_DEF.parse(configs)
        self._topic = _insertion_spec(parsed["topic.field"])
        self._partition = _insertion_spec(parsed["partition.field"])
        self._offset = _insertion_spec(parsed["offset.field"])
        self._timestamp = _insertion_spec(parsed["timestamp.field"])
        self._static = _insertion_spec(parsed["static.field"])
        self._static_value = parsed["static.value"]
        if not any((self._topic, self._partition, self._offset, self._timestamp,
                    self._static)):
            raise ConfigException("topic.field", None, "No field insertion configured")
        if self._static is not None and self._static_value is None:
            raise ConfigException("static.value", None,
                                  f"No value specified for static field: {self._static[0]}")
        self._schemas = SchemaCache()

    def apply(self, record: R) -> R | None:
        value = self._value(record)
        if value is None:  # tombstones pass through (KAFKA-8523)
            return record
        schema = self._schema(record)
        if schema is None:
            updated: Any = dict(require_map(value, _INSERT_PURPOSE))
            self._insert(record, updated, lambda ms: ms)
            return self._new_record(record, None, updated)
        struct = require_struct(value, _INSERT_PURPOSE)
        new_schema = self._schemas.get(struct.schema, self._updated_schema)
        values = dict(struct.values)
        self._insert(record, values, lambda ms: _EPOCH + dt.timedelta(milliseconds=ms))
        return self._new_record(record, new_schema, Struct(new_schema, values))

    def _insert(self, record: ConnectRecord, out: dict[str, Any], timestamp: Any) -> None:
        if self._topic is not None:
            out[self._topic[0]] = record.topic
        if self._partition is not None and record.kafka_partition is not None:
            out[self._partition[0]] = record.kafka_partition
        if self._offset is not None:
            if not isinstance(record, SinkRecord):
                raise DataException(f"Only SinkRecord supported for [{_INSERT_PURPOSE}], "
                                    f"found: {type(record).__name__}")
            out[self._offset[0]] = record.kafka_offset
        if self._timestamp is not None and record.timestamp is not None:
            out[self._timestamp[0]] = timestamp(record.timestamp)
        if self._static is not None:
            out[self._static[0]] = self._static_value

    def _updated_schema(self, schema: Schema) -> Schema:
        fields = [(f.name, f.schema) for f in schema.fields]
        for spec, required, optional in (
                (self._topic, Schema(SchemaType.STRING), Schema(SchemaType.STRING, True)),
                (self._partition, Schema(SchemaType.INT32), Schema(SchemaType.INT32, True)),
                (self._offset, Schema(SchemaType.INT64), Schema(SchemaType.INT64, True)),
                (self._timestamp, TIMESTAMP_SCHEMA, OPTIONAL_TIMESTAMP_SCHEMA),
                (self._static, Schema(SchemaType.STRING), Schema(SchemaType.STRING, True))):
            if spec is not None:
                fields.append((spec[0], optional if spec[1] else required))
        return struct_like(schema, fields)


class InsertFieldKey(_InsertField):
    """``org.apache.kafka.connect.transforms.InsertField$Key``."""

    _KEY = True


class InsertFieldValue(_InsertField):
    """``org.apache.kafka.connect.transforms.InsertField$Value``."""
