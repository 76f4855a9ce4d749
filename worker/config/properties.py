"""Reading connector and worker config files as Kafka's scripts do.

``.properties`` files follow ``java.util.Properties``: ``key=value``, ``key: value`` or
``key value``; ``#``/``!`` comments; a trailing backslash continues a line; ``\\uXXXX``,
``\\t``, ``\\n`` escapes. Connector files may also be JSON (Kafka 3.8+ accepts the body of
``POST /connectors`` or a flat config map).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from worker.errors import ConfigError

_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """Join continuation lines; return (first line number, logical line) pairs."""
    out: list[tuple[int, str]] = []
    pending: str | None = None
    start = 0
    # Only \n, \r and \r\n end a line in java.util.Properties (str.splitlines() would also
    # split at \f, \v, U+2028, ...; \f is a key/value separator there).
    for number, raw in enumerate(_LINE_BREAK.split(text), start=1):
        line = raw.lstrip(" \t\f")
        if pending is None:
            if not line or line[0] in "#!":
                continue
            start, pending = number, ""
        pending += line
        trailing = len(pending) - len(pending.rstrip("\\"))
        if trailing % 2 == 1:  # an odd number of backslashes escapes the newline
            pending = pending[:-1]
            continue
        out.append((start, pending))
        pending = None
    if pending is not None:
        out.append((start, pending))
    return out


def _unescape(text: str, key: str, where: str) -> str:
    chars: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch != "\\" or i + 1 == len(text):
            chars.append(ch)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "u":
            digits = text[i + 2:i + 6]
            if len(digits) != 4 or not all(c in "0123456789abcdefABCDEF" for c in digits):
                raise ConfigError(key, f"malformed \\uxxxx escape '\\u{digits}' at {where}")
            chars.append(chr(int(digits, 16)))
            i += 6
            continue
        chars.append(_ESCAPES.get(nxt, nxt))
        i += 2
    return "".join(chars)


def _split(line: str) -> tuple[str, str]:
    i = 0
    while i < len(line):
        ch = line[i]
        if ch == "\\":
            i += 2
            continue
        if ch in "=: \t\f":
            break
        i += 1
    key, rest = line[:i], line[i:]
    rest = rest.lstrip(" \t\f")
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(" \t\f")
    return key, rest


def parse_properties(text: str, source: str = "<properties>") -> dict[str, str]:
    """Parse ``java.util.Properties`` text. A later duplicate key wins, as in Java."""
    props: dict[str, str] = {}
    for number, line in _logical_lines(text):
        raw_key, raw_value = _split(line)
        where = f"{source}:{number}"
        key = _unescape(raw_key, where, where)
        if not key:
            # The line itself is not shown: what follows the '=' may be a secret.
            raise ConfigError(where, "line has no key (it starts with '=' or ':')")
        props[key] = _unescape(raw_value, key, where)
    return props


def load_properties(path: str | Path) -> dict[str, str]:
    """Read a ``.properties`` file; a missing/unreadable file raises ConfigError."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(str(path), f"cannot read file: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(str(path), "file is not valid UTF-8") from exc
    return parse_properties(text, str(path))


#: KIP-980 ``initial_state`` values of a create-connector request (case-insensitive).
INITIAL_STATES = ("RUNNING", "PAUSED", "STOPPED")


@dataclass(frozen=True)
class ConnectorFile:
    """A connector file of ``connect-standalone``: its config and, in the create-request
    form, its KIP-980 ``initial_state`` (upper case; None: the default, running)."""

    config: dict[str, str]
    initial_state: str | None = None


def load_connector_config(path: str | Path) -> dict[str, str]:
    """The config of a connector file (see :func:`load_connector_file`)."""
    return load_connector_file(path).config


def load_connector_file(path: str | Path) -> ConnectorFile:
    """Read a connector file, its format told by its content as Kafka's
    ``connect-standalone`` does (not by its name): a JSON object — a flat map, or a
    create-connector request ``{"name", "config", "initial_state"}`` — or else
    ``.properties``. Values become strings, as Kafka stores them."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(str(path), f"cannot read file: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(str(path), "file is not valid UTF-8") from exc
    if not text.lstrip().startswith("{") and file.suffix.lower() != ".json":
        return ConnectorFile(parse_properties(text, str(path)))
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ConfigError(str(path), f"not valid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(str(path), "expected a JSON object")
    if not isinstance(data.get("config"), dict):
        return ConnectorFile({str(k): _stringify(v) for k, v in data.items()})
    config = dict(data["config"])
    if "name" in data:
        inner = config.setdefault("name", data["name"])
        if inner != data["name"]:
            raise ConfigError(str(path), "Connector name configuration in 'config' "
                                         "doesn't match the one specified in 'name'")
    state = data.get("initial_state")
    if state is not None and (not isinstance(state, str) or state.upper() not in INITIAL_STATES):
        raise ConfigError(str(path), f"initial_state must be one of "
                                     f"{', '.join(INITIAL_STATES)}, not {state!r}")
    return ConnectorFile({str(k): _stringify(v) for k, v in config.items()},
                         state.upper() if state is not None else None)


def _stringify(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(_stringify(v) for v in value)
    return "" if value is None else str(value)
