"""Errors raised by the Kafka Connect hooks, operators, sensors and triggers.

Every error is typed by what happened (status code and, where Kafka Connect reuses a code,
the endpoint that returned it), so callers catch classes and never match message text.
All derive from Airflow's ``AirflowException``, as first-party providers' errors do, so
Airflow treats them as task failures (retried per ``retries``) and sensors'
``soft_fail`` / ``never_fail`` apply to them::

    AirflowException
    └── KafkaConnectError
        ├── KafkaConnectConfigError          the Airflow connection is unusable (bad URL, ...)
        │   └── UntrustedWorkerUrlError      refused to send the connection's credentials
        │                                    to a URL outside its scope
        ├── KafkaConnectTransportError       no HTTP response: refused, DNS, TLS, timeout
        │   └── TlsHandshakeError            no TLS handshake (or no certificate) at a URL
        ├── KafkaConnectApiError             an HTTP error response (status_code, error_code,
        │   │                                message)
        │   ├── BadRequestError              400: invalid config/offsets, wrong connector state
        │   ├── AuthenticationError          401: credentials missing or refused
        │   ├── ForbiddenError               403: not allowed (e.g. topic tracking reset off)
        │   ├── NotFoundError                404: unknown connector, task, plugin, logger
        │   ├── ConflictError                409
        │   │   ├── ConnectorAlreadyExistsError  409 from POST /connectors
        │   │   └── RebalanceInProgressError     409 anywhere else (retried by the hooks)
        │   └── ServerError                  5xx
        ├── MalformedResponseError (ValueError)  a 2xx answer without the documented shape
        ├── ConnectorFailedError             the connector or a task reached FAILED while
        │                                    waited on
        ├── InvalidConnectorConfigError (ValueError)  a config failed validation; nothing
        │                                    was changed
        ├── OffsetsShapeError (ValueError)   offsets given to alter do not have Kafka
        │                                    Connect's shape
        ├── KeystoreError (ValueError)       a keystore or CA cannot be read or issued
        ├── InvalidWorkerConfigError (ValueError)  a dynamic worker config change failed
        │                                    validation; nothing was changed
        ├── CertificateNotServedError (TimeoutError)  not every worker served the expected
        │                                    certificate in time
        ├── PluginPathCliError               connect-plugin-path failed (its exit code
        │                                    and stderr)
        ├── PluginPathOutputError (ValueError)  its --json output is not the documented
        │                                    shape
        ├── PluginsNotListedError (TimeoutError)  not every worker listed the synced plugins
        │                                    in time
        └── StateTimeoutError (TimeoutError) a wait for a connector state ran out of time

:data:`WAIT_OUT_ERRORS` are the errors every wait for a connector state outlasts.

Errors whose constructor takes more than a message override ``serialize()`` (Airflow's
way of rebuilding an ``AirflowException`` from ``cls(*args, **kwargs)``) with their own
arguments.
"""

from __future__ import annotations

from typing import Any

from airflow.sdk.exceptions import AirflowException


class KafkaConnectError(AirflowException):
    """Base class of every error of this provider."""


class KafkaConnectConfigError(KafkaConnectError):
    """The Airflow connection (or a hook argument) cannot be used as given."""


class UntrustedWorkerUrlError(KafkaConnectConfigError):
    """The hook refused to send a request, and with it the connection's credentials, to a
    URL outside their scope (another origin than the connection's, or http under an https
    connection, neither given nor allowed: see
    :mod:`airflow_provider.hooks.credential_scope`). Nothing was sent. ``urls`` are the
    refused URLs, without any user info or query; the message never holds credentials."""

    def __init__(self, message: str, *, urls: list[str] | None = None) -> None:
        self.detail = message
        self.urls = list(urls or [])
        super().__init__(message)

    def serialize(self) -> tuple[str, tuple[Any, ...], dict[str, Any]]:
        return _qualname(self), (self.detail,), {"urls": list(self.urls)}


class KafkaConnectTransportError(KafkaConnectError):
    """The request got no HTTP response (connection refused, DNS, TLS handshake, timeout)."""


class TlsHandshakeError(KafkaConnectTransportError):
    """A TLS handshake to read a served certificate failed (refused, timed out, the
    certificate was refused by the connection's TLS settings) or showed no certificate."""


def _qualname(exc: BaseException) -> str:
    return f"{type(exc).__module__}.{type(exc).__name__}"


class KafkaConnectApiError(KafkaConnectError):
    """Kafka Connect answered with an error status.

    ``error_code`` and ``message`` come from Connect's ``{"error_code", "message"}`` body
    when it has one.
    """

    def __init__(self, status_code: int, message: str, *, method: str = "", path: str = "",
                 error_code: int | None = None, body: Any = None) -> None:
        # Connect's status code, any int (proxies answer codes HTTPStatus lacks, e.g. 520);
        # AirflowException declares an HTTPStatus there, for Airflow's own API server only.
        self.status_code = status_code  # type: ignore[assignment]
        self.error_code = error_code if error_code is not None else status_code
        self.message = message
        self.method = method
        self.path = path
        self.body = body
        where = f"{method} {path} " if method else ""
        super().__init__(f"{where}returned {status_code}: {message}")

    def serialize(self) -> tuple[str, tuple[Any, ...], dict[str, Any]]:
        return _qualname(self), (self.status_code, self.message), {
            "method": self.method, "path": self.path, "error_code": self.error_code,
            "body": self.body}


class BadRequestError(KafkaConnectApiError):
    """400: invalid config or offsets, or the connector is in the wrong state."""


class AuthenticationError(KafkaConnectApiError):
    """401: credentials missing or refused."""


class ForbiddenError(KafkaConnectApiError):
    """403: the request is not allowed (e.g. ``PUT .../topics/reset`` while
    ``topic.tracking.allow.reset`` is false, or an authorizer refused it)."""


class NotFoundError(KafkaConnectApiError):
    """404: the connector, task, plugin or logger does not exist."""


class ConflictError(KafkaConnectApiError):
    """409."""


class ConnectorAlreadyExistsError(ConflictError):
    """409 from ``POST /connectors``: a connector of that name exists."""


class RebalanceInProgressError(ConflictError):
    """409 from any other endpoint: a rebalance or a concurrent config change; retryable."""


class ServerError(KafkaConnectApiError):
    """5xx."""


class MalformedResponseError(KafkaConnectError, ValueError):
    """Kafka Connect answered 2xx, but the body does not have the documented shape (a
    proxy's page, another service, an incompatible version). ``method`` and ``path`` name
    the request when the answer came from a hook."""

    def __init__(self, message: str, *, method: str = "", path: str = "") -> None:
        self.method = method
        self.path = path
        where = f"{method} {path} returned an unexpected answer: " if method else ""
        super().__init__(f"{where}{message}")
        self.detail = message

    def serialize(self) -> tuple[str, tuple[Any, ...], dict[str, Any]]:
        return _qualname(self), (self.detail,), {"method": self.method, "path": self.path}


class ConnectorFailedError(KafkaConnectError):
    """The connector or one of its tasks is FAILED while a state was being waited for."""

    def __init__(self, connector: str, message: str, *, trace: str | None = None) -> None:
        self.connector = connector
        self.trace = trace
        self.detail = message
        super().__init__(message if not trace else f"{message}\n{trace}")

    def serialize(self) -> tuple[str, tuple[Any, ...], dict[str, Any]]:
        return _qualname(self), (self.connector, self.detail), {"trace": self.trace}


class InvalidConnectorConfigError(KafkaConnectError, ValueError):
    """A connector config is invalid (no ``connector.class``, or Connect's validation
    reported errors, listed in ``errors`` as ``"key: message"``)."""

    def __init__(self, connector: str, errors: list[str]) -> None:
        self.connector = connector
        self.errors = errors
        super().__init__(f"connector {connector!r} config is invalid: " + "; ".join(errors))

    def serialize(self) -> tuple[str, tuple[Any, ...], dict[str, Any]]:
        return _qualname(self), (self.connector, list(self.errors)), {}


class OffsetsShapeError(KafkaConnectError, ValueError):
    """Offsets to alter do not have Kafka Connect's ``{"partition", "offset"}`` shape."""


class KeystoreError(KafkaConnectError, ValueError):
    """A keystore or CA file cannot be read, or a keystore cannot be issued as asked; the
    message names the file and the problem, never a password."""


class InvalidWorkerConfigError(KafkaConnectError, ValueError):
    """A change of the dynamic worker configuration failed validation (listed in
    ``errors`` as ``"key: message"``, which never hold secrets); nothing was changed."""

    def __init__(self, errors: list[str]) -> None:
        self.errors = errors
        super().__init__("the dynamic worker config change is invalid: " + "; ".join(errors))

    def serialize(self) -> tuple[str, tuple[Any, ...], dict[str, Any]]:
        return _qualname(self), (list(self.errors),), {}


class CertificateNotServedError(KafkaConnectError, TimeoutError):
    """Not every worker served the expected certificate in time. ``served`` maps each
    URL to the fingerprint it served last (or why no handshake succeeded)."""

    def __init__(self, message: str, *, served: dict[str, str] | None = None) -> None:
        self.detail = message
        self.served = dict(served or {})
        super().__init__(message)

    def serialize(self) -> tuple[str, tuple[Any, ...], dict[str, Any]]:
        return _qualname(self), (self.detail,), {"served": dict(self.served)}


class PluginPathCliError(KafkaConnectError):
    """``connect-plugin-path`` ended with a non-zero exit code (2: a usage error), or could
    not be run to its end. ``command`` is the command line (paths and flags only),
    ``stderr`` what it said, cut to its useful head and tail."""

    def __init__(self, command: str, returncode: int | None, stderr: str = "") -> None:
        self.command = command
        self.returncode = returncode
        self.stderr = stderr
        if returncode is None:
            status = "did not finish"
        elif returncode == 2:
            status = "exited with code 2 (usage error)"
        else:
            status = f"exited with code {returncode}"
        detail = f":\n{stderr}" if stderr else " (nothing on stderr)"
        super().__init__(f"{command} {status}{detail}")

    def serialize(self) -> tuple[str, tuple[Any, ...], dict[str, Any]]:
        return _qualname(self), (self.command, self.returncode, self.stderr), {}


class PluginPathOutputError(KafkaConnectError, ValueError):
    """``connect-plugin-path ... --json`` succeeded but printed something that is not the
    documented JSON (another tool of that name, an incompatible version)."""


class PluginsNotListedError(KafkaConnectError, TimeoutError):
    """Not every worker listed the synced plugin classes in ``GET /connector-plugins`` in
    time. ``missing`` maps each such worker URL to the classes it did not list (all of them
    when it could not be asked; the message says why)."""

    def __init__(self, message: str, *, missing: dict[str, list[str]] | None = None) -> None:
        self.detail = message
        self.missing = {url: list(classes) for url, classes in (missing or {}).items()}
        super().__init__(message)

    def serialize(self) -> tuple[str, tuple[Any, ...], dict[str, Any]]:
        return _qualname(self), (self.detail,), {"missing": dict(self.missing)}


class StateTimeoutError(KafkaConnectError, TimeoutError):
    """A connector did not reach the awaited state in time."""


#: What a wait for a connector state (sensor, trigger, operator) outlasts instead of
#: failing: the connector is not there yet (404: being created, or its worker restarts),
#: a rebalance is under way (409), or the worker cannot be reached at the moment.
WAIT_OUT_ERRORS: tuple[type[KafkaConnectError], ...] = (
    NotFoundError, RebalanceInProgressError, KafkaConnectTransportError)
