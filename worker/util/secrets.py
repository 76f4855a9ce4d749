"""Which config values are secrets, and keeping them out of messages, traces and logs.

One rule decides whether a config key holds a secret (:func:`is_secret`):

* a key whose definition types it ``PASSWORD`` (Kafka's ``ConfigDef.Type.PASSWORD``);
* a Kafka client key that Kafka types ``PASSWORD`` or librdkafka marks sensitive
  (:data:`SECRET_CLIENT_KEYS`), bare (``ssl.key.password``) or under the prefixes through
  which connect passes client and plugin settings on (``producer.``,
  ``consumer.override.``, ``value.converter.``, ``listeners.https.``,
  ``transforms.<alias>.``, ...; see :func:`unprefixed_names`);
* a key without a definition whose name says it holds a secret (``db.password``,
  ``api.secret``, ``auth.token``...; see :data:`SECRET_WORDS`).

Values hidden by the rule are shown as ``[hidden]``, as Kafka shows passwords.

Messages that quote values are scrubbed with :func:`redact`. The worker also remembers the
secret values it has seen (:data:`KNOWN_SECRETS`: worker properties, connector configs as
they are resolved, values of ``${provider:...}`` placeholders) and, once
:func:`install_log_redaction` ran, every log record's message, exception and stack text is
scrubbed of them before any handler sees it. Logging is process-wide, so this memory is
too; it is bounded, keeping the most recently seen values.

**Pieces.** Code that reads a value often splits and trims it first (Kafka's ``LIST``
type: comma-separated, each element trimmed; ``field:type`` mappings), then quotes one
piece or builds key names from it (``transforms.<alias>.type``). Scrubbing the whole value
misses those, so :func:`pieces` lists what a value may turn into and :class:`Redactor`
replaces every piece, whatever its case, in a text: answers use it for the resolved and
secret values of the request at hand; :data:`KNOWN_SECRETS` also remembers the elements
of the values it is given.

This module imports nothing of the worker: every layer, ``api`` included, may use it.
"""

from __future__ import annotations

import logging
import re
import threading
import traceback
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from typing import Any

HIDDEN = "[hidden]"

#: Client keys whose values are secrets: Kafka's ``PASSWORD`` keys of its clients
#: (``SslConfigs``, ``SaslConfigs``) and librdkafka's sensitive properties.
SECRET_CLIENT_KEYS = frozenset({
    # Kafka (Java clients, the REST listeners' ssl.* keys)
    "ssl.key.password", "ssl.keystore.password", "ssl.truststore.password",
    "ssl.keystore.key", "ssl.keystore.certificate.chain", "ssl.truststore.certificates",
    "sasl.jaas.config",
    # librdkafka
    "sasl.password", "ssl.key.pem", "sasl.oauthbearer.config",
    "sasl.oauthbearer.client.secret", "sasl.oauthbearer.assertion.private.key.passphrase",
    "sasl.oauthbearer.assertion.private.key.pem",
    # Schema Registry style converters
    "basic.auth.user.info", "bearer.auth.token", "bearer.auth.client.secret",
})

#: Prefixes under which client and plugin settings are passed on (worker and connector).
PASSTHROUGH_PREFIXES = (
    "producer.override.", "consumer.override.", "admin.override.",
    "producer.", "consumer.", "admin.",
    "key.converter.", "value.converter.", "header.converter.",
    "admin.listeners.https.", "listeners.https.",
)
_PLUGIN_PREFIX = re.compile(r"^(?:transforms|predicates)\.[^.]+\.")

#: Words in a key without a definition that mark its value as a secret.
SECRET_WORDS = ("password", "passwd", "secret", "token", "credential", "jaas",
                "private.key", "user.info")

#: Values shorter than this are not scrubbed from free text: replacing every occurrence
#: of a two-letter value would mangle messages while hiding next to nothing.
MIN_REDACTED_LENGTH = 6
#: The shortest piece of a value a :class:`Redactor` hides (answers: one request's text).
MIN_PIECE_LENGTH = 4
#: At most this many elements of one value are remembered by :data:`KNOWN_SECRETS`, so
#: that one long list cannot push every other secret out of its bounded memory.
MAX_REMEMBERED_ELEMENTS = 64

_PARTS = re.compile(r"[\s:=]+")


def unprefixed_names(name: str) -> list[str]:
    """``name`` and what remains of it after each pass-through prefix it starts with
    (``consumer.override.sasl.password`` → it, ``sasl.password``)."""
    names = [name]
    rest = name
    while True:
        match = _PLUGIN_PREFIX.match(rest)
        if match:
            rest = rest[match.end():]
        else:
            prefix = next((p for p in PASSTHROUGH_PREFIXES if rest.startswith(p)), None)
            if prefix is None:
                return names
            rest = rest[len(prefix):]
        names.append(rest)


def is_secret(name: str, type_name: str | None = None) -> bool:
    """Whether the value of config key ``name`` is a secret.

    ``type_name`` is the key's type where a definition exists (``"PASSWORD"``, ``"STRING"``,
    a ``Type`` member); None when there is none, and then the name alone decides.
    """
    if type_name is not None and str(type_name) == "PASSWORD":
        return True
    if any(candidate in SECRET_CLIENT_KEYS for candidate in unprefixed_names(name)):
        return True
    if type_name is not None:
        return False
    lowered = name.lower()
    return any(word in lowered for word in SECRET_WORDS)


def secret_values(config: Mapping[str, Any], types: Mapping[str, Any] | None = None
                  ) -> set[str]:
    """The values of ``config``'s secret keys (``types``: key → type, where defined)."""
    types = types or {}
    found: set[str] = set()
    for key, value in config.items():
        if value is not None and is_secret(key, types.get(key)):
            text = _text(value)
            if text:
                found.add(text)
    return found


def _text(value: Any) -> str:
    # A Password's str() is "[hidden]"; its real text is what may leak elsewhere.
    if isinstance(value, str):
        real = getattr(value, "value", None)
        return real if isinstance(real, str) else str.__str__(value)
    return str(value)


def _redactable(value: str) -> bool:
    return len(value.strip()) >= MIN_REDACTED_LENGTH and value != HIDDEN


def pieces(value: str, *, parts: bool = False, min_length: int = MIN_PIECE_LENGTH
           ) -> set[str]:
    """What ``value`` may be turned into before it is quoted: itself, trimmed, and each of
    its comma-separated elements trimmed (Kafka's ``LIST``); with ``parts``, also the
    pieces of each element between whitespace, ``:`` and ``=`` (``field:type`` mappings,
    ``key=value`` options). Only pieces of at least ``min_length`` characters."""
    found = {value, value.strip()}
    elements = [element.strip() for element in value.split(",")]
    found.update(elements)
    if parts:
        for element in elements:
            found.update(part.strip() for part in _PARTS.split(element))
    return {piece for piece in found
            if len(piece.strip()) >= min_length and piece.lower() not in HIDDEN}


class Redactor:
    """Replaces every piece (:func:`pieces`) of some values by ``[hidden]`` in a text,
    ignoring case, longest first; a redactor of no values returns texts unchanged.

    For answers built from one request's values: validation errors, key names made of
    list elements. Pieces are matched anywhere, so a piece that is also an ordinary word
    is hidden there too; that is the price of never showing part of a secret. Of the
    values in ``with_parts`` the parts of elements are hidden too (``pieces(parts=True)``).
    """

    def __init__(self, values: Iterable[str], *, with_parts: Iterable[str] = (),
                 min_length: int = MIN_PIECE_LENGTH) -> None:
        found: set[str] = set()
        for value in values:
            if value:
                found |= pieces(value, min_length=min_length)
        for value in with_parts:
            if value:
                found |= pieces(value, parts=True, min_length=min_length)
        longest_first = sorted(found, key=lambda piece: (-len(piece), piece))
        self._pattern = (re.compile("|".join(map(re.escape, longest_first)), re.IGNORECASE)
                         if longest_first else None)

    def __bool__(self) -> bool:
        return self._pattern is not None

    def __call__(self, text: str) -> str:
        return text if self._pattern is None else self._pattern.sub(HIDDEN, text)

    def __repr__(self) -> str:
        return "Redactor(...)"  # its pieces are secrets


def redact(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every occurrence of each secret replaced by ``[hidden]``, longest
    first (values shorter than :data:`MIN_REDACTED_LENGTH` are left alone)."""
    for secret in sorted((s for s in set(secrets) if _redactable(s)), key=len, reverse=True):
        text = text.replace(secret, HIDDEN)
    return text


class KnownSecrets:
    """The secret values this process has seen, to scrub from free text; thread-safe and
    bounded (``limit`` values, the least recently added forgotten first).

    A value is replaced by ``[hidden]``, or by the placeholder it was resolved from
    (:meth:`add_resolved`), which says where it came from without showing it.
    """

    def __init__(self, limit: int = 2048, max_chars: int = 1 << 20,
                 pinned_limit: int = 256) -> None:
        self._limit = limit
        self._max_chars = max_chars
        self._chars = 0
        self._lock = threading.Lock()
        self._values: OrderedDict[str, str] = OrderedDict()  # value -> its replacement
        # The worker's own secrets (its properties): never pushed out by what requests
        # bring (a caller validating many large passwords could flush the others).
        self._pinned: OrderedDict[str, str] = OrderedDict()
        self._pinned_limit = pinned_limit
        # What redact() reads, replaced whole on each change (read without the lock).
        self._snapshot: tuple[re.Pattern[str], dict[str, str]] | None = None

    def add(self, values: Iterable[str], replacement: str = HIDDEN) -> None:
        """Remember ``values`` and their comma-separated elements (:func:`pieces`)."""
        self._add(pair for value in values
                  for pair in _with_elements(value, replacement))

    def pin(self, values: Iterable[str]) -> None:
        """Remember the worker's own secret ``values`` (and their elements) for good: they
        are kept apart from, and never pushed out by, the values requests bring."""
        with self._lock:
            for value, _ in (pair for v in values for pair in _with_elements(v, HIDDEN)):
                if _redactable(value):
                    self._pinned[value] = HIDDEN
                    self._pinned.move_to_end(value)
                    while len(self._pinned) > self._pinned_limit:
                        self._pinned.popitem(last=False)
            self._rebuild()

    def add_resolved(self, substituted: Mapping[str, str]) -> None:
        """Remember the values of resolved placeholders (placeholder → value): a whole
        value shows as its placeholder, an element of it as ``[hidden]``."""
        self._add(pair for placeholder, value in substituted.items()
                  for pair in _with_elements(value, placeholder))

    def add_config(self, config: Mapping[str, Any], types: Mapping[str, Any] | None = None,
                   *, pin: bool = False) -> None:
        """Remember the values of ``config``'s secret keys (``pin``: the worker's own)."""
        if pin:
            self.pin(secret_values(config, types))
        else:
            self.add(secret_values(config, types))

    def _add(self, pairs: Iterable[tuple[str, str | None]]) -> None:
        """Remember each ``(value, replacement)``; a None replacement (an element of a
        list) is ``[hidden]`` and never replaces what a value is already known as."""
        with self._lock:
            changed = False
            for value, wanted in pairs:
                if not _redactable(value):
                    continue
                known = self._values.get(value)
                replacement = wanted if wanted is not None else known or HIDDEN
                if known == replacement:
                    self._values.move_to_end(value)
                    continue
                if known is None:
                    self._chars += len(value)
                self._values[value] = replacement
                self._values.move_to_end(value)
                changed = True
                # Bounded in count and in size: the pattern below is rebuilt on a change.
                while len(self._values) > self._limit or (
                        self._chars > self._max_chars and len(self._values) > 1):
                    forgotten, _ = self._values.popitem(last=False)
                    self._chars -= len(forgotten)
            if changed:
                self._rebuild()

    def _rebuild(self) -> None:
        """The pattern and replacements ``redact`` reads (under the lock)."""
        merged = {**self._values, **{v: r for v, r in self._pinned.items()
                                     if v not in self._values}}
        if not merged:
            self._snapshot = None
            return
        longest_first = sorted(merged, key=len, reverse=True)
        self._snapshot = (re.compile("|".join(map(re.escape, longest_first)), re.IGNORECASE),
                          merged)

    def redact(self, text: str) -> str:
        snapshot = self._snapshot
        if snapshot is None:
            return text
        pattern, values = snapshot
        return pattern.sub(lambda match: values.get(match.group(0), HIDDEN), text)

    @property
    def empty(self) -> bool:
        return self._snapshot is None

    def clear(self) -> None:
        with self._lock:
            self._values.clear()
            self._pinned.clear()
            self._chars = 0
            self._snapshot = None

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"KnownSecrets({len(self._values)} values)"


def _with_elements(value: str, replacement: str) -> Iterable[tuple[str, str | None]]:
    """``(value, replacement)``, then each element of a list value, to be ``[hidden]``
    unless known otherwise (None)."""
    yield value, replacement
    if "," in value:
        elements = [e.strip() for e in value.split(",")][:MAX_REMEMBERED_ELEMENTS]
        yield from ((element, None) for element in elements if element != value)


KNOWN_SECRETS = KnownSecrets()
"""What the worker's log redaction and status traces scrub (see the module docstring)."""


def redact_record(record: logging.LogRecord, known: KnownSecrets = KNOWN_SECRETS) -> None:
    """Scrub ``record`` of ``known`` secrets: its message (then formatted here, with no
    arguments left), its exception text and its stack text. Untouched when clean."""
    if known.empty:
        return
    try:
        message = record.getMessage()
    except Exception:  # noqa: BLE001 - a bad format is the handler's to report
        message = None
    if message is not None:
        clean = known.redact(message)
        if clean != message:
            record.msg, record.args = clean, None
    if record.exc_info and record.exc_info[0] is not None and not record.exc_text:
        text = "".join(traceback.format_exception(*record.exc_info)).rstrip("\n")
        clean = known.redact(text)
        if clean != text:
            record.exc_text = clean  # Formatter uses exc_text as it finds it
    if record.stack_info:
        record.stack_info = known.redact(record.stack_info)


_install_lock = threading.Lock()
_installed = False


def install_log_redaction() -> None:
    """Make every log record of this process pass :func:`redact_record` as it is created
    (through the log record factory, so every handler and every logger is covered).
    Idempotent."""
    global _installed
    with _install_lock:
        if _installed:
            return
        previous = logging.getLogRecordFactory()

        def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
            record = previous(*args, **kwargs)
            redact_record(record)
            return record

        logging.setLogRecordFactory(factory)
        _installed = True
