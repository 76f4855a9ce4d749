"""The Herder: the only API the REST layer calls.

Every method is synchronous and may block on storage; REST calls it from a worker thread,
never from the event loop. Each method documents the domain errors it raises
(``worker.errors``); REST maps them to Kafka Connect's status codes in one place.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping

from worker.errors import BadRequestError
from worker.herder.models import (
    ClusterInfo,
    ConfigInfos,
    ConfigKeyInfo,
    ConnectorInfo,
    ConnectorOffset,
    ConnectorOffsets,
    ConnectorStateInfo,
    Created,
    HealthStatus,
    LoggerLevel,
    LoggerScope,
    Message,
    PluginInfo,
    ServerInfo,
    TaskInfo,
    TaskState,
    WorkerConfigValidation,
    WorkerInfo,
)
from worker.herder.request_signing import InternalRequestSignature
from worker.storage.base import TargetState, TaskId


class Herder(ABC):
    # --- lifecycle ---------------------------------------------------------------------

    @abstractmethod
    def start(self) -> None:
        """Start stores and the worker; start every stored connector in its target state."""

    @abstractmethod
    def stop(self) -> None:
        """Stop all connectors and tasks (bounded by the graceful shutdown timeout)."""

    @abstractmethod
    def server_info(self) -> ServerInfo:
        """Version, commit and Kafka cluster id for ``GET /``."""

    # --- reads -------------------------------------------------------------------------

    @abstractmethod
    def connectors(self) -> list[str]:
        """Names of all connectors, sorted."""

    @abstractmethod
    def connector_info(self, name: str) -> ConnectorInfo:
        """Raises NotFoundError."""

    @abstractmethod
    def connector_config(self, name: str) -> dict[str, str]:
        """Raises NotFoundError."""

    @abstractmethod
    def connector_status(self, name: str) -> ConnectorStateInfo:
        """Raises NotFoundError."""

    @abstractmethod
    def task_configs(self, name: str) -> list[TaskInfo]:
        """Raises NotFoundError."""

    @abstractmethod
    def task_status(self, task: TaskId) -> TaskState:
        """Raises NotFoundError (unknown connector or task)."""

    # --- writes ------------------------------------------------------------------------

    @abstractmethod
    def put_connector_config(self, name: str, config: Mapping[str, str], *,
                             allow_replace: bool,
                             initial_state: TargetState | None = None) -> Created:
        """Create (or, with ``allow_replace``, replace) a connector after full validation.

        Raises AlreadyExistsError (exists and not ``allow_replace``), BadRequestError /
        ConfigValidationError (invalid config; nothing is stored).
        """

    @abstractmethod
    def patch_connector_config(self, name: str, patch: Mapping[str, str | None]
                               ) -> ConnectorInfo:
        """Merge ``patch`` into the config (a None value removes the key), then validate.

        Raises NotFoundError, ConfigValidationError.
        """

    @abstractmethod
    def delete_connector(self, name: str) -> None:
        """Stop and remove a connector, its tasks, statuses and topics. Raises NotFoundError."""

    @abstractmethod
    def restart_connector(self, name: str, *, include_tasks: bool = False,
                          only_failed: bool = False) -> ConnectorStateInfo | None:
        """Restart the connector (and, per the flags, tasks).

        Returns None for the plain restart (REST answers 204), else the state right after
        the restart was requested (REST answers 202). Raises NotFoundError.
        """

    @abstractmethod
    def restart_task(self, task: TaskId) -> None:
        """Raises NotFoundError."""

    @abstractmethod
    def pause_connector(self, name: str) -> None:
        """Raises NotFoundError."""

    @abstractmethod
    def resume_connector(self, name: str) -> None:
        """Raises NotFoundError."""

    @abstractmethod
    def stop_connector(self, name: str) -> None:
        """KIP-875 STOPPED. Raises NotFoundError."""

    def verify_internal_request(self, signature: InternalRequestSignature | None) -> None:
        """Check an internal request's signature (KIP-507) before acting on it; None: the
        request carries none. Distributed mode raises BadRequestError (no signature, an
        algorithm not permitted), ForbiddenError (a wrong or stale signature) or a 503
        (no session key read yet). A standalone worker takes no internal requests and
        checks nothing, as Kafka's standalone herder ignores the signature."""

    def put_task_configs(self, name: str, configs: list[dict[str, str]]) -> None:
        """Distributed mode's internal write of task configs (the leader stores them).

        A standalone worker refuses with Kafka's message; Kafka answers 500 (its
        UnsupportedOperationException), but the request is the client's mistake: 400.
        """
        raise BadRequestError("Kafka Connect in standalone mode does not support externally "
                              "setting task configurations.")

    # --- plugins -----------------------------------------------------------------------

    @abstractmethod
    def validate_connector_config(self, config: Mapping[str, str]) -> ConfigInfos:
        """Validate without storing. Raises BadRequestError (no/unknown connector.class)."""

    @abstractmethod
    def plugins(self, connectors_only: bool = True) -> list[PluginInfo]:
        """Installed plugins."""

    @abstractmethod
    def plugin_config(self, plugin: str) -> list[ConfigKeyInfo]:
        """Config definition of a plugin. Raises NotFoundError."""

    # --- KIP-875 offsets ---------------------------------------------------------------

    @abstractmethod
    def connector_offsets(self, name: str) -> ConnectorOffsets:
        """Committed offsets: a source's from the offset store, a sink's from its consumer
        group. Raises NotFoundError."""

    @abstractmethod
    def alter_connector_offsets(self, name: str, offsets: list[ConnectorOffset]) -> Message:
        """Alter offsets of a STOPPED connector after its ``alter_offsets`` hook agreed.

        Raises NotFoundError, BadRequestError (not stopped; malformed offsets), and
        ConflictError where a rebalance or pending task configs forbid it. A rejected
        request changes nothing.
        """

    @abstractmethod
    def reset_connector_offsets(self, name: str) -> Message:
        """Reset all offsets of a STOPPED connector (idempotent; a sink's consumer group is
        deleted, refused while it has active members). Same errors as alter."""

    # --- KIP-558 active topics ---------------------------------------------------------

    @abstractmethod
    def connector_active_topics(self, name: str) -> list[str]:
        """Topics the connector's tasks used, sorted. Raises ForbiddenError
        (``topic.tracking.enable=false``). As in Kafka, an unknown (e.g. deleted)
        connector is no error: it has no topics."""

    @abstractmethod
    def reset_connector_active_topics(self, name: str) -> None:
        """Forget the connector's active topics (a no-op for an unknown connector, as in
        Kafka). Raises ForbiddenError (tracking or ``topic.tracking.allow.reset``
        disabled)."""

    # --- KIP-495 loggers, KIP-1017 health ----------------------------------------------

    @abstractmethod
    def loggers(self) -> dict[str, LoggerLevel]:
        """The root logger and every logger whose level was set explicitly."""

    @abstractmethod
    def logger_level(self, logger: str) -> LoggerLevel:
        """Raises NotFoundError for a logger that does not exist."""

    @abstractmethod
    def set_logger_level(self, logger: str, level: str, scope: LoggerScope
                         ) -> list[str] | None:
        """Set ``logger`` and its descendants; returns the loggers changed on this worker
        (scope worker) or None (scope cluster: applied asynchronously everywhere). Raises
        NotFoundError ``invalid log level 'X'.`` for an unknown level (Kafka answers 404)."""

    @abstractmethod
    def health(self) -> HealthStatus:
        """Whether the worker finished starting and its herder thread is responsive
        (``healthy``, ``starting`` or ``unhealthy``, with Kafka's messages)."""

    # --- our extensions: the dynamic worker configuration, this worker, the cluster ----

    @abstractmethod
    def worker_config_overrides(self) -> dict[str, str]:
        """The dynamic worker-config overrides stored for the cluster (raw values; the
        static worker properties are not included)."""

    @abstractmethod
    def validate_worker_config(self, patch: Mapping[str, str | None]
                               ) -> WorkerConfigValidation:
        """Validate, on this worker, the configuration ``patch_worker_config(patch)`` would
        produce (static properties + stored overrides + ``patch``, placeholders resolved
        here). Changes nothing. Raises BadRequestError (a key outside the whitelist)."""

    @abstractmethod
    def patch_worker_config(self, patch: Mapping[str, str | None]) -> dict[str, str]:
        """Merge ``patch`` into the overrides (None removes one), validate the result
        fully, store it, and apply it on this worker before answering; returns the
        overrides now in force. Raises BadRequestError (a key outside the whitelist),
        ConfigValidationError (invalid; nothing is stored), StorageError, and in a cluster
        NotLeaderError / RebalanceNeededError as connector writes do."""

    @abstractmethod
    def delete_worker_config(self, name: str) -> None:
        """Remove the override ``name`` (its static value is back in force), after
        validating what remains. Raises NotFoundError (no such override),
        ConfigValidationError, StorageError, NotLeaderError / RebalanceNeededError."""

    @abstractmethod
    def worker_info(self) -> WorkerInfo:
        """This worker's id, advertised URL and the dynamic configuration it applied."""

    @abstractmethod
    def cluster_info(self) -> ClusterInfo:
        """The leader's URL and every member's id and URL, as this worker knows them
        (standalone: itself, as leader)."""
