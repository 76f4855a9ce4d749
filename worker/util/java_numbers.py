"""Java's numeric conversions as Kafka's Cast and MaskField SMTs apply them.

Connect's integer types are Java's fixed-width ``byte``/``short``/``int``/``long``: a value
narrowed to one of them wraps around (two's complement), a floating-point value is
truncated toward zero and saturates first. Strings parse as Java's ``Byte.parseByte`` ...
``Double.parseDouble`` and ``new BigDecimal(text)`` do (no whitespace inside, no ``_``), and
doubles print as ``Double.toString`` does (``1.0``, ``1.0E10``).
"""

from __future__ import annotations

import decimal
import math
import re
import struct

_INTEGER = re.compile(r"[+-]?[0-9]+")
# Java's FloatingDecimal grammar (decimal forms only; no hexadecimal floats).
_JAVA_FLOAT = re.compile(r"[+-]?(?:NaN|Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)"
                         r"(?:[eE][+-]?[0-9]+)?[fFdD]?)")
_JAVA_TRIMMED = "".join(map(chr, range(33)))  # String.trim(): every char <= ' '
_BIG_DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def wrap(value: int, bits: int) -> int:
    """``value`` narrowed to a signed ``bits``-wide integer (Java's ``(byte)`` etc.)."""
    half = 1 << (bits - 1)
    return ((value + half) & ((1 << bits) - 1)) - half


def float_to_int(value: float, bits: int) -> int:
    """Java's narrowing of a double: NaN is 0, out-of-range saturates to int (or long for
    64 bits), then narrows to ``bits``."""
    if math.isnan(value):
        return 0
    limit = 64 if bits == 64 else 32
    low, high = -(1 << (limit - 1)), (1 << (limit - 1)) - 1
    if math.isinf(value):
        return wrap(high if value > 0 else low, bits)
    return wrap(max(low, min(high, int(value))), bits)


def to_float32(value: float) -> float:
    """``value`` rounded to the nearest float (Java's ``(float)``), as a Python float."""
    try:
        result: float = struct.unpack("f", struct.pack("f", value))[0]
        return result
    except OverflowError:
        return math.copysign(math.inf, value)


def parse_int(text: str, bits: int) -> int:
    """Java's ``Byte.parseByte`` / ``Short.parseShort`` / ``Integer.parseInt`` /
    ``Long.parseLong``; ValueError when not a number of that width."""
    if _INTEGER.fullmatch(text) is None:
        raise ValueError(text)
    number = int(text)
    if wrap(number, bits) != number:
        raise ValueError(text)
    return number


def parse_float(text: str) -> float:
    """Java's ``Double.parseDouble`` (``Float.parseFloat`` is this, then ``to_float32``)."""
    stripped = text.strip(_JAVA_TRIMMED)
    if _JAVA_FLOAT.fullmatch(stripped) is None:
        raise ValueError(text)
    if stripped[-1] in "fFdD" and not stripped.endswith("Infinity"):
        stripped = stripped[:-1]
    return float(stripped)


def parse_big_decimal(text: str) -> decimal.Decimal:
    """Java's ``new BigDecimal(text)``; ValueError when it is not a decimal number."""
    if _BIG_DECIMAL.fullmatch(text) is None:
        raise ValueError(text)
    return decimal.Decimal(text)


def parse_boolean(text: str) -> bool:
    """Java's ``Boolean.parseBoolean``: "true" in any case, everything else false."""
    return text.lower() == "true"


def double_to_string(value: float, float32: bool = False) -> str:
    """Java's ``Double.toString`` (``Float.toString`` with ``float32``): the shortest digits
    that read back as the same value, plain for 1e-3 <= |v| < 1e7, else ``d.dddE±n``."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    digits, exponent = _shortest_digits(value, float32)
    sign = "-" if value < 0 else ""
    if 1e-3 <= abs(value) < 1e7:
        point = exponent + 1  # digits before the decimal point
        if point <= 0:
            return f"{sign}0.{'0' * -point}{digits}"
        whole = digits[:point].ljust(point, "0")
        fraction = digits[point:] or "0"
        return f"{sign}{whole}.{fraction}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{exponent}"


def _shortest_digits(value: float, float32: bool) -> tuple[str, int]:
    """The significant digits (no trailing zeros) and decimal exponent of ``abs(value)``."""
    magnitude = abs(value)
    if float32:
        for precision in range(1, 10):
            text = f"{magnitude:.{precision - 1}e}"
            if to_float32(float(text)) == magnitude:
                break
    else:  # repr has the shortest round-trip digits; Decimal puts them in scientific form
        text = f"{decimal.Decimal(repr(magnitude)):e}"
    mantissa, _, exp = text.partition("e")
    digits = mantissa.replace(".", "").rstrip("0") or "0"
    return digits, int(exp)
