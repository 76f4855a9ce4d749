"""Common Single Message Transformations with Kafka's config names and semantics.

``RegexRouter``, ``InsertField$Key/$Value``, ``ExtractField$Key/$Value``,
``HoistField$Key/$Value``, ``ReplaceField$Key/$Value`` and ``Filter``; the Python classes drop
the ``$`` (``InsertFieldValue``). Field transforms work on schemaless dicts and on Structs.
The predicates live in ``worker.connectors.predicates``; Kafka's other SMTs in
``transforms_cast``, ``transforms_flatten``, ``transforms_mask``, ``transforms_schema``
(SetSchemaMetadata, ValueToKey) and ``transforms_timestamp`` (TimestampConverter,
TimestampRouter).
"""

from __future__ import annotations

import datetime as dt
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
    SinkRecord,
    Struct,
    Transformation,
    Type,
)
from worker.api.config_def import non_empty_string
from worker.api.data import Field
from worker.api.records import ConnectRecord
from worker.api.transforms import R
from worker.connectors.field_path import (
    field_syntax_version,
    parse_path,
    with_field_syntax_version,
)
from worker.connectors.json_schema import OPTIONAL_TIMESTAMP_SCHEMA, TIMESTAMP_SCHEMA
from worker.connectors.regex import JavaReplacement, java_regex, valid_java_regex
from worker.connectors.transform_util import (
    REPLACE_NULL_WITH_DEFAULT_DOC,
    KeyOrValueTransformation,
    SchemaCache,
    field_value,
    require_map,
    require_struct,
    struct_like,
)

_TOPIC_CACHE_SIZE = 1024


# --- RegexRouter ------------------------------------------------------------------------

REGEX_ROUTER_CONFIG_DEF = (
    ConfigDef()
    .define("regex", Type.STRING, NO_DEFAULT, Importance.HIGH,
            "Regular expression to use for matching.", validator=valid_java_regex)
    .define("replacement", Type.STRING, NO_DEFAULT, Importance.HIGH, "Replacement string.")
)


class RegexRouter(Transformation):
    """Renames the topic when the whole topic name matches ``regex`` (Java regex and
    replacement syntax: ``$1``, ``${name}``, ``(?<name>...)``)."""

    def config(self) -> ConfigDef:
        return REGEX_ROUTER_CONFIG_DEF

    def configure(self, configs: Mapping[str, Any]) -> None:
        parsed = REGEX_ROUTER_CONFIG_DEF.parse(configs)
        self._regex = java_regex(parsed["regex"], "regex")
        self._replacement = JavaReplacement(parsed["replacement"], self._regex, "replacement")
        self._topics: dict[str, str | None] = {}  # topic -> new topic; None = unchanged

    def apply(self, record: R) -> R | None:
        topic = record.topic
        try:
            routed = self._topics[topic]
        except KeyError:
            routed = self._route(topic)
            if len(self._topics) >= _TOPIC_CACHE_SIZE:
                self._topics.clear()
            self._topics[topic] = routed
        return record if routed is None else record.new_record(topic=routed)  # type: ignore

    def _route(self, topic: str) -> str | None:
        if self._regex.fullmatch(topic) is None:
            return None
        # Java's replaceFirst re-finds the first match, which need not span the whole name.
        match = self._regex.search(topic)
        assert match is not None
        return topic[:match.start()] + self._replacement.expand(match) + topic[match.end():]


# --- InsertField ------------------------------------------------------------------------

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


# --- ExtractField -----------------------------------------------------------------------

FIELD_CONFIG_DEF = ConfigDef().define("field", Type.STRING, NO_DEFAULT, Importance.MEDIUM,
                                      "Field name.", validator=non_empty_string())
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


# --- HoistField -------------------------------------------------------------------------

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


# --- ReplaceField -----------------------------------------------------------------------

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


# --- Filter -----------------------------------------------------------------------------

class Filter(Transformation):
    """Drops every record; gate it with a predicate (``transforms.<t>.predicate``)."""

    def apply(self, record: R) -> R | None:
        return None
