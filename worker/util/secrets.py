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

    def __init__(self, limit: int = 2048) -> None:
        self._limit = limit
        self._lock = threading.Lock()
        self._values: OrderedDict[str, str] = OrderedDict()  # value -> its replacement
        # What redact() reads, replaced whole on each change (read without the lock).
        self._snapshot: tuple[re.Pattern[str], dict[str, str]] | None = None

    def add(self, values: Iterable[str], replacement: str = HIDDEN) -> None:
        self._add((value, replacement) for value in values)

    def add_resolved(self, substituted: Mapping[str, str]) -> None:
        """Remember the values of resolved placeholders (placeholder → value)."""
        self._add((value, placeholder) for placeholder, value in substituted.items())

    def add_config(self, config: Mapping[str, Any], types: Mapping[str, Any] | None = None
                   ) -> None:
        """Remember the values of ``config``'s secret keys."""
        self.add(secret_values(config, types))

    def _add(self, pairs: Iterable[tuple[str, str]]) -> None:
        with self._lock:
            changed = False
            for value, replacement in pairs:
                if not _redactable(value):
                    continue
                if self._values.get(value) == replacement:
                    self._values.move_to_end(value)
                    continue
                self._values[value] = replacement
                self._values.move_to_end(value)
                changed = True
                while len(self._values) > self._limit:
                    self._values.popitem(last=False)
            if changed:
                longest_first = sorted(self._values, key=len, reverse=True)
                self._snapshot = (re.compile("|".join(map(re.escape, longest_first))),
                                  dict(self._values))

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
            self._snapshot = None

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"KnownSecrets({len(self._values)} values)"


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
