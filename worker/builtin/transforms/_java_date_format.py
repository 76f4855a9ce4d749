"""Java ``SimpleDateFormat`` patterns, as Kafka's timestamp SMTs take them, in UTC.

Supported pattern letters (English names, as Java's root locale):

====  =========================================  ======================================
G     era                                        ``AD``
y     year (``yy``: two digits)                  ``2024``, ``24``
M, L  month (1-2 letters: number, 3: short       ``7``, ``07``, ``Jul``, ``July``
      name, 4+: full name)
d     day of month                               ``05``
D     day of year                                ``187``
E     day name (1-3 letters: short, 4+: full)    ``Fri``, ``Friday``
u     day number of week (1 = Monday)            ``5``
a     AM/PM marker                               ``PM``
H, k  hour of day 0-23, 1-24                     ``0``, ``24``
K, h  hour in am/pm 0-11, 1-12                   ``0``, ``12``
m, s  minute, second                             ``30``, ``55``
S     milliseconds (a number, as in Java)        ``978``
z     time zone (formats ``UTC``; 4+ letters:    ``UTC``
      ``Coordinated Universal Time``)
Z     RFC 822 zone                               ``+0000``
X     ISO 8601 zone (``X``, ``XX``, ``XXX``)     ``Z``
====  =========================================  ======================================

Text in single quotes is literal (``''`` is a quote). ``Y`` (week year), ``w``, ``W`` and
``F`` (week fields) are valid in Java but not supported here: ``compile_pattern`` raises
``UnsupportedPatternError``, and ``InvalidPatternError`` for what Java rejects too.

Formatting always writes UTC. Parsing, like Java's ``DateFormat.parse``, ignores text after
the pattern, accepts any number of digits for a numeric field unless the next field is
numeric too (``yyyyMMdd``), and is lenient: out-of-range values roll over (month 13 is
January of the next year). Zones parse from ``UTC``, ``GMT``, ``GMT+hh:mm``, ``+hhmm``,
``+hh:mm`` and ``Z`` (for ``X``); other zone names are not recognised. Day names and
``u`` are checked but, as in Java without week fields, do not change the date.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

_UTC = dt.UTC
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=_UTC)
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December")
_DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_JAVA_LETTERS = frozenset("GyYMLwWDdFEuaHkKhmsSzZX")
_UNSUPPORTED = {"Y": "week year", "w": "week in year", "W": "week in month",
                "F": "day of week in month"}
_NUMERIC = frozenset("yDduHkKhmsS")
_ZONE = r"(?:UTC|GMT(?:[+-][0-9]{1,2}(?::?[0-9]{2})?)?|[+-][0-9]{2}:?[0-9]{2})"
_ISO_ZONES = {1: r"(?:Z|[+-][0-9]{2})", 2: r"(?:Z|[+-][0-9]{4})", 3: r"(?:Z|[+-][0-9]{2}:[0-9]{2})"}


class InvalidPatternError(ValueError):
    """The pattern is not valid for Java's ``SimpleDateFormat`` either."""


class UnsupportedPatternError(ValueError):
    """The pattern uses a letter Java supports and this module does not."""


@dataclass(frozen=True)
class _Field:
    letter: str
    count: int

    def numeric(self) -> bool:
        return self.letter in _NUMERIC or (self.letter in "ML" and self.count < 3)


def _tokens(pattern: str) -> list[str | _Field]:
    tokens: list[str | _Field] = []
    i, n = 0, len(pattern)
    while i < n:
        char = pattern[i]
        if char == "'":
            if pattern.startswith("''", i):
                tokens.append("'")
                i += 2
                continue
            end, text = i + 1, []
            while True:
                if end >= n:
                    raise InvalidPatternError("Unterminated quote")
                if pattern[end] == "'":
                    if pattern.startswith("''", end):
                        text.append("'")
                        end += 2
                        continue
                    break
                text.append(pattern[end])
                end += 1
            tokens.append("".join(text))
            i = end + 1
        elif char.isascii() and char.isalpha():
            if char not in _JAVA_LETTERS:
                raise InvalidPatternError(f"Illegal pattern character '{char}'")
            if char in _UNSUPPORTED:
                raise UnsupportedPatternError(
                    f"pattern letter '{char}' ({_UNSUPPORTED[char]}) is not supported")
            end = i
            while end < n and pattern[end] == char:
                end += 1
            if char == "X" and end - i > 3:
                raise InvalidPatternError(f"invalid ISO 8601 format: length={end - i}")
            tokens.append(_Field(char, end - i))
            i = end
        else:
            tokens.append(char)
            i += 1
    return tokens


def compile_pattern(pattern: str) -> JavaDateFormat:
    return JavaDateFormat(pattern)


class JavaDateFormat:
    """A compiled pattern: ``format(datetime)`` and ``parse(text)``, both in UTC."""

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self._tokens = _tokens(pattern)
        self._fields = [t for t in self._tokens if isinstance(t, _Field)]
        self._counts = {f.letter: f.count for f in self._fields}
        self._regex = re.compile(self._parse_regex(), re.IGNORECASE)

    # --- formatting ---------------------------------------------------------------------

    def format(self, value: dt.datetime) -> str:
        value = value.astimezone(_UTC) if value.tzinfo else value.replace(tzinfo=_UTC)
        return "".join(t if isinstance(t, str) else _format_field(t, value)
                       for t in self._tokens)

    # --- parsing ------------------------------------------------------------------------

    def parse(self, text: str) -> dt.datetime:
        """The instant ``text`` denotes (aware, UTC); ValueError if it does not match."""
        match = self._regex.match(text)
        if match is None:
            raise ValueError(f"Unparseable date: \"{text}\"")
        values = {field.letter: match.group(f"f{i}") for i, field in enumerate(self._fields)}
        return _resolve(values, self._counts)

    def _parse_regex(self) -> str:
        parts = []
        tokens, fields = self._tokens, 0
        for index, token in enumerate(tokens):
            if isinstance(token, str):
                parts.append(re.escape(token))
                continue
            following = tokens[index + 1] if index + 1 < len(tokens) else None
            parts.append(f"(?P<f{fields}>{_field_regex(token, following)})")
            fields += 1
        return "".join(parts)


def _field_regex(field: _Field, following: str | _Field | None) -> str:
    letter, count = field.letter, field.count
    if field.numeric():
        abutting = isinstance(following, _Field) and following.numeric()
        return f"[0-9]{{{count}}}" if abutting else "[0-9]+"
    if letter in "ML":
        return "|".join(sorted(_MONTHS + tuple(m[:3] for m in _MONTHS), key=len, reverse=True))
    if letter == "E":
        return "|".join(sorted(_DAYS + tuple(d[:3] for d in _DAYS), key=len, reverse=True))
    if letter == "a":
        return "AM|PM"
    if letter == "G":
        return "AD"
    if letter == "X":
        return _ISO_ZONES[count]
    return f"Coordinated Universal Time|{_ZONE}"  # z, Z


def _format_field(field: _Field, value: dt.datetime) -> str:
    letter, count = field.letter, field.count
    if letter == "y":
        return f"{value.year % 100:02d}" if count == 2 else f"{value.year:0{count}d}"
    if letter in "ML":
        if count >= 4:
            return _MONTHS[value.month - 1]
        return _MONTHS[value.month - 1][:3] if count == 3 else f"{value.month:0{count}d}"
    if letter == "E":
        name = _DAYS[value.weekday()]
        return name if count >= 4 else name[:3]
    if letter == "z":
        return "Coordinated Universal Time" if count >= 4 else "UTC"
    if letter == "Z":
        return "+0000"
    if letter == "X":
        return "Z"
    if letter == "a":
        return "AM" if value.hour < 12 else "PM"
    if letter == "G":
        return "AD"
    number = {
        "d": value.day, "D": value.timetuple().tm_yday, "u": value.isoweekday(),
        "H": value.hour, "k": value.hour or 24, "K": value.hour % 12,
        "h": value.hour % 12 or 12, "m": value.minute, "s": value.second,
        "S": value.microsecond // 1000,
    }[letter]
    return f"{number:0{count}d}"


def _resolve(values: dict[str, str], counts: dict[str, int]) -> dt.datetime:
    year = int(values.get("y", "1970"))
    if "y" in values and counts["y"] <= 2 and len(values["y"]) == 2:
        year = _two_digit_year(year)
    if "M" in values or "L" in values:
        text = values.get("M") or values["L"]
        month = int(text) if text.isdigit() else _month_number(text)
    else:
        month = 1
    if "H" in values:
        hour = int(values["H"])
    elif "k" in values:
        hour = int(values["k"]) % 24
    else:
        hour = int(values.get("h", values.get("K", "0")))
        if "h" in values:
            hour %= 12
        if values.get("a", "AM").upper() == "PM":
            hour += 12
    # Lenient, like Java's default Calendar: out-of-range fields roll over.
    year += (month - 1) // 12
    month = (month - 1) % 12 + 1
    if "D" in values and "d" not in values and "M" not in values and "L" not in values:
        days = int(values["D"]) - 1
    else:
        days = int(values.get("d", "1")) - 1
    base = dt.datetime(year, month, 1, tzinfo=_UTC)
    offset = _offset_minutes(values.get("X") or values.get("Z") or values.get("z"))
    return base + dt.timedelta(days=days, hours=hour, minutes=int(values.get("m", "0")) - offset,
                               seconds=int(values.get("s", "0")),
                               milliseconds=int(values.get("S", "0")))


def _month_number(name: str) -> int:
    lowered = name.lower()
    return next(i for i, m in enumerate(_MONTHS, 1) if m.lower().startswith(lowered[:3]))


def _two_digit_year(two_digits: int) -> int:
    """Java's reading of ``yy``: within 80 years before and 20 years after now."""
    start = dt.datetime.now(_UTC).year - 80
    year = start // 100 * 100 + two_digits
    return year + 100 if year < start else year


def _offset_minutes(zone: str | None) -> int:
    if zone is None or zone.upper() in ("Z", "UTC", "GMT", "COORDINATED UNIVERSAL TIME"):
        return 0
    match = re.fullmatch(r"(?:GMT)?([+-])([0-9]{1,2}):?([0-9]{2})?", zone, re.IGNORECASE)
    if match is None:
        raise ValueError(f"Unparseable zone: \"{zone}\"")
    minutes = int(match.group(2)) * 60 + int(match.group(3) or 0)
    return -minutes if match.group(1) == "-" else minutes


def epoch_millis(value: dt.datetime) -> int:
    """Milliseconds since the epoch (naive values are UTC), rounded down."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=_UTC)
    delta = value - _EPOCH
    return delta.days * 86_400_000 + delta.seconds * 1000 + delta.microseconds // 1000


def from_epoch_millis(millis: int) -> dt.datetime:
    """The UTC instant ``millis`` after the epoch; OverflowError outside years 1-9999."""
    return _EPOCH + dt.timedelta(milliseconds=millis)
