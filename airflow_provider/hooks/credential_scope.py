"""Where a REST hook may send the connection's credentials: the one place that decides.

Every request of a hook's HTTP client carries what the connection authenticates with —
the basic-auth ``login``/``password`` and, on https, the ``client_cert`` presented in the
TLS handshake. Most requests go to the connection's own worker (relative paths), but some
endpoints ask one worker of a cluster by its absolute URL (``get_worker(worker_url)``,
``list_connector_plugins(worker_url=...)``), and in discover mode the certificate-rotation
and plugin-manifest-sync operators take those URLs from ``GET /admin/cluster``: from what
the group's members advertise. Sending the credentials wherever a member points would let
any member (or whoever joins the group) collect the admin password, in clear if it
advertises an http URL.

A :class:`CredentialScope` admits a URL when its origin (scheme, host, port; host case,
IDNA and default ports normalized as httpx connects) is

1. the connection's own (its base URL; http under an https connection is another origin,
   a downgrade);
2. one of the URLs given to the hook explicitly (``trusted_worker_urls``: what a DAG
   author wrote as an operator's ``worker_urls``);
3. matched by the connection extra ``allowed_worker_urls`` (:class:`OriginPattern`); or
4. any URL, when the hook was told so knowingly (``allow_discovered_workers=True``; logged
   at WARNING once per origin).

Anything else raises :class:`~airflow_provider.exceptions.UntrustedWorkerUrlError` before a
byte is sent: the check is an httpx ``request`` event hook of the hook's client
(:func:`~airflow_provider.hooks._transport.client_kwargs`), which runs for every request
the client sends, redirects included (the client never follows them anyway). It applies
whether or not the connection has credentials, so a DAG behaves the same against a
cluster with and without authentication.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import httpx

from airflow_provider.exceptions import KafkaConnectConfigError, UntrustedWorkerUrlError

log = logging.getLogger(__name__)

DEFAULT_PORTS = {"http": 80, "https": 443}
#: ``scheme://host[:port][/]``; host ``*`` (any), ``*.suffix``, a name or an IP literal
#: (IPv6 in brackets); port ``*`` (any) or a number, else the scheme's default.
_PATTERN = re.compile(r"^(?P<scheme>[A-Za-z]+)://(?P<host>\*|\*\.[^/:@\[\]]+|\[[0-9A-Fa-f:.]+\]"
                      r"|[^/:@\[\]*]+)(?::(?P<port>\*|[0-9]{1,5}))?/?$")


@dataclass(frozen=True, order=True)
class Origin:
    """Scheme, host and port of a URL, normalized as httpx connects to them."""

    scheme: str
    host: str  # lowercase ASCII (IDNA-encoded), no trailing dot; IPv6 without brackets
    port: int

    @classmethod
    def of(cls, url: str | httpx.URL) -> Origin:
        """The origin of an absolute ``http(s)://`` URL (parsed by httpx, the parser of
        the request that follows: no second opinion on where it goes)."""
        try:
            parsed = url if isinstance(url, httpx.URL) else httpx.URL(str(url).strip())
        except (httpx.InvalidURL, TypeError, ValueError):
            raise KafkaConnectConfigError(f"{_shown(url)!r} is not a valid URL") from None
        if parsed.scheme not in DEFAULT_PORTS or not parsed.raw_host:
            raise KafkaConnectConfigError(f"{_shown(url)!r} is not an absolute http(s) URL")
        return cls(parsed.scheme, _host(parsed.raw_host.decode("ascii")),
                   parsed.port or DEFAULT_PORTS[parsed.scheme])

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}"


@dataclass(frozen=True)
class OriginPattern:
    """One entry of the connection extra ``allowed_worker_urls``: ``scheme://host[:port]``.

    ``host`` is a name or IP literal (exact, case-insensitive), ``*.example.com`` (any name
    below ``example.com``, not ``example.com`` itself) or ``*`` (any host); ``port`` a
    number, ``*`` (any port) or left out (the scheme's default, 80 or 443). No path, no
    user info: the scope is an origin.
    """

    scheme: str
    host: str | None  # None: any host
    subdomains: bool  # host is the suffix of "*.<host>"
    port: int | None  # None: any port
    text: str

    @classmethod
    def parse(cls, text: str) -> OriginPattern:
        entry = text.strip()
        match = _PATTERN.match(entry)
        scheme = (match.group("scheme").lower() if match else "")
        if match is None or scheme not in DEFAULT_PORTS:
            # The entry is echoed only when it cannot hold user info (a password).
            shown = repr(entry) if "@" not in entry else "an entry with user info"
            raise KafkaConnectConfigError(
                f"connection extra 'allowed_worker_urls': {shown} is not "
                "http(s)://host[:port] (host a name, *.domain or *; port a number or *)")
        host, port = match.group("host"), match.group("port")
        subdomains = host.startswith("*.")
        if host == "*":
            name = None
        else:
            name = Origin.of(f"{scheme}://{host.removeprefix('*.')}/").host
        number = None if port == "*" else int(port or DEFAULT_PORTS[scheme])
        if number is not None and not 0 < number < 65536:
            raise KafkaConnectConfigError(
                f"connection extra 'allowed_worker_urls': {entry!r} has no valid port")
        return cls(scheme, name, subdomains, number, entry)

    def matches(self, origin: Origin) -> bool:
        if origin.scheme != self.scheme or self.port not in (None, origin.port):
            return False
        if self.host is None:
            return True
        if self.subdomains:
            return origin.host.endswith("." + self.host)
        return origin.host == self.host


def parse_allowed_worker_urls(value: Any) -> tuple[str, ...]:
    """The connection extra ``allowed_worker_urls`` — a list, a JSON list, or a string of
    entries separated by commas or whitespace (as a form field holds it) — each entry
    checked (:class:`OriginPattern`)."""
    if value is None or value == "":
        return ()
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            try:
                value = json.loads(text)
            except json.JSONDecodeError:
                raise KafkaConnectConfigError(
                    "connection extra 'allowed_worker_urls' is not a valid JSON list") from None
        else:
            value = [part for part in re.split(r"[\s,]+", text) if part]
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise KafkaConnectConfigError(
            "connection extra 'allowed_worker_urls' must be a list of URL patterns")
    entries = tuple(entry.strip() for entry in value if entry.strip())
    for entry in entries:
        OriginPattern.parse(entry)
    return entries


class ScopedSettings(Protocol):
    """What :meth:`CredentialScope.of` reads of a connection's settings
    (:class:`airflow_provider.hooks.connection.ConnectionSettings`, which imports this module
    to check its extra: a protocol here, so the two form no import cycle)."""

    @property
    def base_url(self) -> str: ...

    @property
    def allowed_worker_urls(self) -> tuple[str, ...]: ...


class CredentialScope:
    """Which absolute URLs a hook's requests (and the credentials they carry) may go to.

    :param base_url: the connection's base URL (its origin is always in scope).
    :param allowed: the connection extra ``allowed_worker_urls`` (patterns).
    :param trusted: URLs given explicitly (their origins are in scope).
    :param allow_any: every http(s) URL is in scope (knowingly; warned once per origin).
    """

    def __init__(self, base_url: str, allowed: Iterable[str] = (),
                 trusted: Iterable[str] = (), allow_any: bool = False) -> None:
        self.origin = Origin.of(base_url)
        self.patterns = tuple(OriginPattern.parse(entry) for entry in allowed)
        self.trusted = frozenset(Origin.of(url) for url in trusted)
        self.allow_any = allow_any
        self._warned: set[Origin] = set()

    @classmethod
    def of(cls, settings: ScopedSettings, trusted: Iterable[str] = (),
           allow_any: bool = False) -> CredentialScope:
        """The scope of a connection's settings, with ``trusted`` URLs and ``allow_any``
        as the hook was given them."""
        return cls(settings.base_url, settings.allowed_worker_urls, trusted, allow_any)

    def reason(self, url: str | httpx.URL) -> str | None:
        """Why ``url`` is in scope (``"connection"``, ``"given"``, ``"allowed_worker_urls"``,
        ``"allow_discovered_workers"``), or ``None`` when it is not."""
        origin = Origin.of(url)
        if origin == self.origin:
            return "connection"
        if origin in self.trusted:
            return "given"
        if any(pattern.matches(origin) for pattern in self.patterns):
            return "allowed_worker_urls"
        return "allow_discovered_workers" if self.allow_any else None

    def check(self, url: str | httpx.URL, *, source: str = "") -> None:
        """Raise :class:`UntrustedWorkerUrlError` unless ``url`` is in scope; ``source``
        says where the URL came from (for the message)."""
        self.check_all([url], source=source)

    def check_all(self, urls: Sequence[str | httpx.URL], *, source: str = "") -> None:
        """:meth:`check` for every URL at once: the error names each refused one, so a
        discovered cluster is vetted before any of its members is asked anything."""
        refused: list[str] = []
        downgrade = False
        for url in urls:
            reason = self.reason(url)
            if reason is None:
                refused.append(_shown(url))
                downgrade |= (Origin.of(url).scheme, self.origin.scheme) == ("http", "https")
            elif reason != "connection":
                self._note(Origin.of(url), reason)
        if refused:
            raise UntrustedWorkerUrlError(self._message(refused, source, downgrade),
                                          urls=refused)

    def check_request(self, request: httpx.Request) -> None:
        """httpx ``request`` event hook of the sync client: runs before anything is sent."""
        self.check(request.url)

    async def acheck_request(self, request: httpx.Request) -> None:
        """The same for the async client (httpx awaits its event hooks)."""
        self.check(request.url)

    def _note(self, origin: Origin, reason: str) -> None:
        clear = origin.scheme == "http" and self.origin.scheme == "https"
        if origin in self._warned or not (clear or reason == "allow_discovered_workers"):
            return
        self._warned.add(origin)
        log.warning("Sending the connection's credentials to %s (admitted by %s)%s", origin,
                    reason, ": over plain http, in clear" if clear else "")

    def _message(self, refused: list[str], source: str, downgrade: bool) -> str:
        where = f" (from {source})" if source else ""
        clear = (" (http under an https connection: the password would travel in clear)"
                 if downgrade else "")
        return (f"refusing to send the connection's credentials to {', '.join(refused)}"
                f"{where}: outside the connection's origin {self.origin}{clear}, not given "
                "in worker_urls and not matched by the connection extra "
                "'allowed_worker_urls'. Nothing was sent. List the workers there (e.g. "
                "\"https://*.connect.example.com:8083\"), give them in worker_urls, or pass "
                "allow_discovered_workers=True to send the credentials to any worker URL "
                "knowingly")


def _host(name: str) -> str:
    return name.lower().rstrip(".")


def _shown(url: Any) -> str:
    """``url`` for a message: scheme, host, port and path; never user info or a query."""
    try:
        parsed = url if isinstance(url, httpx.URL) else httpx.URL(str(url).strip())
    except (httpx.InvalidURL, TypeError, ValueError):
        parsed = None
    if parsed is None or not parsed.raw_host:
        text = str(url)
        return "<a URL with user info>" if "@" in text else text[:200]
    return f"{parsed.scheme}://{parsed.netloc.decode('ascii', 'replace')}{parsed.path}"
