"""Config definitions: the keys a plugin accepts, with type, default, docs and validators.

Modelled on Kafka's ``ConfigDef`` so that ``/connector-plugins/{p}/config`` and
``.../config/validate`` can describe any plugin. A plugin declares its keys once::

    CONFIG_DEF = (
        ConfigDef()
        .define("file", Type.STRING, None, Importance.HIGH, "Source filename.")
        .define("batch.size", Type.INT, 2000, Importance.LOW, "Records per poll.",
                validator=at_least(1))
    )
    parsed = CONFIG_DEF.parse(props)    # raises ConfigException naming the key
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from worker.api.exceptions import ConfigException

NO_DEFAULT: Any = object()
"""Marker for a required key (Kafka's ``ConfigDef.NO_DEFAULT_VALUE``)."""

Validator = Callable[[str, Any], object]
"""Called with (name, parsed value); raises ConfigException when the value is invalid."""


class Type(StrEnum):
    BOOLEAN = "BOOLEAN"
    STRING = "STRING"
    INT = "INT"
    SHORT = "SHORT"
    LONG = "LONG"
    DOUBLE = "DOUBLE"
    LIST = "LIST"
    CLASS = "CLASS"
    PASSWORD = "PASSWORD"


class Importance(StrEnum):
    HIGH = "HIGH"
    MEDIUM = "MEDIUM"
    LOW = "LOW"


class Width(StrEnum):
    NONE = "NONE"
    SHORT = "SHORT"
    MEDIUM = "MEDIUM"
    LONG = "LONG"


class Password(str):
    """A password value; its ``repr`` and ``str`` never show the secret."""

    def __repr__(self) -> str:
        return "[hidden]"

    def __str__(self) -> str:
        return "[hidden]"

    @property
    def value(self) -> str:
        return str.__str__(self)


_INT_RANGES = {Type.SHORT: (-(2**15), 2**15 - 1), Type.INT: (-(2**31), 2**31 - 1),
               Type.LONG: (-(2**63), 2**63 - 1)}


def parse_type(name: str, value: Any, type_: Type) -> Any:
    """Convert a raw (usually string) value to ``type_``; raise ConfigException if it can't."""
    if value is None:
        return None
    try:
        if type_ is Type.BOOLEAN:
            if isinstance(value, bool):
                return value
            text = str(value).strip().lower()
            if text in ("true", "false"):
                return text == "true"
            raise ConfigException(name, value, "Expected value to be either true or false")
        if type_ in (Type.STRING, Type.CLASS):
            return value.strip() if isinstance(value, str) else str(value)
        if type_ is Type.PASSWORD:
            return Password(value)
        if type_ in _INT_RANGES:
            if isinstance(value, bool):
                raise ValueError
            text = str(value).strip()
            if "_" in text:  # int() accepts "1_000"; Kafka's parseInt/parseLong do not
                raise ValueError
            number = int(text)
            low, high = _INT_RANGES[type_]
            if not low <= number <= high:
                raise ConfigException(name, value, f"Not a number of type {type_.value}")
            return number
        if type_ is Type.DOUBLE:
            return float(str(value).strip())
        if type_ is Type.LIST:
            if isinstance(value, list | tuple):
                return [str(v).strip() for v in value]
            text = str(value).strip()
            return [part.strip() for part in text.split(",")] if text else []
    except ConfigException:
        raise
    except (TypeError, ValueError):
        raise ConfigException(name, value, f"Not a number of type {type_.value}") from None
    raise ConfigException(name, value, f"Unknown type {type_}")


@dataclass(frozen=True)
class ConfigKey:
    """One key of a ConfigDef."""

    name: str
    type: Type
    default: Any
    importance: Importance
    documentation: str
    validator: Validator | None = None
    group: str | None = None
    order_in_group: int = -1
    width: Width = Width.NONE
    display_name: str | None = None
    dependents: tuple[str, ...] = ()

    @property
    def required(self) -> bool:
        return self.default is NO_DEFAULT

    @property
    def default_string(self) -> str | None:
        """The default as Kafka renders it in ``ConfigKeyInfo.default_value``."""
        if self.default is NO_DEFAULT or self.default is None:
            return None
        if self.type is Type.LIST:
            return ",".join(self.default)
        if self.type is Type.BOOLEAN:
            return "true" if self.default else "false"
        return str(self.default)


@dataclass
class ConfigValue:
    """The outcome of validating one key: its value, recommended values and errors."""

    name: str
    value: Any = None
    recommended_values: list[Any] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    visible: bool = True


class ConfigDef:
    """An ordered set of ConfigKeys."""

    def __init__(self, keys: Mapping[str, ConfigKey] | None = None) -> None:
        self._keys: dict[str, ConfigKey] = dict(keys or {})

    def define(
        self,
        name: str,
        type_: Type,
        default: Any,
        importance: Importance,
        documentation: str,
        *,
        validator: Validator | None = None,
        group: str | None = None,
        order_in_group: int = -1,
        width: Width = Width.NONE,
        display_name: str | None = None,
        dependents: tuple[str, ...] = (),
    ) -> ConfigDef:
        if name in self._keys:
            raise ValueError(f"Configuration {name} is defined twice.")
        if default is not NO_DEFAULT and default is not None:
            default = parse_type(name, default, type_)
        self._keys[name] = ConfigKey(name, type_, default, importance, documentation, validator,
                                     group, order_in_group, width, display_name or name,
                                     dependents)
        return self

    def merge(self, other: ConfigDef) -> ConfigDef:
        """A new ConfigDef with this one's keys then ``other``'s (``other`` wins on clashes)."""
        return ConfigDef({**self._keys, **other._keys})

    @property
    def keys(self) -> dict[str, ConfigKey]:
        return dict(self._keys)

    def names(self) -> list[str]:
        return list(self._keys)

    def parse(self, props: Mapping[str, Any]) -> dict[str, Any]:
        """Parse and validate ``props``; raise ConfigException for the first bad key.

        Keys not defined here are passed through unchanged, as plugins may read extra keys.
        """
        parsed: dict[str, Any] = {k: v for k, v in props.items() if k not in self._keys}
        for key in self._keys.values():
            parsed[key.name] = self._parse_key(key, props)
        return parsed

    def validate(self, props: Mapping[str, Any]) -> dict[str, ConfigValue]:
        """Validate every key, collecting errors instead of raising."""
        results: dict[str, ConfigValue] = {}
        for key in self._keys.values():
            raw = props.get(key.name)
            # A rejected password must stay wrapped: ConfigValue's repr must not show it.
            if key.type is Type.PASSWORD and raw is not None and not isinstance(raw, Password):
                raw = Password(raw)
            outcome = ConfigValue(key.name, raw)
            try:
                outcome.value = self._parse_key(key, props)
            except ConfigException as exc:
                outcome.errors.append(str(exc))
            results[key.name] = outcome
        return results

    @staticmethod
    def _parse_key(key: ConfigKey, props: Mapping[str, Any]) -> Any:
        if key.name in props:
            value = parse_type(key.name, props[key.name], key.type)
        elif key.required:
            raise ConfigException.missing(key.name)
        else:
            value = key.default
        if key.validator is not None and value is not None:
            key.validator(key.name, value)
        return value


# --- validators -------------------------------------------------------------------------

def at_least(minimum: float) -> Validator:
    def check(name: str, value: Any) -> None:
        if value < minimum:
            raise ConfigException(name, value, f"Value must be at least {minimum}")
    return check


def in_range(minimum: float, maximum: float) -> Validator:
    def check(name: str, value: Any) -> None:
        if not minimum <= value <= maximum:
            raise ConfigException(
                name, value, f"Value must be no less than {minimum} and no more than {maximum}")
    return check


def one_of(*allowed: str, case_sensitive: bool = False) -> Validator:
    def check(name: str, value: Any) -> None:
        candidates = allowed if case_sensitive else [a.lower() for a in allowed]
        probe = _plain(value) if case_sensitive else _plain(value).lower()
        if probe not in candidates:
            raise ConfigException(name, value, f"String must be one of: {', '.join(allowed)}")
    return check


def _plain(value: Any) -> str:
    """The real text of a value (a Password's str() is "[hidden]")."""
    return value.value if isinstance(value, Password) else str(value)


def non_empty_string() -> Validator:
    def check(name: str, value: Any) -> None:
        if not _plain(value).strip():
            raise ConfigException(name, value, "String may not be empty")
    return check


def _iso_control(char: str) -> bool:
    # Java's Character.isISOControl: U+0000..U+001F and U+007F..U+009F.
    return char <= "\x1f" or "\x7f" <= char <= "\x9f"


def non_empty_string_without_control_chars() -> Validator:
    """Kafka's ``NonEmptyStringWithoutControlChars`` (the connector ``name``)."""
    def check(name: str, value: Any) -> None:
        text = _plain(value)
        if not text.strip():
            raise ConfigException(name, value, "String may not be empty")
        found = [str(ord(c)) for c in text if _iso_control(c)]
        if found:
            raise ConfigException(name, value, "String may not contain control sequences but "
                                               f"had the following ASCII chars: {', '.join(found)}")
    return check


#: Names a URL path cannot carry as one segment: ``/`` splits it, and clients and proxies
#: resolve ``.`` and ``..`` (even percent-encoded) as dot segments.
_DOT_SEGMENTS = (".", "..")


def connector_name() -> Validator:
    """The connector ``name``: Kafka's ``NonEmptyStringWithoutControlChars``, and a name
    every REST route can address (one path segment that survives the trip through clients
    and proxies). Kafka accepts the latter, and then cannot manage the connector
    (docs/compatibility.md)."""
    kafka_rule = non_empty_string_without_control_chars()

    def check(name: str, value: Any) -> None:
        kafka_rule(name, value)
        text = _plain(value).strip()
        if "/" in text or text in _DOT_SEGMENTS:
            raise ConfigException(name, value, "A connector name may not contain '/' nor be "
                                               "'.' or '..': the REST API could not address "
                                               "the connector in its URL paths")
    return check


def valid_regex() -> Validator:
    def check(name: str, value: Any) -> None:
        try:
            re.compile(value)
        except re.error as exc:
            raise ConfigException(name, value, f"Invalid regular expression: {exc}") from None
    return check
