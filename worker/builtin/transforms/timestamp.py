"""Kafka's ``TimestampConverter$Key/$Value`` and ``TimestampRouter`` SMTs.

``TimestampConverterKey/Value`` convert a timestamp (the whole key/value, or ``field``)
between a formatted string, Unix time (an int in ``unix.precision`` units), and Connect's
Date (``datetime.date``), Time (``datetime.time``) and Timestamp (``datetime.datetime``,
UTC). The source representation comes from the schema, or without one from the Python
type. As in Kafka, conversions go through milliseconds: sub-millisecond Unix digits are
dropped. ``field.syntax.version=V2`` makes ``field`` a dotted path (KIP-821).

``TimestampRouter`` sets the topic to ``topic.format`` with ``${topic}`` and
``${timestamp}`` (the record timestamp in ``timestamp.format``, UTC) replaced.

Both take Java ``SimpleDateFormat`` patterns; ``worker.builtin.transforms._java_date_format`` lists
the supported letters. A pattern Java would reject or one using an unsupported letter is a
ConfigException when the transform is configured (and in config validation).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from typing import Any

from worker.api import (
    NO_DEFAULT,
    ConfigDef,
    ConfigException,
    ConnectException,
    DataException,
    Importance,
    Schema,
    SchemaType,
    Transformation,
    Type,
)
from worker.api.config_def import one_of
from worker.api.logical import (
    DATE_NAME,
    DATE_SCHEMA,
    OPTIONAL_TIMESTAMP_SCHEMA,
    TIME_NAME,
    TIME_SCHEMA,
    TIMESTAMP_NAME,
    TIMESTAMP_SCHEMA,
)
from worker.api.transforms import R
from worker.builtin.transforms._field_path import (
    StructUpdater,
    build_trie,
    field_syntax_version,
    parse_path,
    update_map,
    with_field_syntax_version,
)
from worker.builtin.transforms._java_date_format import (
    InvalidPatternError,
    JavaDateFormat,
    UnsupportedPatternError,
    compile_pattern,
    epoch_millis,
    from_epoch_millis,
)
from worker.builtin.transforms._util import (
    REPLACE_NULL_WITH_DEFAULT_DOC,
    KeyOrValueTransformation,
    SchemaCache,
    require_map,
    require_struct,
)

_SUPPORTED_LETTERS = "G y M L d D E u a H k K h m s S z Z X"


def _pattern_validator(invalid: Callable[[str], str]) -> Callable[[str, Any], None]:
    """A validator compiling a SimpleDateFormat pattern; blank patterns are left alone."""
    def check(name: str, value: Any) -> None:
        if str(value).strip():
            try:
                compile_pattern(str(value))
            except InvalidPatternError as exc:
                raise ConfigException(name, value, f"{invalid(str(value))} ({exc})") from None
            except UnsupportedPatternError as exc:
                raise ConfigException(name, value, f"Unsupported SimpleDateFormat pattern: "
                                                   f"{value} ({exc}; supported letters: "
                                                   f"{_SUPPORTED_LETTERS})") from None
    return check


# --- TimestampConverter -----------------------------------------------------------------

STRING, UNIX, DATE, TIME, TIMESTAMP = "string", "unix", "Date", "Time", "Timestamp"
SECONDS, MILLIS, MICROS, NANOS = "seconds", "milliseconds", "microseconds", "nanoseconds"
_MILLIS_PER_UNIT = {SECONDS: 1000, MILLIS: 1}
_UNITS_PER_MILLI = {MICROS: 1000, NANOS: 1_000_000}
_PURPOSE = "converting timestamp formats"
_EPOCH_DATE = dt.date(1970, 1, 1)

TIMESTAMP_CONVERTER_CONFIG_DEF = with_field_syntax_version(
    ConfigDef()
    .define("field", Type.STRING, "", Importance.HIGH,
            "The field containing the timestamp, or empty if the entire value is a timestamp")
    .define("target.type", Type.STRING, NO_DEFAULT, Importance.HIGH,
            "The desired timestamp representation: string, unix, Date, Time, or Timestamp",
            validator=one_of(STRING, UNIX, DATE, TIME, TIMESTAMP, case_sensitive=True))
    .define("format", Type.STRING, "", Importance.MEDIUM,
            "A SimpleDateFormat-compatible format for the timestamp. Used to generate the "
            "output when type=string or used to parse the input if the input is a string.",
            validator=_pattern_validator(
                lambda p: f"TimestampConverter requires a SimpleDateFormat-compatible pattern "
                          f"for string timestamps: {p}"))
    .define("unix.precision", Type.STRING, MILLIS, Importance.LOW,
            "The desired Unix precision for the timestamp: seconds, milliseconds, "
            "microseconds, or nanoseconds. Used to generate the output when type=unix or used "
            "to parse the input if the input is a Long.Note: This SMT will cause precision loss "
            "during conversions from, and to, values with sub-millisecond components.",
            validator=one_of(NANOS, MICROS, MILLIS, SECONDS, case_sensitive=True))
    .define("replace.null.with.default", Type.BOOLEAN, True, Importance.MEDIUM,
            REPLACE_NULL_WITH_DEFAULT_DOC)
)

_SCHEMAS = {
    STRING: Schema(SchemaType.STRING), UNIX: Schema(SchemaType.INT64),
    DATE: DATE_SCHEMA, TIME: TIME_SCHEMA, TIMESTAMP: TIMESTAMP_SCHEMA,
}
_OPTIONAL_SCHEMAS = {
    STRING: Schema(SchemaType.STRING, optional=True),
    UNIX: Schema(SchemaType.INT64, optional=True),
    DATE: Schema(SchemaType.INT32, optional=True, name=DATE_NAME, version=1),
    TIME: Schema(SchemaType.INT32, optional=True, name=TIME_NAME, version=1),
    TIMESTAMP: OPTIONAL_TIMESTAMP_SCHEMA,
}


def _truncating_div(value: int, divisor: int) -> int:
    """Java's integer division (toward zero)."""
    quotient = abs(value) // divisor
    return -quotient if value < 0 else quotient


def _kind_of_schema(schema: Schema) -> str:
    """The representation a schema stands for (Kafka's ``timestampTypeFromSchema``)."""
    kind = {TIMESTAMP_NAME: TIMESTAMP, DATE_NAME: DATE, TIME_NAME: TIME}.get(schema.name or "")
    if kind is not None:
        return kind
    if schema.type is SchemaType.STRING:
        return STRING
    if schema.type is SchemaType.INT64:
        return UNIX
    described = f"{schema.name}:{schema.type.name}" if schema.name else schema.type.name
    raise ConnectException(f"Schema Schema{{{described}}} does not correspond to a known "
                           f"timestamp type format")


def _kind_of_value(value: Any) -> str:
    if isinstance(value, dt.datetime):
        return TIMESTAMP
    if isinstance(value, dt.date):
        return DATE
    if isinstance(value, dt.time):
        return TIME
    if isinstance(value, int) and not isinstance(value, bool):
        return UNIX
    if isinstance(value, str):
        return STRING
    raise DataException(f"TimestampConverter does not support {type(value).__name__} objects "
                        f"as timestamps")


class _TimestampConverter(KeyOrValueTransformation):
    def config(self) -> ConfigDef:
        return TIMESTAMP_CONVERTER_CONFIG_DEF

    def configure(self, configs: Mapping[str, Any]) -> None:
        parsed = TIMESTAMP_CONVERTER_CONFIG_DEF.parse(configs)
        self._field: str = parsed["field"]
        self._target: str = parsed["target.type"]
        self._precision: str = parsed["unix.precision"]
        pattern: str = parsed["format"]
        if self._target == STRING and not pattern.strip():
            raise ConfigException("format", pattern, "TimestampConverter requires format option "
                                                     "to be specified when using string "
                                                     "timestamps")
        self._format: JavaDateFormat | None = compile_pattern(pattern) if pattern.strip() \
            else None
        path = parse_path(self._field, field_syntax_version(parsed), "field")
        self._trie = build_trie([(path, None)])
        self._structs = StructUpdater(
            self._trie, lambda s, v, _: self._convert(v, _kind_of_schema(s)),
            lambda s, _: (_OPTIONAL_SCHEMAS if s.optional else _SCHEMAS)[self._target],
            parsed["replace.null.with.default"])
        self._schemas = SchemaCache()

    def apply(self, record: R) -> R | None:
        value, schema = self._value(record), self._schema(record)
        if schema is None:
            if value is None or not self._field:
                return self._new_record(record, None, self._convert(value, None))
            updated = update_map(require_map(value, _PURPOSE), self._trie,
                                 lambda v, _: self._convert(v, None))
            return self._new_record(record, None, updated)
        if not self._field:
            new_schema = (_OPTIONAL_SCHEMAS if schema.optional else _SCHEMAS)[self._target]
            return self._new_record(record, new_schema,
                                    self._convert(value, _kind_of_schema(schema)))
        new_schema = self._schemas.get(schema, self._structs.schema)
        if value is None:
            return self._new_record(record, new_schema, None)
        struct = require_struct(value, _PURPOSE)
        return self._new_record(record, new_schema, self._structs.value(struct, new_schema))

    def _convert(self, value: Any, kind: str | None) -> Any:
        if value is None:
            return None
        try:
            return self._from_raw(self._to_raw(value, kind or _kind_of_value(value)))
        except (OverflowError, ValueError) as exc:
            raise DataException(f"Timestamp out of range: {value!r} ({exc})") from None

    def _to_raw(self, value: Any, kind: str) -> dt.datetime:
        """``value`` in representation ``kind`` as a UTC datetime."""
        if kind == STRING:
            if not isinstance(value, str):
                raise DataException(f"Expected string timestamp to be a String, but found "
                                    f"{type(value).__name__}")
            if self._format is None:
                raise DataException("TimestampConverter requires format option to be "
                                    "specified when using string timestamps")
            try:
                return self._format.parse(value)
            except (ValueError, OverflowError):
                raise DataException(f"Could not parse timestamp: value ({value}) does not match "
                                    f"pattern ({self._format.pattern})") from None
        if isinstance(value, int) and not isinstance(value, bool):  # Unix time or encoded
            if kind == UNIX:
                if self._precision in _UNITS_PER_MILLI:
                    millis = _truncating_div(value, _UNITS_PER_MILLI[self._precision])
                else:
                    millis = value * _MILLIS_PER_UNIT[self._precision]
                return from_epoch_millis(millis)
            return from_epoch_millis(value * 86_400_000 if kind == DATE else value)
        if kind == UNIX:
            raise DataException(f"Expected Unix timestamp to be a Long, but found "
                                f"{type(value).__name__}")
        if kind == TIME and isinstance(value, dt.time):
            return dt.datetime.combine(_EPOCH_DATE, value.replace(tzinfo=None), dt.UTC)
        if kind != TIME and isinstance(value, dt.datetime):
            return value.astimezone(dt.UTC) if value.tzinfo else value.replace(tzinfo=dt.UTC)
        if kind != TIME and isinstance(value, dt.date):
            return dt.datetime.combine(value, dt.time(0), dt.UTC)
        raise DataException(f"Expected {kind} to be a "
                            f"{'time' if kind == TIME else 'datetime or date'}, but found "
                            f"{type(value).__name__}")

    def _from_raw(self, raw: dt.datetime) -> Any:
        target = self._target
        if target == STRING:
            assert self._format is not None
            return self._format.format(raw)
        if target == UNIX:
            millis = epoch_millis(raw)
            if self._precision in _UNITS_PER_MILLI:
                return millis * _UNITS_PER_MILLI[self._precision]
            return _truncating_div(millis, _MILLIS_PER_UNIT[self._precision])
        if target == DATE:
            return raw.date()
        if target == TIME:
            return raw.time()
        return raw


class TimestampConverterKey(_TimestampConverter):
    """``org.apache.kafka.connect.transforms.TimestampConverter$Key``."""

    _KEY = True


class TimestampConverterValue(_TimestampConverter):
    """``org.apache.kafka.connect.transforms.TimestampConverter$Value``."""


# --- TimestampRouter --------------------------------------------------------------------

TIMESTAMP_ROUTER_CONFIG_DEF = (
    ConfigDef()
    .define("topic.format", Type.STRING, "${topic}-${timestamp}", Importance.HIGH,
            "Format string which can contain <code>${topic}</code> and "
            "<code>${timestamp}</code> as placeholders for the topic and timestamp, "
            "respectively.")
    .define("timestamp.format", Type.STRING, "yyyyMMdd", Importance.HIGH,
            "Format string for the timestamp that is compatible with "
            "<code>java.text.SimpleDateFormat</code>.",
            validator=_pattern_validator(lambda p: f"Invalid SimpleDateFormat pattern: {p}"))
)


class TimestampRouter(Transformation):
    """``org.apache.kafka.connect.transforms.TimestampRouter``."""

    def config(self) -> ConfigDef:
        return TIMESTAMP_ROUTER_CONFIG_DEF

    def configure(self, configs: Mapping[str, Any]) -> None:
        parsed = TIMESTAMP_ROUTER_CONFIG_DEF.parse(configs)
        self._topic_format: str = parsed["topic.format"]
        self._timestamp_format = compile_pattern(parsed["timestamp.format"])

    def apply(self, record: R) -> R | None:
        timestamp = record.timestamp
        if timestamp is None:
            raise DataException(f"Timestamp missing on record: {record!r}")
        try:
            formatted = self._timestamp_format.format(from_epoch_millis(timestamp))
        except OverflowError:
            raise DataException(f"Timestamp out of range: {timestamp}") from None
        topic = self._topic_format.replace("${topic}", record.topic)
        return record.new_record(  # type: ignore[return-value]
            topic=topic.replace("${timestamp}", formatted))
