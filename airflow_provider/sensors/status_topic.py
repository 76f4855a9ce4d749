"""Wait for a connector state read from Kafka Connect's status topic (needs Kafka access;
no REST polling)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from airflow.sdk import BaseSensorOperator, Context, PokeReturnValue

from airflow_provider.exceptions import KafkaConnectError, KafkaConnectTransportError
from airflow_provider.hooks.status_topic import StatusTopicReader
from airflow_provider.triggers.status_topic import StatusTopicTrigger
from airflow_provider.utils.assets import TopicAssetsMixin
from airflow_provider.utils.connector_state import Verdict, check_target_state
from airflow_provider.utils.deferrable import resolve_deferrable
from airflow_provider.utils.events import ConnectorStateEventMixin, connector_failed
from airflow_provider.utils.links import ConnectorStatusLink
from airflow_provider.utils.status_records import event_payload


class KafkaConnectStatusTopicSensor(ConnectorStateEventMixin, TopicAssetsMixin,
                                    BaseSensorOperator):
    """Wait until ``connector`` (and, with ``wait_for_tasks``, its tasks) is in
    ``target_state``, reading Connect's status topic — the records every worker writes, so
    it works against connect-plane and Apache Kafka Connect alike. The connection needs
    the ``bootstrap_servers`` extra (and ``status_topic`` unless it is ``connect-status``).

    Tasks waited for: ``expected_tasks`` when given; otherwise the task count is asked once
    from the REST API (``GET /connectors/{c}/tasks``), and if that fails, every task seen on
    the topic (at least one). STOPPED never waits for tasks. A FAILED connector or task
    fails the sensor at once with its trace (:class:`ConnectorFailedError`), unless FAILED
    is the target.

    With ``deferrable=True`` the wait runs in the triggerer (:class:`StatusTopicTrigger`),
    which follows the topic with a live consumer and reacts within about 0.1 s. On success
    the status summary is returned (XCom ``return_value``), the connector's active topics
    (KIP-558 records) are pushed as XCom ``topics`` and, with ``emit_topic_assets``, one
    Asset event per topic is emitted. The topic is read with :attr:`kafka_hook`
    (:class:`~airflow_provider.hooks.status_topic.KafkaConnectStatusTopicHook`).
    """

    waiting_for = "watching the status topic for"
    template_fields: Sequence[str] = ("connector", "target_state", "expected_tasks")
    operator_extra_links = (ConnectorStatusLink(),)
    ui_color = "#d7e8f5"

    def __init__(self, *, connector: str, kafka_connect_conn_id: str = "kafka_connect_default",
                 target_state: str = "RUNNING", wait_for_tasks: bool = True,
                 expected_tasks: int | None = None, emit_topic_assets: bool = False,
                 deferrable: bool | None = None,
                 **kwargs: Any) -> None:
        self._add_topics_alias(connector, emit_topic_assets, kwargs)
        super().__init__(**kwargs)
        self.emit_topic_assets = emit_topic_assets
        self.kafka_connect_conn_id = kafka_connect_conn_id
        self.connector = connector
        self.target_state = target_state
        self.wait_for_tasks = wait_for_tasks
        self.expected_tasks = expected_tasks
        self.deferrable = resolve_deferrable(deferrable)
        self._task_count: int | None = None
        self._resolved = False
        #: Kept between pokes of one try (poke mode): each poke reads only what is new.
        self._reader: StatusTopicReader | None = None

    # ------------------------------------------------------------------------- checking

    def _target(self) -> str:
        return check_target_state(self.target_state)

    def _expected(self) -> int | None:
        """``expected_tasks`` (templated values coerced), else the task count from REST,
        looked up once per try."""
        if self._resolved:
            return self._task_count
        self._resolved = True
        expected = self.expected_tasks
        if isinstance(expected, str):  # rendered from a template
            expected = None if expected.strip() in ("", "None") else int(expected)
        if expected is not None or not self.wait_for_tasks or self._target() == "STOPPED":
            self._task_count = expected
            return expected
        try:
            from airflow_provider.hooks.kafka_connect import KafkaConnectHook

            with KafkaConnectHook(kafka_connect_conn_id=self.kafka_connect_conn_id) as hook:
                count = len(hook.list_tasks(self.connector))
        except (ImportError, KafkaConnectError) as exc:
            self.log.info("Task count of %s unknown (%s); waiting for every task seen on the "
                          "status topic", self.connector, exc)
            return None
        # No tasks yet (being created, or STOPPED): the count is not known yet either.
        self._task_count = count or None
        self.log.info("Connector %s has %s task(s) (REST API)", self.connector, count)
        return self._task_count

    def _check(self) -> dict[str, Any] | None:
        """Read the topic once: the success payload, None to keep waiting; raises on
        FAILED."""
        target = self._target()
        if self._reader is None:
            self._reader = self.kafka_hook.reader(self.connector)
        try:
            view, caught_up = self._reader.read()
        except KafkaConnectTransportError as exc:  # Kafka down: waited out, like REST
            self.log.warning("%s; retrying", exc)
            return None
        if not caught_up:
            settings = self.kafka_hook.settings
            self.log.warning("Status topic %r not read to its end within %g s; retrying",
                             settings.status_topic, settings.timeout)
            return None
        outcome = view.evaluate(target, wait_for_tasks=self.wait_for_tasks,
                                expected_tasks=self._expected())
        self.log.info("Connector %s: %s", self.connector, outcome.detail)
        if outcome.verdict is Verdict.FAILED:
            raise connector_failed(self.connector, outcome.detail, outcome.trace)
        return event_payload(view, outcome, target) if outcome.verdict is Verdict.MET else None

    # ------------------------------------------------------------------------- Airflow

    def poke(self, context: Context) -> bool | PokeReturnValue:
        payload = self._check()
        if payload is None:
            return False
        return PokeReturnValue(True, xcom_value=self.on_state_reached(context, payload))

    def execute(self, context: Context) -> Any:
        self._resolved = False  # look the task count up again on every try
        try:
            return self._execute(context)
        finally:
            if self._reader is not None:
                self._reader.close()
                self._reader = None

    def _execute(self, context: Context) -> Any:
        if not self.deferrable:
            return super().execute(context)
        payload = self._check()
        if payload is not None:
            return self.on_state_reached(context, payload)
        self.defer(trigger=StatusTopicTrigger(
            kafka_connect_conn_id=self.kafka_connect_conn_id, connector=self.connector,
            target_state=self._target(), wait_for_tasks=self.wait_for_tasks,
            expected_tasks=self._expected(), timeout=self.timeout),
            method_name="execute_complete", timeout=timedelta(seconds=self.timeout))

    def on_state_reached(self, context: Context, event: dict[str, Any]) -> dict[str, Any]:
        """Called once the state is reached (both modes) with the status summary; its
        return value is the task's XCom. Pushes the active topics (KIP-558) as XCom
        ``topics`` and emits their Assets."""
        self.emit_connector_topics(context, event.get("topics") or [])
        return event
