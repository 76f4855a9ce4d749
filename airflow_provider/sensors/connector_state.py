"""Wait for a connector state over Kafka Connect's REST API (no Kafka access needed)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from functools import cached_property
from typing import Any

from airflow.sdk import BaseSensorOperator, Context

from airflow_provider.exceptions import WAIT_OUT_ERRORS
from airflow_provider.hooks.kafka_connect import KafkaConnectHook
from airflow_provider.triggers.connector_state import ConnectorStateTrigger, status_event
from airflow_provider.utils.assets import TopicAssetsMixin
from airflow_provider.utils.connector_state import Verdict, check_target_state, evaluate_rest_status
from airflow_provider.utils.deferrable import resolve_deferrable
from airflow_provider.utils.events import ConnectorStateEventMixin, connector_failed
from airflow_provider.utils.links import ConnectorStatusLink


class KafkaConnectConnectorStateSensor(ConnectorStateEventMixin, TopicAssetsMixin,
                                       BaseSensorOperator):
    """Wait until ``connector`` (and, with ``wait_for_tasks``, every task) is in
    ``target_state``, reading ``GET /connectors/{c}/status``. Fails at once with the trace
    when the connector or a task is FAILED (unless FAILED is the target).

    With ``deferrable=True`` the wait runs in the triggerer (:class:`ConnectorStateTrigger`)
    and frees the worker slot. On success the event (``status``, ``state``, ``tasks``,
    ``type``) is returned to XCom and, with ``emit_topic_assets``, one Asset event per
    active topic is emitted.
    """

    template_fields: Sequence[str] = ("connector", "target_state")
    operator_extra_links = (ConnectorStatusLink(),)
    ui_color = "#d7e8f5"

    def __init__(self, *, connector: str, target_state: str = "RUNNING",
                 wait_for_tasks: bool = True,
                 kafka_connect_conn_id: str = "kafka_connect_default",
                 emit_topic_assets: bool = False,
                 deferrable: bool | None = None,
                 **kwargs: Any) -> None:
        self._add_topics_alias(connector, emit_topic_assets, kwargs)
        super().__init__(**kwargs)
        self.connector = connector
        self.target_state = target_state
        self.wait_for_tasks = wait_for_tasks
        self.kafka_connect_conn_id = kafka_connect_conn_id
        self.emit_topic_assets = emit_topic_assets
        self.deferrable = resolve_deferrable(deferrable)
        self._event: dict[str, Any] = {}

    @cached_property
    def hook(self) -> KafkaConnectHook:
        return KafkaConnectHook(kafka_connect_conn_id=self.kafka_connect_conn_id)

    def poke(self, context: Context) -> bool:
        target = check_target_state(self.target_state)
        try:
            status = self.hook.get_connector_status(self.connector)
        except WAIT_OUT_ERRORS as exc:
            self.log.info("Status of %s unavailable: %s", self.connector, exc)
            return False
        outcome = evaluate_rest_status(status, target, wait_for_tasks=self.wait_for_tasks)
        if outcome.verdict is Verdict.FAILED:
            raise connector_failed(self.connector, outcome.detail, outcome.trace)
        self.log.info("Connector %s: %s", self.connector, outcome.detail)
        if outcome.verdict is Verdict.MET:
            self._event = status_event(self.connector, target, status, outcome)
            return True
        return False

    def execute(self, context: Context) -> Any:
        if not self.deferrable:
            super().execute(context)
            return self.on_state_reached(context, self._event)
        if self.poke(context):
            return self.on_state_reached(context, self._event)
        self.defer(trigger=ConnectorStateTrigger(
            kafka_connect_conn_id=self.kafka_connect_conn_id, connector=self.connector,
            target_state=self.target_state, wait_for_tasks=self.wait_for_tasks,
            poll_interval=self.poke_interval, timeout=self.timeout),
            method_name="execute_complete", timeout=timedelta(seconds=self.timeout))

    def on_state_reached(self, context: Context, event: dict[str, Any]) -> dict[str, Any]:
        """Emit topic Assets (when RUNNING was awaited) and return the event for XCom:
        the same shape whether the wait was deferred or not."""
        if self.target_state.upper() == "RUNNING":
            self.emit_connector_topics(context, self.hook.get_connector_topics(self.connector))
        return event
