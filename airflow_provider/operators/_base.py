"""What every Kafka Connect operator shares: the hook, the status link, state waits (here
or, deferred, in the triggerer) and topic Asset events (named after the cluster of
:attr:`TopicAssetsMixin.kafka_hook`)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import timedelta
from functools import cached_property
from typing import Any

from airflow.sdk import BaseOperator, Context
from airflow.triggers.base import BaseTrigger

from airflow_provider.exceptions import WAIT_OUT_ERRORS, StateTimeoutError
from airflow_provider.hooks.kafka_connect import KafkaConnectHook
from airflow_provider.hooks.results import ConnectorStatus
from airflow_provider.hooks.status_topic import check_status_topic
from airflow_provider.utils.assets import TopicAssetsMixin
from airflow_provider.utils.connector_state import Verdict, check_target_state, evaluate_rest_status
from airflow_provider.utils.deferrable import resolve_deferrable
from airflow_provider.utils.events import connector_failed
from airflow_provider.utils.links import ConnectorStatusLink

DEFAULT_STATE_TIMEOUT_S = 300.0
DEFAULT_POLL_INTERVAL_S = 1.0
#: Airflow's own deferral timeout is the trigger's plus this: the trigger reports its
#: timeout first, with what it last saw; Airflow's ends a wait whose triggerer is gone.
DEFERRAL_GRACE_S = 60.0


def wait_for_state(hook: KafkaConnectHook, connector: str, target_state: str, *,
                   wait_for_tasks: bool = True, timeout: float = DEFAULT_STATE_TIMEOUT_S,
                   poll_interval: float = DEFAULT_POLL_INTERVAL_S,
                   log: Any = None) -> ConnectorStatus:
    """Poll ``GET /connectors/{c}/status`` until the target is met; return that status.

    Raises :class:`ConnectorFailedError` (with the trace) as soon as the connector or a
    task is FAILED, :class:`StateTimeoutError` after ``timeout`` seconds. A connector that
    is momentarily unknown (404) or a worker that is momentarily unreachable is waited out.
    """
    target = check_target_state(target_state)
    deadline = time.monotonic() + timeout
    detail = "no status read yet"
    while True:
        try:
            status = hook.get_connector_status(connector)
        except WAIT_OUT_ERRORS as exc:
            detail = f"status unavailable: {exc}"
        else:
            outcome = evaluate_rest_status(status, target, wait_for_tasks=wait_for_tasks)
            if outcome.verdict is Verdict.MET:
                return status
            if outcome.verdict is Verdict.FAILED:
                raise connector_failed(connector, outcome.detail, outcome.trace)
            detail = outcome.detail
        if time.monotonic() >= deadline:
            raise StateTimeoutError(f"connector {connector!r} did not reach {target} within "
                                    f"{timeout:g} s: {detail}")
        if log is not None:
            log.debug("Waiting for %s to be %s: %s", connector, target, detail)
        time.sleep(min(poll_interval, max(0.0, deadline - time.monotonic())))


class KafkaConnectBaseOperator(TopicAssetsMixin, BaseOperator):
    """Base of the operators acting on one connector of one Kafka Connect cluster.

    :param connector: the connector's name (templated).
    :param kafka_connect_conn_id: the ``kafka_connect`` Airflow connection.
    :param emit_topic_assets: subclasses that learn the connector's topics emit one Asset
        event per topic (see :mod:`airflow_provider.utils.assets`) through an alias added to
        ``outlets``.
    :param deferrable: wait for connector states in the triggerer, freeing the worker slot
        (default: Airflow's ``[operators] default_deferrable``). The wait follows the
        status topic when the connection has ``bootstrap_servers``, else polls REST.
    """

    template_fields: Sequence[str] = ("connector",)
    operator_extra_links = (ConnectorStatusLink(),)
    ui_color = "#d7e8f5"

    def __init__(self, *, connector: str, kafka_connect_conn_id: str = "kafka_connect_default",
                 emit_topic_assets: bool = False, deferrable: bool | None = None,
                 **kwargs: Any) -> None:
        self._add_topics_alias(connector, emit_topic_assets, kwargs)
        super().__init__(**kwargs)
        self.connector = connector
        self.kafka_connect_conn_id = kafka_connect_conn_id
        self.emit_topic_assets = emit_topic_assets
        self.deferrable = resolve_deferrable(deferrable)

    @cached_property
    def hook(self) -> KafkaConnectHook:
        return KafkaConnectHook(kafka_connect_conn_id=self.kafka_connect_conn_id)

    def state_trigger(self, target_state: str, *, wait_for_tasks: bool, timeout: float,
                      poll_interval: float) -> BaseTrigger:
        """The trigger that waits for ``target_state``: :class:`StatusTopicTrigger` when
        the connection names the Kafka cluster (``bootstrap_servers``) and its status
        topic exists there, else :class:`ConnectorStateTrigger` (REST; e.g. standalone
        workers, which keep their status to themselves)."""
        from airflow_provider.triggers.connector_state import ConnectorStateTrigger
        from airflow_provider.triggers.status_topic import StatusTopicTrigger

        settings = self.hook.settings
        if settings.bootstrap_servers:
            found, why = check_status_topic(settings)
            if found:
                return StatusTopicTrigger(
                    kafka_connect_conn_id=self.kafka_connect_conn_id,
                    connector=self.connector, target_state=target_state,
                    wait_for_tasks=wait_for_tasks, timeout=timeout)
            self.log.info("Waiting over the REST API: %s", why)
        return ConnectorStateTrigger(
            kafka_connect_conn_id=self.kafka_connect_conn_id, connector=self.connector,
            target_state=target_state, wait_for_tasks=wait_for_tasks,
            poll_interval=poll_interval, timeout=timeout)

    def defer_until(self, target_state: str, *, method_name: str, wait_for_tasks: bool,
                    timeout: float, poll_interval: float) -> None:
        """Defer until the connector is in ``target_state``; the task resumes in
        ``method_name(context, event)`` with the trigger's event.

        The status is read once first, as Airflow's deferrable sensors poke before they
        defer: a target already met returns here (the caller goes on in this process,
        no trigger, no second worker slot) and a FAILED connector or task raises at once.
        """
        target = check_target_state(target_state)
        try:
            status = self.hook.get_connector_status(self.connector)
        except WAIT_OUT_ERRORS as exc:
            self.log.info("Status of %s unavailable (%s): deferring", self.connector, exc)
        else:
            outcome = evaluate_rest_status(status, target, wait_for_tasks=wait_for_tasks)
            if outcome.verdict is Verdict.MET:
                self.log.info("Connector %s is already %s: not deferring", self.connector,
                              target)
                return
            if outcome.verdict is Verdict.FAILED:
                raise connector_failed(self.connector, outcome.detail, outcome.trace)
        trigger = self.state_trigger(target, wait_for_tasks=wait_for_tasks,
                                     timeout=timeout, poll_interval=poll_interval)
        self.log.info("Deferring until connector %s is %s (%s, up to %g s)", self.connector,
                      target, type(trigger).__name__, timeout)
        self.defer(trigger=trigger, method_name=method_name,
                   timeout=timedelta(seconds=timeout + DEFERRAL_GRACE_S))

    def emit_active_topics(self, context: Context) -> list[str]:
        """Emit Asset events for the connector's active topics (``GET .../topics``)."""
        return self.emit_connector_topics(context, self.hook.get_connector_topics(self.connector))
