"""Errors raised by the Kafka Connect hooks, operators, sensors and triggers.

Every error is typed by what happened (status code and, where Kafka Connect reuses a code,
the endpoint that returned it), so callers catch classes and never match message text::

    KafkaConnectError
    ├── KafkaConnectConfigError          the Airflow connection is unusable (bad URL, ...)
    ├── KafkaConnectTransportError       no HTTP response: refused, DNS, TLS, timeout
    ├── KafkaConnectApiError             an HTTP error response (status_code, error_code, message)
    │   ├── BadRequestError              400: invalid config/offsets, wrong connector state
    │   ├── AuthenticationError          401: credentials missing or refused
    │   ├── ForbiddenError               403: not allowed (e.g. topic tracking reset disabled)
    │   ├── NotFoundError                404: unknown connector, task, plugin, logger
    │   ├── ConflictError                409
    │   │   ├── ConnectorAlreadyExistsError  409 from POST /connectors
    │   │   └── RebalanceInProgressError     409 anywhere else (retried by the hooks)
    │   └── ServerError                  5xx
    ├── ConnectorFailedError             the connector or a task reached FAILED while waited on
    ├── InvalidConnectorConfigError      a config failed validation; nothing was changed
    ├── OffsetsShapeError                offsets given to alter do not have Kafka Connect's shape
    └── StateTimeoutError                a wait for a connector state ran out of time
"""

from __future__ import annotations

from typing import Any


class KafkaConnectError(Exception):
    """Base class of every error of this provider."""


class KafkaConnectConfigError(KafkaConnectError):
    """The Airflow connection (or a hook argument) cannot be used as given."""


class KafkaConnectTransportError(KafkaConnectError):
    """The request got no HTTP response (connection refused, DNS, TLS handshake, timeout)."""


class KafkaConnectApiError(KafkaConnectError):
    """Kafka Connect answered with an error status.

    ``error_code`` and ``message`` come from Connect's ``{"error_code", "message"}`` body
    when it has one.
    """

    def __init__(self, status_code: int, message: str, *, method: str = "", path: str = "",
                 error_code: int | None = None, body: Any = None) -> None:
        self.status_code = status_code
        self.error_code = error_code if error_code is not None else status_code
        self.message = message
        self.method = method
        self.path = path
        self.body = body
        where = f"{method} {path} " if method else ""
        super().__init__(f"{where}returned {status_code}: {message}")


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


class ConnectorFailedError(KafkaConnectError):
    """The connector or one of its tasks is FAILED while a state was being waited for."""

    def __init__(self, connector: str, message: str, *, trace: str | None = None) -> None:
        self.connector = connector
        self.trace = trace
        super().__init__(message if not trace else f"{message}\n{trace}")


class InvalidConnectorConfigError(KafkaConnectError, ValueError):
    """A connector config is invalid (no ``connector.class``, or Connect's validation
    reported errors, listed in ``errors`` as ``"key: message"``)."""

    def __init__(self, connector: str, errors: list[str]) -> None:
        self.connector = connector
        self.errors = errors
        super().__init__(f"connector {connector!r} config is invalid: " + "; ".join(errors))


class OffsetsShapeError(KafkaConnectError, ValueError):
    """Offsets to alter do not have Kafka Connect's ``{"partition", "offset"}`` shape."""


class StateTimeoutError(KafkaConnectError, TimeoutError):
    """A connector did not reach the awaited state in time."""
