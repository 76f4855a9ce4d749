"""The users of the basic-auth extension: a credentials file, found directly or through
Kafka's JAAS file.

**Credentials file** — the format of Kafka's ``PropertyFileLoginModule``: a
``java.util.Properties`` file of ``user=password`` lines. Only SHA-256 digests of the
passwords are kept in memory, compared in constant time; user names are not secret,
passwords never appear in a message, a log line or a repr. The file is checked for
changes at most once a second and read again when it changed, so users can be added or
rotated without a restart; a new version that cannot be used (unreadable, malformed,
empty) is logged and the previous users stay in force.

**JAAS file** — what Kafka's worker reads through ``-Djava.security.auth.login.config``::

    KafkaConnect {
        org.apache.kafka.connect.rest.basic.auth.extension.PropertyFileLoginModule required
        file="/etc/kafka/connect-credentials.properties";
    };

:func:`credentials_path_from_jaas` finds the ``file`` option of the ``KafkaConnect``
entry's ``PropertyFileLoginModule``. Other login modules (LDAP, ...) need a JVM and are
refused by name. Other entries (``KafkaServer`` with its passwords) are skipped and never
quoted.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import re
import threading
import time
from pathlib import Path

from worker.config.properties import parse_properties
from worker.errors import ConfigError

log = logging.getLogger("worker.rest")  # the REST layer logs on one logger

#: Kafka's JaasBasicAuthFilter.CONNECT_LOGIN_MODULE: the JAAS entry the worker reads.
JAAS_ENTRY = "KafkaConnect"
PROPERTY_FILE_LOGIN_MODULE = ("org.apache.kafka.connect.rest.basic.auth.extension."
                              "PropertyFileLoginModule")
#: How often the credentials file is checked for changes, at most.
RECHECK_S = 1.0

# JAAS tokens: a quoted string, a comment, punctuation, or a bare word.
_JAAS_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|/\*.*?\*/|//[^\n]*|[{};=]|[^\s{};="]+', re.S)
_UNQUOTE = re.compile(r"\\(.)", re.S)
_PUNCTUATION = frozenset("{};=")


class CredentialsError(ValueError):
    """A credentials or JAAS file that cannot be used; the message holds no secret."""


def _digest(password: str) -> bytes:
    return hashlib.sha256(password.encode("utf-8")).digest()


def read_credentials(path: Path) -> dict[str, bytes]:
    """User names to password digests from a ``user=password`` properties file."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise CredentialsError(f"cannot read the credentials file ({exc.strerror})") from None
    except UnicodeDecodeError:
        raise CredentialsError("the credentials file is not valid UTF-8") from None
    try:
        users = parse_properties(text, "credentials file")
    except ConfigError:
        # Not chained: the parser's message may quote part of a line, i.e. a password.
        raise CredentialsError("the credentials file is not a valid properties file (a "
                               "line without a user name, or a malformed \\u escape)") from None
    if not users:
        raise CredentialsError("the credentials file lists no user (Kafka would then let "
                               "every request through; connect-plane refuses it)")
    return {user: _digest(password) for user, password in users.items()}


class Credentials:
    """The users of one credentials file (see the module docstring).

    ``label`` says which file in messages and logs (a setting's name, or the path when it
    came from a JAAS file): a path resolved from a ``${...}`` placeholder is never shown.
    Raises CredentialsError when the file cannot be used at construction.
    """

    def __init__(self, path: Path, label: str, *, recheck_s: float = RECHECK_S) -> None:
        self.path = path
        self.label = label
        self._recheck_s = recheck_s
        self._lock = threading.Lock()
        self._signature = self._stat()
        self._users = read_credentials(path)
        self._checked = time.monotonic()
        self._rejected: tuple[int, int, int] | None = None
        # Unknown users are compared against this, so a miss costs what a hit costs.
        self._decoy = _digest(os.urandom(16).hex())

    def __repr__(self) -> str:
        return f"Credentials({self.label}, users={len(self._users)})"

    @property
    def users(self) -> frozenset[str]:
        return frozenset(self._users)

    def _stat(self) -> tuple[int, int, int] | None:
        try:
            stat = self.path.stat()
        except OSError:
            return None
        return stat.st_mtime_ns, stat.st_size, stat.st_ino

    def _refresh(self) -> None:
        now = time.monotonic()
        if now - self._checked < self._recheck_s:
            return
        self._checked = now
        signature = self._stat()
        if signature == self._signature or signature == self._rejected:
            return
        try:
            users = read_credentials(self.path) if signature is not None else None
        except CredentialsError as exc:
            users, reason = None, str(exc)
        else:
            reason = "the credentials file is gone"
        if users is None:
            self._rejected = signature
            log.warning("Basic auth keeps the users it had: the new version of %s cannot be "
                        "used: %s", self.label, reason)
            return
        self._users, self._signature, self._rejected = users, signature, None
        log.info("Basic auth reloaded %s: %d users", self.label, len(users))

    def authenticate(self, user: str, password: str) -> bool:
        """Whether ``password`` is ``user``'s, in time that does not depend on either."""
        with self._lock:
            self._refresh()
            expected = self._users.get(user)
        matched = hmac.compare_digest(_digest(password), expected or self._decoy)
        return matched and expected is not None


# --- JAAS ----------------------------------------------------------------------------------


def _tokens(text: str) -> list[tuple[str, int]]:
    """(token, line) pairs; comments dropped, quoted strings unquoted and marked by a
    leading ``"``."""
    found = []
    for match in _JAAS_TOKEN.finditer(text):
        token = match.group()
        if token.startswith(("/*", "//")):
            continue
        line = text.count("\n", 0, match.start()) + 1
        if token.startswith('"'):
            token = '"' + _UNQUOTE.sub(r"\1", token[1:-1])
        found.append((token, line))
    return found


def _entries(text: str) -> dict[str, list[tuple[str, dict[str, str]]]]:
    """JAAS entries: name → [(login module class, options)]; CredentialsError on bad
    syntax (naming the line only: other entries may hold passwords)."""
    tokens = _tokens(text)
    entries: dict[str, list[tuple[str, dict[str, str]]]] = {}
    pos = 0

    def take(expected: str | None = None) -> str:
        nonlocal pos
        if pos >= len(tokens):
            raise CredentialsError("the JAAS file ends in the middle of an entry")
        token, line = tokens[pos]
        if (expected is not None and token != expected) or (
                expected is None and token in _PUNCTUATION):
            wanted = f"'{expected}'" if expected else "a name"
            raise CredentialsError(f"syntax error in the JAAS file at line {line}: "
                                   f"{wanted} expected")
        pos += 1
        return token[1:] if token.startswith('"') else token

    while pos < len(tokens):
        name = take()
        take("{")
        modules: list[tuple[str, dict[str, str]]] = []
        while pos < len(tokens) and tokens[pos][0] != "}":
            module = take()
            take()  # the control flag (required, sufficient, ...): one module, no matter
            options: dict[str, str] = {}
            while pos < len(tokens) and tokens[pos][0] != ";":
                option = take()
                take("=")
                options[option] = take()
            take(";")
            modules.append((module, options))
        take("}")
        take(";")
        entries[name] = modules
    return entries


def credentials_path_from_jaas(path: Path) -> Path:
    """The ``file`` option of the ``KafkaConnect`` entry's ``PropertyFileLoginModule`` in
    the JAAS file at ``path``; CredentialsError saying what is missing or unsupported."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise CredentialsError(f"cannot read the JAAS file ({exc.strerror})") from None
    except UnicodeDecodeError:
        raise CredentialsError("the JAAS file is not valid UTF-8") from None
    modules = _entries(text).get(JAAS_ENTRY)
    if not modules:
        raise CredentialsError(f"the JAAS file has no {JAAS_ENTRY} entry with a login module")
    if len(modules) != 1 or modules[0][0] != PROPERTY_FILE_LOGIN_MODULE:
        names = ", ".join(module for module, _ in modules)
        raise CredentialsError(f"the {JAAS_ENTRY} entry must hold exactly one login module, "
                               f"{PROPERTY_FILE_LOGIN_MODULE} (found: {names}); other "
                               "login modules need a JVM")
    file = modules[0][1].get("file", "").strip()
    if not file:
        raise CredentialsError(f"the {JAAS_ENTRY} entry's PropertyFileLoginModule has no "
                               "file option (file=\"/path/to/credentials.properties\")")
    return Path(file)
