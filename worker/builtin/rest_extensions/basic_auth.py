"""HTTP basic authentication of the REST API: Kafka's ``BasicAuthSecurityRestExtension``.

Enabled with Kafka's setting, naming Kafka's class
(``org.apache.kafka.connect.rest.basic.auth.extension.BasicAuthSecurityRestExtension``) or
its alias::

    rest.extension.classes=BasicAuthSecurityRestExtension
    rest.basic.auth.credentials.file=/etc/connect/credentials.properties

Kafka finds the users through the JVM's JAAS configuration
(``-Djava.security.auth.login.config=connect_jaas.conf``, a ``KafkaConnect`` entry with a
``PropertyFileLoginModule`` and its ``file`` option). There is no JVM here: the users come
from ``rest.basic.auth.credentials.file`` (the same ``user=password`` file), or from that
same JAAS file named by ``rest.basic.auth.jaas.file``
(``worker.builtin.rest_extensions.basic_auth_credentials``).
Exactly one of the two is set; either may be a ``${file:...}``/``${dir:...}`` placeholder.

Every request needs valid credentials, except the requests workers send each other
(``worker.api.rest_extension.is_internal_request``), as in Kafka. A request without them
is answered ``401`` with Connect's error body and Kafka's message, ``User cannot access the
resource.``, plus a ``WWW-Authenticate: Basic`` challenge (which Kafka omits). The user
name becomes the request's principal (``rest.admin.principals``).

This module is a plugin: it uses ``worker.api`` and the properties parser only.
"""

from __future__ import annotations

import base64
import binascii
import logging
from collections.abc import Mapping
from pathlib import Path

from worker import __version__
from worker.api import ConfigException, RestExtension, RestExtensionContext
from worker.api.rest_extension import (
    BASIC_AUTH,
    ASGIApp,
    Principal,
    Receive,
    Scope,
    Send,
    is_internal_request,
    request_path,
    send_error,
    set_principal,
)
from worker.builtin.rest_extensions.basic_auth_credentials import (
    JAAS_ENTRY,
    Credentials,
    CredentialsError,
    credentials_path_from_jaas,
)

log = logging.getLogger("worker.rest")  # the REST layer logs on one logger

CREDENTIALS_FILE_CONFIG = "rest.basic.auth.credentials.file"
JAAS_FILE_CONFIG = "rest.basic.auth.jaas.file"
REALM = "Kafka Connect"
#: Kafka's JaasBasicAuthFilter message for a request that failed authentication.
UNAUTHORIZED = "User cannot access the resource."
CHALLENGE = ("WWW-Authenticate", f'Basic realm="{REALM}", charset="UTF-8"')


def parse_basic(header: str | None) -> tuple[str, str] | None:
    """(user, password) of an ``Authorization: Basic ...`` header, as Kafka reads it (scheme
    case-insensitive, the user name up to the first ``:``, never empty); None otherwise."""
    if not header:
        return None
    scheme, _, encoded = header.strip().partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        decoded = base64.b64decode(encoded.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
    user, colon, password = decoded.partition(":")
    if not colon or not user:
        return None
    return user, password


def _authorization(scope: Scope) -> str | None:
    for name, value in scope.get("headers", ()):
        if name == b"authorization":
            return str(value.decode("latin-1"))
    return None


class BasicAuthMiddleware:
    """Answers 401 to requests without valid credentials; records the user otherwise."""

    def __init__(self, app: ASGIApp, credentials: Credentials) -> None:
        self.app = app
        self.credentials = credentials

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or is_internal_request(scope["method"],
                                                           request_path(scope)):
            await self.app(scope, receive, send)
            return
        given = parse_basic(_authorization(scope))
        if given is None or not self.credentials.authenticate(*given):
            # DEBUG, as Kafka: a mistyped password must not flood the log. No password.
            log.debug("Request %s %s failed authentication (user %s)", scope["method"],
                      scope.get("path"), given[0] if given else "-")
            await send_error(send, 401, UNAUTHORIZED, [CHALLENGE])
            return
        set_principal(scope, Principal(given[0], BASIC_AUTH))
        await self.app(scope, receive, send)


class BasicAuthSecurityRestExtension(RestExtension):
    """Kafka's basic-auth REST extension (see the module docstring)."""

    def __init__(self) -> None:
        self._credentials: Credentials | None = None

    def version(self) -> str:
        return __version__

    def configure(self, configs: Mapping[str, str]) -> None:
        direct = (configs.get(CREDENTIALS_FILE_CONFIG) or "").strip()
        jaas = (configs.get(JAAS_FILE_CONFIG) or "").strip()
        if direct and jaas:
            raise ConfigException(CREDENTIALS_FILE_CONFIG, None,
                                  f"set {CREDENTIALS_FILE_CONFIG} or {JAAS_FILE_CONFIG}, "
                                  "not both")
        if direct:
            # The path is not shown: it may be the resolved value of a placeholder.
            try:
                self._credentials = Credentials(Path(direct), CREDENTIALS_FILE_CONFIG)
            except CredentialsError as exc:
                raise ConfigException(CREDENTIALS_FILE_CONFIG, None, str(exc)) from None
        elif jaas:
            try:
                path = credentials_path_from_jaas(Path(jaas))
            except CredentialsError as exc:
                raise ConfigException(JAAS_FILE_CONFIG, None, str(exc)) from None
            label = f"{path} (the file of the {JAAS_ENTRY} entry in {JAAS_FILE_CONFIG})"
            try:
                self._credentials = Credentials(path, label)
            except CredentialsError as exc:
                raise ConfigException(JAAS_FILE_CONFIG, None,
                                      f"{exc}: {label}") from None
        else:
            raise ConfigException(CREDENTIALS_FILE_CONFIG, None,
                                  "BasicAuthSecurityRestExtension needs its users: set "
                                  f"{CREDENTIALS_FILE_CONFIG} (user=password lines) or "
                                  f"{JAAS_FILE_CONFIG} (Kafka's JAAS file)")
        log.info("Basic auth of the REST API: %d users from %s",
                 len(self._credentials.users), self._credentials.label)

    def register(self, context: RestExtensionContext) -> None:
        if self._credentials is None:
            raise RuntimeError("BasicAuthSecurityRestExtension.register before configure")
        context.add_middleware(BasicAuthMiddleware, credentials=self._credentials)
