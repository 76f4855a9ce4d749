"""Admin authorization: ``/admin/*`` writes only for the principals in
``rest.admin.principals`` (our setting).

**What is guarded.** Any ``/admin/*`` request but ``GET`` and ``HEAD`` (``PATCH``,
``DELETE``, ``POST`` of ``/admin/dynamic-worker-config``, ``PUT /admin/loggers/...``), and
the requests workers send each other (``POST /connectors/{c}/tasks``, ``PUT
/connectors/{c}/fence``) when they carry a principal. Reads, and the rest of Kafka's API,
are left to the REST extensions (authenticated or not, as configured). Without
``rest.admin.principals`` nothing is checked: the worker behaves exactly as without this
module.

**The principal** is :func:`worker.api.rest_extension.request_principal`'s: the user a REST
extension authenticated (the basic-auth user name), else the subject of the client
certificate the TLS handshake verified (``ssl.client.auth=required``, or ``requested`` and
a certificate presented), as an RFC 4514 string (``CN=admin,O=Example``). When both are
present the authenticated user applies, as Kafka's brokers take the SASL principal over
the certificate on ``SASL_SSL``: the certificate may be a proxy's or a forwarding worker's.

**The setting** lists principals separated by ``;`` — subjects contain commas — like
Kafka's ``super.users`` (a ``User:`` prefix is accepted and ignored). An entry with ``=`` is
a certificate subject and matches certificate principals only (compared as parsed
distinguished names, so spacing after commas does not matter); any other entry is a user
name and matches authenticated users only.

A refused request gets ``403`` with Connect's error body naming the principal, and is
logged at INFO.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from cryptography import x509

from worker.api.rest_extension import (
    CLIENT_CERT,
    ASGIApp,
    Principal,
    Receive,
    Scope,
    Send,
    is_internal_request,
    request_path,
    request_principal,
    send_error,
)
from worker.errors import ConfigError

log = logging.getLogger("worker.rest")  # the REST layer logs on one logger

ADMIN_PRINCIPALS_CONFIG = "rest.admin.principals"
_SEPARATOR = re.compile(r"\s*(?<!\\)([,+])\s*")
_READS = frozenset(("GET", "HEAD"))


@lru_cache(maxsize=256)
def normalized_subject(subject: str) -> str:
    """``subject`` (RFC 4514) as parsed and written again by ``cryptography``; ValueError if
    it is no distinguished name."""
    return x509.Name.from_rfc4514_string(_SEPARATOR.sub(r"\1", subject.strip())) \
        .rfc4514_string()


def is_admin_write(method: str, path: str) -> bool:
    """Whether ``method path`` changes something under ``/admin``."""
    return method not in _READS and (path == "/admin" or path.startswith("/admin/"))


@dataclass(frozen=True)
class AdminPrincipals:
    """The principals allowed to write under ``/admin`` (empty: everyone)."""

    users: frozenset[str] = field(default_factory=frozenset)
    subjects: frozenset[str] = field(default_factory=frozenset)

    def __bool__(self) -> bool:
        return bool(self.users or self.subjects)

    @classmethod
    def parse(cls, value: str) -> AdminPrincipals:
        """Read ``rest.admin.principals``; ConfigError naming it for a bad entry."""
        users: set[str] = set()
        subjects: set[str] = set()
        for raw in value.split(";"):
            entry = raw.strip().removeprefix("User:").strip()
            if not entry:
                continue
            if "=" not in entry:
                if "," in entry:
                    raise ConfigError(ADMIN_PRINCIPALS_CONFIG,
                                      f"'{entry}': separate principals with ';' (certificate "
                                      "subjects contain commas), as in Kafka's super.users")
                users.add(entry)
                continue
            try:
                subjects.add(normalized_subject(entry))
            except ValueError:
                raise ConfigError(ADMIN_PRINCIPALS_CONFIG,
                                  f"'{entry}' is not an RFC 4514 distinguished name "
                                  "(e.g. CN=admin,O=Example)") from None
        return cls(frozenset(users), frozenset(subjects))

    def allows(self, principal: Principal | None) -> bool:
        if principal is None:
            return False
        if principal.scheme != CLIENT_CERT:
            return principal.name in self.users
        try:
            return normalized_subject(principal.name) in self.subjects
        except ValueError:
            return False


def _refusal(method: str, path: str, principal: Principal | None) -> str:
    if principal is None:
        return (f"{method} {path} needs an admin principal ({ADMIN_PRINCIPALS_CONFIG}); the "
                "request has none (no authenticated user, no client certificate)")
    kind = "certificate subject" if principal.scheme == CLIENT_CERT else "user"
    return (f"{kind.capitalize()} '{principal.name}' may not {method} {path}: admin writes "
            f"are limited to {ADMIN_PRINCIPALS_CONFIG}")


class AdminAuthorizationMiddleware:
    """Answers 403 to guarded requests of principals not in ``principals``."""

    def __init__(self, app: ASGIApp, principals: AdminPrincipals) -> None:
        self.app = app
        self.principals = principals

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            method, path = scope["method"], scope["path"]
            internal = is_internal_request(method, request_path(scope))
            if internal or is_admin_write(method, path):
                principal = request_principal(scope)
                # Followers' internal requests over a listener that asks for no client
                # certificate carry no principal: let through (no request signing yet).
                if not (internal and principal is None) \
                        and not self.principals.allows(principal):
                    message = _refusal(method, path, principal)
                    log.info("Refused: %s", message)
                    await send_error(send, 403, message)
                    return
        await self.app(scope, receive, send)


# --- what /openapi.json says --------------------------------------------------------------

_ERROR_SCHEMA = {"$ref": "#/components/schemas/ErrorResponse"}


def _error(description: str) -> dict[str, Any]:
    return {"description": description,
            "content": {"application/json": {"schema": dict(_ERROR_SCHEMA)}}}


def document_security(document: dict[str, Any], *, authenticates: bool,
                      authorizes: bool) -> dict[str, Any]:
    """Add to an OpenAPI ``document`` the statuses security adds: 401 on every operation
    when a REST extension authenticates, 403 on guarded ones with admin principals."""
    for path, item in document.get("paths", {}).items():
        for method, operation in item.items():
            responses = operation.setdefault("responses", {})
            verb = method.upper()
            internal = is_internal_request(verb, path)
            if authenticates and not internal:
                responses.setdefault("401", _error(
                    "Authentication failed (a REST extension, rest.extension.classes)"))
            if authorizes and (internal or is_admin_write(verb, path)):
                responses.setdefault("403", _error(
                    f"The principal is not one of {ADMIN_PRINCIPALS_CONFIG}"))
    return document
