"""Connector lifecycle operators: apply a config, delete, pause, resume, stop, restart."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from airflow.sdk import Context

from airflow_provider.exceptions import (
    ConnectorAlreadyExistsError,
    InvalidConnectorConfigError,
    NotFoundError,
)
from airflow_provider.hooks.results import ConnectorStatus
from airflow_provider.operators._base import (
    DEFAULT_POLL_INTERVAL_S,
    DEFAULT_STATE_TIMEOUT_S,
    KafkaConnectBaseOperator,
    wait_for_state,
)
from airflow_provider.utils.events import ConnectorStateEventMixin, raise_for_event

INITIAL_STATES = ("RUNNING", "PAUSED", "STOPPED")
#: The create operator's result, kept in XCom while it waits deferred.
RESULT_XCOM_KEY = "connector_result"


def _as_connect_config(config: Mapping[str, Any]) -> dict[str, str]:
    """Connect configs are string maps: booleans as Java prints them, numbers as text."""
    def text(value: Any) -> str:
        if isinstance(value, bool):
            return "true" if value else "false"
        return str(value)

    return {str(key): text(value) for key, value in config.items() if value is not None}


class KafkaConnectCreateOrUpdateConnectorOperator(KafkaConnectBaseOperator):
    """Make the connector exist with exactly ``config`` (idempotent).

    Validates the config first (``PUT /connector-plugins/{class}/config/validate``) and
    fails listing every error before anything changes. Creates the connector when missing
    (``initial_state``: ``RUNNING``, ``PAUSED`` or ``STOPPED``, KIP-980), rewrites the config
    when it differs, and does nothing when it is already applied. Returns
    ``{"connector", "action": "created" | "updated" | "unchanged"}`` (never the config,
    which may hold secrets).

    With ``wait_for_state``, a created connector is then awaited in ``initial_state``
    (default RUNNING; with ``wait_for_tasks``, its tasks too when RUNNING — a connector
    created PAUSED or STOPPED has none yet) and an updated one that was RUNNING in RUNNING
    again — in the triggerer with ``deferrable``; the result then also holds ``"state"``.
    """

    template_fields: Sequence[str] = ("connector", "config", "initial_state")
    template_fields_renderers = {"config": "json"}

    def __init__(self, *, config: Mapping[str, Any], initial_state: str | None = None,
                 validate: bool = True, wait_for_state: bool = False,
                 wait_for_tasks: bool = True, state_timeout: float = DEFAULT_STATE_TIMEOUT_S,
                 poll_interval: float = DEFAULT_POLL_INTERVAL_S, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.config = config
        self.initial_state = initial_state
        self.validate = validate
        self.wait_for_state = wait_for_state
        self.wait_for_tasks = wait_for_tasks
        self.state_timeout = state_timeout
        self.poll_interval = poll_interval

    def execute(self, context: Context) -> dict[str, str]:
        desired = _as_connect_config(self.config)
        desired.pop("name", None)
        if "connector.class" not in desired:
            raise InvalidConnectorConfigError(self.connector, ["connector.class: missing"])
        initial = self.initial_state.upper() if self.initial_state else None
        if initial is not None and initial not in INITIAL_STATES:
            raise ValueError(f"initial_state must be one of {INITIAL_STATES}, got "
                             f"{self.initial_state!r}")
        if self.validate:
            validation = self.hook.validate_connector_config(
                desired["connector.class"], {**desired, "name": self.connector})
            if validation.error_count:
                raise InvalidConnectorConfigError(self.connector, validation.errors)
        current: dict[str, str] | None
        try:
            current = self.hook.get_connector_config(self.connector)
        except NotFoundError:
            current = None
        action = "unchanged"
        was_running = current is not None and self.wait_for_state and \
            self.hook.get_connector_status(self.connector).state == "RUNNING"
        if current is None:
            try:
                self.hook.create_connector(self.connector, desired, initial_state=initial)
                action = "created"
            except ConnectorAlreadyExistsError:  # created meanwhile: converge by updating
                current = {}
        if current is not None:
            current = {k: v for k, v in current.items() if k != "name"}
            if current != desired:
                self.hook.put_connector_config(self.connector, desired)
                action = "updated"
        self.log.info("Connector %s: %s", self.connector, action)
        result = {"connector": self.connector, "action": action}
        target = (initial or "RUNNING") if action == "created" else (
            "RUNNING" if action == "updated" and was_running else None)
        if self.wait_for_state and target is not None:
            # A connector created PAUSED has no tasks until it is resumed (KIP-980).
            tasks = self.wait_for_tasks and target == "RUNNING"
            if self.deferrable:
                context["ti"].xcom_push(key=RESULT_XCOM_KEY, value=result)
                self.defer_until(target, method_name="execute_complete", wait_for_tasks=tasks,
                                 timeout=self.state_timeout, poll_interval=self.poll_interval)
            wait_for_state(self.hook, self.connector, target, wait_for_tasks=tasks,
                           timeout=self.state_timeout, poll_interval=self.poll_interval,
                           log=self.log)
            result["state"] = target
        return self._done(context, result)

    def execute_complete(self, context: Context, event: dict[str, Any]) -> dict[str, str]:
        """Resume after the state wait: the result, or the wait's error."""
        raise_for_event(self.connector, event)
        result = dict(context["ti"].xcom_pull(key=RESULT_XCOM_KEY) or
                      {"connector": self.connector})
        result["state"] = str(event.get("target_state"))
        return self._done(context, result)

    def _done(self, context: Context, result: dict[str, str]) -> dict[str, str]:
        if self.emit_topic_assets:
            self.emit_active_topics(context)
        return result


class KafkaConnectDeleteConnectorOperator(KafkaConnectBaseOperator):
    """Delete the connector; a connector that is already gone is fine unless
    ``ignore_missing`` is false."""

    def __init__(self, *, ignore_missing: bool = True, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.ignore_missing = ignore_missing

    def execute(self, context: Context) -> bool:
        try:
            self.hook.delete_connector(self.connector)
        except NotFoundError:
            if not self.ignore_missing:
                raise
            self.log.info("Connector %s does not exist; nothing to delete", self.connector)
            return False
        self.log.info("Deleted connector %s", self.connector)
        return True


class _StateChangeOperator(ConnectorStateEventMixin, KafkaConnectBaseOperator):
    """Request a target state, then (``wait_for_state``) wait until it is reached — in the
    triggerer with ``deferrable``. Returns the connector's status body either way."""

    target_state: str = ""

    def __init__(self, *, wait_for_state: bool = True, wait_for_tasks: bool = True,
                 state_timeout: float = DEFAULT_STATE_TIMEOUT_S,
                 poll_interval: float = DEFAULT_POLL_INTERVAL_S, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.wait_for_state = wait_for_state
        self.wait_for_tasks = wait_for_tasks
        self.state_timeout = state_timeout
        self.poll_interval = poll_interval

    def request(self) -> None:
        raise NotImplementedError

    def execute(self, context: Context) -> dict[str, Any] | None:
        self.request()
        self.log.info("Requested %s for connector %s", self.target_state, self.connector)
        if not self.wait_for_state:
            return None
        if self.deferrable:
            self.defer_until(self.target_state, method_name="execute_complete",
                             wait_for_tasks=self.wait_for_tasks, timeout=self.state_timeout,
                             poll_interval=self.poll_interval)
        status = wait_for_state(self.hook, self.connector, self.target_state,
                                wait_for_tasks=self.wait_for_tasks, timeout=self.state_timeout,
                                poll_interval=self.poll_interval, log=self.log)
        return self._reached(context, status)

    def on_state_reached(self, context: Context, event: dict[str, Any]) -> dict[str, Any]:
        """After a deferred wait: the same XCom as without deferral (the status body)."""
        return self._reached(context, self.hook.get_connector_status(self.connector))

    def _reached(self, context: Context, status: ConnectorStatus) -> dict[str, Any]:
        if self.emit_topic_assets and self.target_state == "RUNNING":
            self.emit_active_topics(context)
        return status.to_dict()  # XCom: the status body as Kafka Connect sent it


class KafkaConnectPauseConnectorOperator(_StateChangeOperator):
    """``PUT /connectors/{c}/pause``, then wait for PAUSED."""

    target_state = "PAUSED"

    def request(self) -> None:
        self.hook.pause_connector(self.connector)


class KafkaConnectResumeConnectorOperator(_StateChangeOperator):
    """``PUT /connectors/{c}/resume``, then wait for RUNNING."""

    target_state = "RUNNING"

    def request(self) -> None:
        self.hook.resume_connector(self.connector)


class KafkaConnectStopConnectorOperator(_StateChangeOperator):
    """``PUT /connectors/{c}/stop`` (KIP-875), then wait for STOPPED."""

    target_state = "STOPPED"

    def request(self) -> None:
        self.hook.stop_connector(self.connector)


class KafkaConnectRestartConnectorOperator(ConnectorStateEventMixin, KafkaConnectBaseOperator):
    """``POST /connectors/{c}/restart?includeTasks=&onlyFailed=`` (KIP-745); returns the
    restart's status body (202) or ``None`` (204, connector only).

    With ``wait_for_state``, then waits until the connector (and, with ``wait_for_tasks``,
    every task) is RUNNING again — in the triggerer with ``deferrable`` — and returns the
    status body read then.
    """

    def __init__(self, *, include_tasks: bool = False, only_failed: bool = False,
                 wait_for_state: bool = False, wait_for_tasks: bool = True,
                 state_timeout: float = DEFAULT_STATE_TIMEOUT_S,
                 poll_interval: float = DEFAULT_POLL_INTERVAL_S, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.include_tasks = include_tasks
        self.only_failed = only_failed
        self.wait_for_state = wait_for_state
        self.wait_for_tasks = wait_for_tasks
        self.state_timeout = state_timeout
        self.poll_interval = poll_interval

    def execute(self, context: Context) -> dict[str, Any] | None:
        result = self.hook.restart_connector(self.connector, include_tasks=self.include_tasks,
                                             only_failed=self.only_failed)
        self.log.info("Restart of %s requested (include_tasks=%s, only_failed=%s)",
                      self.connector, self.include_tasks, self.only_failed)
        if not self.wait_for_state:
            return None if result is None else result.to_dict()
        if self.deferrable:
            self.defer_until("RUNNING", method_name="execute_complete",
                             wait_for_tasks=self.wait_for_tasks, timeout=self.state_timeout,
                             poll_interval=self.poll_interval)
        return wait_for_state(self.hook, self.connector, "RUNNING",
                              wait_for_tasks=self.wait_for_tasks, timeout=self.state_timeout,
                              poll_interval=self.poll_interval, log=self.log).to_dict()

    def on_state_reached(self, context: Context, event: dict[str, Any]) -> dict[str, Any]:
        return self.hook.get_connector_status(self.connector).to_dict()
