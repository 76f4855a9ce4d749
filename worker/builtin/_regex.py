"""Java regular expressions and replacement strings, as Kafka's SMTs take them.

Connector configs written for Kafka use Java syntax: named groups ``(?<name>...)`` and
replacement references ``$1`` / ``${name}`` with ``\\`` escaping. Python's ``re`` spells
these ``(?P<name>...)`` and ``\\g<1>``; this module translates them.
"""

from __future__ import annotations

import re
from typing import Any

from worker.api import ConfigException

# "(?<name>" but not the look-behinds "(?<=" and "(?<!"; skip escaped parentheses.
_JAVA_NAMED_GROUP = re.compile(r"(?<!\\)\(\?<([A-Za-z][A-Za-z0-9]*)>")


def java_regex(pattern: str, config_name: str) -> re.Pattern[str]:
    """Compile a Java regex; ConfigException naming ``config_name`` if it is invalid."""
    try:
        return re.compile(_JAVA_NAMED_GROUP.sub(r"(?P<\1>", pattern))
    except re.error as exc:
        raise ConfigException(config_name, pattern, f"Invalid regex: {exc}") from None


def valid_java_regex(name: str, value: Any) -> None:
    """A ConfigDef validator for Java regex values."""
    java_regex(str(value), name)


class JavaReplacement:
    """A Java ``Matcher.replaceFirst`` replacement string, parsed once."""

    def __init__(self, replacement: str, regex: re.Pattern[str], config_name: str) -> None:
        # Parts are literal strings or group references (an int index or a _Named name).
        self._parts: list[str | int | _Named] = []
        literal: list[str] = []
        i, n = 0, len(replacement)
        while i < n:
            char = replacement[i]
            if char == "\\":
                if i + 1 >= n:
                    raise ConfigException(config_name, replacement,
                                          "character to be escaped is missing")
                literal.append(replacement[i + 1])
                i += 2
                continue
            if char != "$":
                literal.append(char)
                i += 1
                continue
            ref, i = self._group_ref(replacement, i + 1, regex, config_name)
            if literal:
                self._parts.append("".join(literal))
                literal = []
            self._parts.append(ref)
        if literal:
            self._parts.append("".join(literal))

    @staticmethod
    def _group_ref(text: str, i: int, regex: re.Pattern[str],
                   config_name: str) -> tuple[int | str | _Named, int]:
        if i >= len(text):
            raise ConfigException(config_name, text, "Illegal group reference: group index is "
                                                     "missing")
        if text[i] == "{":
            end = text.find("}", i)
            name = text[i + 1:end] if end > 0 else ""
            if not name or name not in regex.groupindex:
                raise ConfigException(config_name, text, f"No group with name {{{name}}}")
            return _Named(name), end + 1
        if not text[i].isdigit():
            raise ConfigException(config_name, text, "Illegal group reference")
        # Java reads further digits only while they still name an existing group.
        number, i = int(text[i]), i + 1
        while i < len(text) and text[i].isdigit() and number * 10 + int(text[i]) <= regex.groups:
            number, i = number * 10 + int(text[i]), i + 1
        if number > regex.groups:
            raise ConfigException(config_name, text, f"No group {number}")
        return number, i

    def expand(self, match: re.Match[str]) -> str:
        out = []
        for part in self._parts:
            if type(part) is str:
                out.append(part)
            else:
                key = part.name if isinstance(part, _Named) else part
                out.append(match.group(key) or "")
        return "".join(out)


class _Named:
    """A ``${name}`` reference (kept apart from literal text, which is also a str)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name
