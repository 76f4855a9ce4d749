"""What the sync and async hooks share below the API: httpx clients and the retry policy.

Retried: :class:`RebalanceInProgressError` (409 outside ``POST /connectors``), and
requests that got no answer because the connection could not be made
(``ConnectError``, ``ConnectTimeout``: nothing reached the worker). A request that may have
reached the worker (``RemoteProtocolError``, ``ReadTimeout``, ...) is retried only when it
is idempotent (``GET``): repeating a ``POST .../restart`` could restart twice. TLS
failures (bad certificate) are never retried. Backoff is exponential with jitter, from
``retry_delay`` up to ``retry_max_delay``; each retry is logged at WARNING with method,
path and reason, never credentials or bodies.
"""

from __future__ import annotations

import logging
import random
import ssl
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx
from tenacity import AsyncRetrying, RetryCallState, Retrying, retry_if_exception
from tenacity.stop import stop_after_attempt

from airflow_provider import __version__
from airflow_provider.exceptions import (
    KafkaConnectConfigError,
    KafkaConnectTransportError,
    RebalanceInProgressError,
)
from airflow_provider.hooks._request import ApiRequest
from airflow_provider.hooks.connection import ConnectionSettings
from airflow_provider.hooks.credential_scope import CredentialScope
from airflow_provider.hooks.tls import TlsClientOptions, client_context

log = logging.getLogger(__name__)
T = TypeVar("T")

HEADERS = {
    "Accept": "application/json",
    "Content-Type": "application/json",
    "User-Agent": f"connect-plane-airflow-provider/{__version__}",
}
#: No answer, and the request never reached the worker: always safe to send again.
_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout)
#: No answer, but the worker may have acted on the request: retried for GET only.
_MAYBE_SENT = (httpx.RemoteProtocolError, httpx.ReadError, httpx.ReadTimeout,
               httpx.WriteError, httpx.WriteTimeout)


# --- clients --------------------------------------------------------------------------------


def ssl_config(settings: ConnectionSettings) -> ssl.SSLContext | bool:
    """httpx's ``verify`` for ``settings``: ``True`` (certifi bundle), ``False``, or an
    ``SSLContext`` with the CA bundle and/or client certificate (httpx 0.28 deprecates
    path strings and ``cert=``)."""
    if settings.verify and not settings.ca_bundle and not settings.client_cert:
        return True
    if not settings.verify and not settings.client_cert:
        return False
    return client_context(TlsClientOptions.from_settings(settings))


def client_kwargs(settings: ConnectionSettings, scope: CredentialScope | None = None, *,
                  asynchronous: bool = False) -> dict[str, Any]:
    """Keyword arguments of ``httpx.Client`` (``asynchronous``: ``httpx.AsyncClient``) for
    ``settings``. ``scope`` (default: the connection's origin and its
    ``allowed_worker_urls``) vets every request before it is sent, the credentials with it
    (basic auth here, the client certificate in ``verify``'s context)."""
    scope = scope if scope is not None else CredentialScope.of(settings)
    return {
        "base_url": settings.base_url,
        "auth": httpx.BasicAuth(*settings.auth) if settings.auth else None,
        "verify": ssl_config(settings),
        "timeout": httpx.Timeout(settings.timeout),
        "headers": HEADERS,
        # Connect never redirects; a redirect (e.g. http → https) should surface, and no
        # request (nor its credentials) may follow one to another origin.
        "follow_redirects": False,
        "event_hooks": {"request": [scope.acheck_request if asynchronous
                                    else scope.check_request]},
    }


def make_client(settings: ConnectionSettings,
                transport: httpx.BaseTransport | None = None,
                scope: CredentialScope | None = None) -> httpx.Client:
    """A sync client for ``settings`` (``transport``: tests' ``httpx.MockTransport``)."""
    return httpx.Client(transport=transport, **client_kwargs(settings, scope))


def make_async_client(settings: ConnectionSettings,
                      transport: httpx.AsyncBaseTransport | None = None,
                      scope: CredentialScope | None = None) -> httpx.AsyncClient:
    """An async client for ``settings`` (``transport``: tests' ``httpx.MockTransport``)."""
    return httpx.AsyncClient(transport=transport,
                             **client_kwargs(settings, scope, asynchronous=True))


def transport_error(request: ApiRequest[Any], exc: httpx.HTTPError
                    ) -> KafkaConnectTransportError:
    """The provider's error for a request that got no HTTP answer (raise it ``from exc``)."""
    detail = str(exc) or type(exc).__name__
    return KafkaConnectTransportError(
        f"{request.method} {request.path} got no answer: {type(exc).__name__}: {detail}")


def http_request(client: httpx.Client | httpx.AsyncClient, request: ApiRequest[Any]
                 ) -> httpx.Request:
    """``request`` as httpx's request on ``client`` (its base URL, auth and timeout)."""
    return client.build_request(request.method, request.path,
                                params=list(request.params) or None, json=request.json)


@contextmanager
def no_answer_errors(request: ApiRequest[Any]) -> Iterator[None]:
    """Turn httpx's transport errors while sending ``request`` into
    :class:`KafkaConnectTransportError` (chained, so the retry rules see the cause)."""
    try:
        yield
    except httpx.TransportError as exc:
        raise transport_error(request, exc) from exc


# --- retries --------------------------------------------------------------------------------


def _is_tls_failure(exc: BaseException) -> bool:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, ssl.SSLError):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


def is_retryable(request: ApiRequest[Any], exc: BaseException) -> bool:
    """Whether ``request`` may be sent again after failing with ``exc``."""
    if isinstance(exc, RebalanceInProgressError):
        return True
    if not isinstance(exc, KafkaConnectTransportError):
        return False
    cause = exc.__cause__
    if cause is None or _is_tls_failure(cause):
        return False
    if isinstance(cause, _NOT_SENT):
        return True
    return request.idempotent and isinstance(cause, _MAYBE_SENT)


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently the hooks repeat a failed request."""

    retry_limit: int = 5
    retry_delay: float = 1.0
    retry_max_delay: float = 30.0

    def __post_init__(self) -> None:
        if self.retry_limit < 0:
            raise KafkaConnectConfigError("retry_limit must be >= 0")
        if self.retry_delay < 0 or self.retry_max_delay < 0:
            raise KafkaConnectConfigError("retry_delay and retry_max_delay must be >= 0")

    def backoff(self, attempt: int) -> float:
        """Seconds before retry number ``attempt`` (1-based): exponential, capped, with
        "equal jitter" (half fixed, half random) so workers' clients do not retry in step."""
        ceiling = min(self.retry_max_delay, self.retry_delay * 2 ** (attempt - 1))
        return ceiling / 2 + random.uniform(0, ceiling / 2)

    def _options(self, request: ApiRequest[Any]) -> dict[str, Any]:
        def before_sleep(state: RetryCallState) -> None:
            exc = state.outcome.exception() if state.outcome else None
            if isinstance(exc, RebalanceInProgressError):
                reason = f"409 {exc.message}"
            else:  # httpx's messages name the host and the OS error, never credentials
                cause = exc.__cause__ if exc is not None else None
                reason = f"{type(cause or exc).__name__}: {cause or exc}"
            log.warning("Kafka Connect %s %s failed (%s); retry %d of %d in %.2f s",
                        request.method, request.path, reason, state.attempt_number,
                        self.retry_limit, state.upcoming_sleep)

        return {
            "retry": retry_if_exception(lambda exc: is_retryable(request, exc)),
            "stop": stop_after_attempt(self.retry_limit + 1),
            "wait": lambda state: self.backoff(state.attempt_number),
            "before_sleep": before_sleep,
            "reraise": True,
        }

    def call(self, request: ApiRequest[T], send: Callable[[ApiRequest[T]], T]) -> T:
        """``send(request)``, repeated per this policy; the last error is raised."""
        return Retrying(**self._options(request))(send, request)

    async def acall(self, request: ApiRequest[T],
                    send: Callable[[ApiRequest[T]], Awaitable[T]]) -> T:
        """``await send(request)``, repeated per this policy; the last error is raised."""
        return await AsyncRetrying(**self._options(request))(send, request)
