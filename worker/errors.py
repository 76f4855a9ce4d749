"""Domain errors of the worker, in one hierarchy rooted at :class:`WorkerError`.

The worker raises these; plugins never see them. What plugin code raises and catches is the
SPI's own root, ``worker.api.exceptions.ConnectException`` (Kafka's ``connect.errors``:
DataException, ConfigException, RetriableException); the runtime and the herder translate
one they catch into a task's or connector's failure, or into one of these.

REST maps these to ``{"error_code", "message"}`` responses in exactly one place
(``worker.rest.errors``); nothing else turns them into HTTP. Adapters translate
third-party exceptions (``KafkaException``, ``SQLAlchemyError``, ...) into these with
``raise ... from exc`` so the cause is kept.

::

    WorkerError                       500  base; any unexpected worker failure
    ├── NotFoundError                 404  unknown connector, task or plugin
    │   └── PluginNotFoundError       404  no plugin matches a class name or alias
    ├── AlreadyExistsError            409  duplicate create
    ├── BadRequestError               400  malformed or invalid input
    │   └── ConfigValidationError     400  a config failed validation (carries the errors)
    ├── RequestTimeoutError           408  a request's body arrived too slowly
    ├── PayloadTooLargeError          413  a request's body is over its route's limit
    ├── ConflictError                 409  the request races a rebalance / another write
    ├── ForbiddenError                403  a setting forbids the operation
    ├── RequestTargetError            409  another worker must serve this (REST forwards it)
    │   ├── NotLeaderError                     a write reached a follower (distributed mode)
    │   └── NotAssignedError                   the connector/task runs on another worker
    ├── RebalanceNeededError          409  a rebalance is pending (Kafka's message)
    ├── StorageError                  500  a backing store failed
    └── ConfigError                   400  a worker/connector property is invalid (at
                                           start-up: the CLI exits 1 naming the key)
"""

from __future__ import annotations


class WorkerError(Exception):
    """Base of every domain error; HTTP 500 at the REST edge."""

    status_code = 500


class NotFoundError(WorkerError):
    """The named connector, task or plugin does not exist."""

    status_code = 404


class PluginNotFoundError(NotFoundError):
    """No installed plugin matches the class name or alias."""


class AlreadyExistsError(WorkerError):
    """A connector with that name already exists."""

    status_code = 409


class BadRequestError(WorkerError):
    """The request is malformed or violates a rule of the API."""

    status_code = 400


class ConfigValidationError(BadRequestError):
    """A connector config failed validation.

    ``errors`` maps each offending config key to its error messages.
    """

    def __init__(self, message: str, errors: dict[str, list[str]] | None = None) -> None:
        super().__init__(message)
        self.errors = errors or {}


class RequestTimeoutError(WorkerError):
    """A request's body did not arrive within ``rest.request.body.timeout.ms``."""

    status_code = 408


class PayloadTooLargeError(WorkerError):
    """A request's body is larger than its route's limit (``rest.request.body.*``)."""

    status_code = 413


class ConflictError(WorkerError):
    """The operation conflicts with the worker's current state (e.g. a rebalance)."""

    status_code = 409


class ForbiddenError(WorkerError):
    """A worker setting forbids this operation."""

    status_code = 403


class RequestTargetError(ConflictError):
    """Another worker must serve this request: REST forwards it to ``forward_url``.

    Reaches a client (409) only when forwarding is impossible: no known target (e.g. during
    a rebalance) or the request was already forwarded (``?forward=false``).
    """

    def __init__(self, message: str, forward_url: str | None) -> None:
        super().__init__(message)
        self.forward_url = forward_url


class NotLeaderError(RequestTargetError):
    """A write reached a worker that is not the group leader."""


class NotAssignedError(RequestTargetError):
    """The connector or task runs on another worker."""


class RebalanceNeededError(ConflictError):
    """The worker's view is stale or a rebalance is under way (Kafka answers 409)."""

    MESSAGE = ("Cannot complete request momentarily due to stale configuration (typically "
               "caused by a concurrent config change)")

    def __init__(self, message: str = MESSAGE) -> None:
        super().__init__(message)


class StorageError(WorkerError):
    """A backing store (SQL, Kafka) failed; the original error is the ``__cause__``."""


class ConfigError(WorkerError):
    """A worker or connector property is invalid; the message names the key."""

    status_code = 400

    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"Invalid value for configuration {key}: {message}")
        self.key = key
