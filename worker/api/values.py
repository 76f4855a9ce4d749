"""Kafka Connect's ``Values``: the string form of Connect values, and parsing it back.

:func:`convert_to_string` (``worker.api.values_format``) writes a value as Kafka's
``Values.convertToString`` does.

:func:`parse_string` infers a schema and value from such text as Kafka's
``Values.parseString`` does: ``null``; ``true``/``false``; integers as the smallest of
INT8/INT16/INT32/INT64 that holds them (``1.0`` is INT8 1); other numbers as FLOAT32, FLOAT64
or Decimal; ISO dates, times and timestamps; ``[..]`` arrays and ``{..}`` maps whose elements
share a (widened numeric) schema; anything else is the whole text as a STRING. Like Kafka's,
the parser is lenient (``12 apples`` is a STRING, but ``12:apples`` is INT8 12).

Dates and times are UTC (Kafka uses the JVM's time zone, usually UTC). Python values:
``datetime.date``/``time``/``datetime`` (aware) and ``decimal.Decimal``.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import re
from typing import Any

from worker.api import DataException, Schema, SchemaAndValue, SchemaType
from worker.api.data import (
    BOOLEAN_SCHEMA,
    FLOAT32_SCHEMA,
    FLOAT64_SCHEMA,
    INT8_SCHEMA,
    INT16_SCHEMA,
    INT32_SCHEMA,
    INT64_SCHEMA,
    STRING_SCHEMA,
)
from worker.api.logical import (
    DATE_SCHEMA,
    DECIMAL_NAME,
    SCALE_PARAMETER,
    TIME_SCHEMA,
    TIMESTAMP_NAME,
    TIMESTAMP_SCHEMA,
    to_logical,
)
from worker.api.values_format import TEMPORAL_NAMES, convert_to_string
from worker.util.java_numbers import to_float32

__all__ = ["convert_to_string", "parse_string"]

_TRUE = SchemaAndValue(BOOLEAN_SCHEMA, True)
_FALSE = SchemaAndValue(BOOLEAN_SCHEMA, False)
_INT_BOUNDS = ((1 << 7, INT8_SCHEMA), (1 << 15, INT16_SCHEMA), (1 << 31, INT32_SCHEMA),
               (1 << 63, INT64_SCHEMA))
_JAVA_BLANK = "".join(map(chr, range(33)))  # String.trim() strips every char <= ' '


def decimal_schema(scale: int) -> Schema:
    """Kafka's ``Decimal.schema(scale)``."""
    return Schema(SchemaType.BYTES, name=DECIMAL_NAME, version=1,
                  parameters={SCALE_PARAMETER: str(scale)})


# --- text to values ---------------------------------------------------------------------

def parse_string(text: str | None) -> SchemaAndValue:
    """Kafka's ``Values.parseString``: the schema and value ``text`` stands for
    (``SchemaAndValue(None, None)`` for None and ``null``)."""
    if text is None:
        return SchemaAndValue(None, None)
    if not text:
        return SchemaAndValue(STRING_SCHEMA, text)
    parsed = _ValueParser(_Tokens(text)).parse(False)
    return parsed if parsed is not None else SchemaAndValue(None, None)


_DELIMITERS = frozenset(':,{}[]"')


class _Tokens:
    """Kafka's ``Values.Parser``: splits text at unescaped ``: , { } [ ] "`` (each its own
    token), with one token of look-ahead, marks and rewinds."""

    def __init__(self, original: str) -> None:
        self.original, self._end, self._index = original, len(original), 0
        self._next: str | None = None
        self.previous: str | None = None

    def position(self) -> int:
        return self._index

    def mark(self) -> int:
        return self._index - (len(self._next) if self._next is not None else 0)

    def rewind_to(self, position: int) -> None:
        self._index, self._next, self.previous = position, None, None

    def has_next(self) -> bool:
        return self._next is not None or self._index < self._end

    def next(self) -> str:
        if self._next is not None:
            self.previous, self._next = self._next, None
        else:
            self.previous = self._consume()
        return self.previous

    def next_n(self, count: int) -> str | None:
        """The text of the next ``count`` tokens; None (nothing consumed) if fewer."""
        start = self.mark()
        for _ in range(count):
            if not self.has_next():
                self.rewind_to(start)
                return None
            self.next()
        return self.original[start:self._index]

    def _consume(self) -> str:
        text, start, index = self.original, self._index, self._index
        escaped = False
        while index < self._end:
            char = text[index]
            if char in _DELIMITERS and not escaped:
                if start < index:  # the text before the delimiter first
                    self._index = index
                    return text[start:index]
                self._index = index + 1
                return char
            escaped = char == "\\" and not escaped  # a backslash escapes the next char
            index += 1
        self._index = index
        return text[start:index]

    def can_consume(self, expected: str) -> bool:
        """Consume the next token if, blanks skipped and trimmed, it is ``expected``."""
        if self._next is None:
            if not self.has_next():
                return False
            self._next = self._consume()
        while _is_blank(self._next) and self._index < self._end:
            self._next = self._consume()
        if self._next.strip(_JAVA_BLANK) == expected:
            self._next = None
            return True
        return False


def _is_blank(text: str) -> bool:
    return not text.strip(_JAVA_BLANK)


class _ValueParser:
    """Kafka's ``Values.ValueParser`` over one text."""

    def __init__(self, tokens: _Tokens) -> None:
        self.tokens = tokens

    def _single_token_literal(self, embedded: bool, literal: str) -> bool:
        # "true" is a boolean, "true}" a string: at top level a literal must be all there is.
        start = self.tokens.mark()
        if self.tokens.can_consume(literal) and (embedded or not self.tokens.has_next()):
            return True
        self.tokens.rewind_to(start)
        return False

    def parse(self, embedded: bool) -> SchemaAndValue | None:
        tokens = self.tokens
        if not tokens.has_next():
            return None
        if embedded and tokens.can_consume('"'):
            return self._quoted_string()
        if self._single_token_literal(embedded, "null"):
            return None
        if self._single_token_literal(embedded, "true"):
            return _TRUE
        if self._single_token_literal(embedded, "false"):
            return _FALSE
        start = tokens.mark()
        try:
            if tokens.can_consume("["):
                return self._array()
            if tokens.can_consume("{"):
                return self._map()
        except DataException:
            tokens.rewind_to(start)  # not an array or map after all: a string, maybe
        token = tokens.next()
        if _is_blank(token):
            return SchemaAndValue(STRING_SCHEMA, token)
        return self._token(embedded, token.strip(_JAVA_BLANK))

    def _token(self, embedded: bool, token: str) -> SchemaAndValue:
        first = token[0]
        digit = first.isdecimal()
        if digit:  # temporal types are stricter than numbers: tried first
            temporal = self._temporal_tokens(token)
            if temporal is not None:
                return temporal
        if digit or first in "+-":
            number = _parse_number(token)
            if number is not None:
                return number
        if embedded:
            raise DataException("Failed to parse embedded value")
        return SchemaAndValue(STRING_SCHEMA, self.tokens.original)

    def _quoted_string(self) -> SchemaAndValue:
        tokens = self.tokens
        parts: list[str] = []
        while tokens.has_next():
            if tokens.can_consume('"'):
                break
            parts.append(tokens.next())
        content = "".join(parts)
        # Quoted text may be a date or time; nothing else is taken out of quotes.
        return _parse_temporal(content) or SchemaAndValue(STRING_SCHEMA, content)

    def _array(self) -> SchemaAndValue:
        tokens = self.tokens
        values: list[Any] = []
        elements = _SchemaMerger()
        while tokens.has_next():
            if tokens.can_consume("]"):
                if elements.common is not None:
                    schema = Schema(SchemaType.ARRAY, value_schema=elements.common)
                    return SchemaAndValue(schema, [_convert_to(elements.common, v)
                                                   for v in values])
                return SchemaAndValue(Schema(SchemaType.ARRAY), values)  # all null
            if tokens.can_consume(","):
                raise DataException(f"Unable to parse an empty array element: "
                                    f"{tokens.original}")
            element = self.parse(True)
            elements.merge(element)
            values.append(element.value if element is not None else None)
            position = tokens.mark()
            if tokens.can_consume("]"):
                tokens.rewind_to(position)
            elif not tokens.can_consume(","):
                raise DataException("Array elements missing ',' delimiter")
        if tokens.previous == ",":
            raise DataException(f"Array is missing element after ',': {tokens.original}")
        raise DataException(f"Array is missing terminating ']': {tokens.original}")

    def _map(self) -> SchemaAndValue:
        tokens = self.tokens
        entries: dict[Any, Any] = {}
        keys, values = _SchemaMerger(), _SchemaMerger()
        while tokens.has_next():
            if tokens.can_consume("}"):
                key_schema, value_schema = keys.common, values.common
                if key_schema is None:  # every key null is impossible: no common schema
                    return SchemaAndValue(Schema(SchemaType.MAP), entries)
                if value_schema is not None:
                    entries = {k: _convert_to(value_schema, v) for k, v in entries.items()}
                return SchemaAndValue(
                    Schema(SchemaType.MAP, key_schema=key_schema, value_schema=value_schema),
                    {_convert_to(key_schema, k): v for k, v in entries.items()})
            if tokens.can_consume(","):
                raise DataException(f"Unable to parse a map entry with no key or value: "
                                    f"{tokens.original}")
            key = self.parse(True)
            if key is None or key.value is None:
                raise DataException(f"Map entry may not have a null key: {tokens.original}")
            if not tokens.can_consume(":"):
                raise DataException(f"Map entry is missing ':' at {tokens.position()} in "
                                    f"{tokens.original}")
            value = self.parse(True)
            try:
                entries[key.value] = value.value if value is not None else None
            except TypeError:  # an array or map as key: Python cannot hash it
                raise DataException(f"Map key is not hashable: {tokens.original}") from None
            tokens.can_consume(",")
            keys.merge(key)
            values.merge(value)
        if tokens.previous == ",":
            raise DataException(f"Map is missing element after ',': {tokens.original}")
        raise DataException(f"Map is missing terminating '}}': {tokens.original}")

    def _temporal_tokens(self, token: str) -> SchemaAndValue | None:
        # A time or timestamp is five tokens (an unescaped ':' is a delimiter): try those
        # first, then the token alone (a date).
        tokens = self.tokens
        position = tokens.mark()
        rest = tokens.next_n(4)
        if rest is not None:
            temporal = _parse_temporal(token + rest)
            if temporal is not None:
                return temporal
        tokens.rewind_to(position)
        return _parse_temporal(token)


class _SchemaMerger:
    """The schema common to a sequence of parsed values (Kafka's ``SchemaMerger``): numeric
    schemas widen; anything else must repeat; no common schema once two disagree."""

    def __init__(self) -> None:
        self.common: Schema | None = None
        self._compatible = True

    def merge(self, latest: SchemaAndValue | None) -> None:
        if latest is None or latest.schema is None or not self._compatible:
            return
        if self.common is None:
            self.common = latest.schema
        else:
            self.common = _merge_schemas(self.common, latest.schema)
            self._compatible = self.common is not None


_NUMERIC_ORDER = {SchemaType.INT8: 0, SchemaType.INT16: 1, SchemaType.INT32: 2,
                  SchemaType.INT64: 3, SchemaType.FLOAT32: 4, SchemaType.FLOAT64: 5}


def _merge_schemas(previous: Schema, latest: Schema) -> Schema | None:
    if previous.type is not latest.type:
        # Numeric types widen to the wider one (an integer type and a float: the float).
        if previous.type in _NUMERIC_ORDER and latest.type in _NUMERIC_ORDER:
            if _NUMERIC_ORDER[latest.type] > _NUMERIC_ORDER[previous.type]:
                return latest
            return previous
        return None
    if previous.optional == latest.optional:
        return previous if previous.optional else latest
    return previous if previous == latest else None


def _convert_to(schema: Schema, value: Any) -> Any:
    """A parsed value as a value of the common ``schema`` (Kafka's ``convertTo`` for the
    conversions merging can ask for: null checks, numeric widening, numbers and dates
    widened to a date/time type)."""
    if value is None:
        if schema.optional:
            return None
        raise DataException("Unable to convert a null value to a schema that requires a value")
    if schema.name is None and schema.type in _FLOATS:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise DataException(f"Unable to convert {value!r} to a number")
        return to_float32(float(value)) if schema.type is SchemaType.FLOAT32 else float(value)
    if schema.name in TEMPORAL_NAMES:
        if isinstance(value, int) and not isinstance(value, bool):
            return to_logical(schema, value)
        if schema.name == TIMESTAMP_NAME and isinstance(value, dt.date) \
                and not isinstance(value, dt.datetime):
            return dt.datetime.combine(value, dt.time(), dt.UTC)
    return value


_FLOATS = frozenset((SchemaType.FLOAT32, SchemaType.FLOAT64))


def _parse_number(token: str) -> SchemaAndValue | None:
    """Kafka's ``parseAsNumber``: the smallest integer type, else FLOAT32, FLOAT64 or a
    Decimal; None if ``token`` is not a Java BigDecimal literal."""
    if _BIG_DECIMAL.fullmatch(token) is None:
        return None
    number = decimal.Decimal(token)
    exponent = number.as_tuple().exponent
    assert isinstance(exponent, int)  # the pattern admits no NaN or Infinity
    scale = -exponent
    # Integral and within a Java long: the smallest integer type. (adjusted() first: an
    # exponent like 1E999999999 must not be expanded into an int.)
    if number.adjusted() < 19 and number == number.to_integral_value():
        integral = int(number)
        for bound, schema in _INT_BOUNDS:
            if -bound <= integral < bound:
                return SchemaAndValue(schema, integral)
    if scale != 0:
        as_double = float(number)
        as_float = to_float32(as_double)
        if not math.isinf(as_float):
            return SchemaAndValue(FLOAT32_SCHEMA, as_float)
        if not math.isinf(as_double):
            return SchemaAndValue(FLOAT64_SCHEMA, as_double)
    return SchemaAndValue(decimal_schema(scale), number)


_BIG_DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
# ISO 8601 as Kafka's patterns read them: yyyy-MM-dd, HH:mm:ss.SSS'Z' and the two joined by
# 'T'. Fixed lengths (10, 13, 24 characters); the fields are numbers, out-of-range ones roll
# over (SimpleDateFormat is lenient), and SSS is a count of milliseconds.
_DATE = re.compile(r"([0-9]+)-([0-9]+)-([0-9]+)")
_TIME = re.compile(r"([0-9]+):([0-9]+):([0-9]+)\.([0-9]+)Z")
_TIMESTAMP = re.compile(r"([0-9]+)-([0-9]+)-([0-9]+)T([0-9]+):([0-9]+):([0-9]+)\.([0-9]+)Z")
_DATE_LENGTH, _TIME_LENGTH, _TIMESTAMP_LENGTH = 10, 13, 24


def _parse_temporal(token: str) -> SchemaAndValue | None:
    token = token.replace("\\:", ":")  # colons escaped so as not to split the text
    try:
        if len(token) == _TIME_LENGTH and (match := _TIME.fullmatch(token)):
            millis = _millis_of_day(*match.groups())
            return SchemaAndValue(TIME_SCHEMA, to_logical(TIME_SCHEMA, millis))
        if len(token) == _TIMESTAMP_LENGTH and (match := _TIMESTAMP.fullmatch(token)):
            year, month, day, *time = match.groups()
            instant = dt.datetime.combine(_lenient_date(year, month, day), dt.time(),
                                          dt.UTC) + dt.timedelta(
                milliseconds=_millis_of_day(*time))
            return SchemaAndValue(TIMESTAMP_SCHEMA, instant)
        if len(token) == _DATE_LENGTH and (match := _DATE.fullmatch(token)):
            return SchemaAndValue(DATE_SCHEMA, _lenient_date(*match.groups()))
    except (OverflowError, ValueError):  # beyond what datetime holds
        return None
    return None


def _lenient_date(year: str, month: str, day: str) -> dt.date:
    months = int(year) * 12 + int(month) - 1
    first = dt.date(months // 12, months % 12 + 1, 1)
    return first + dt.timedelta(days=int(day) - 1)


def _millis_of_day(hour: str, minute: str, second: str, millis: str) -> int:
    return ((int(hour) * 60 + int(minute)) * 60 + int(second)) * 1000 + int(millis)
