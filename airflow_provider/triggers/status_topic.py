"""Deferrable wait for a connector state read from Kafka Connect's status topic."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

from airflow_provider.exceptions import KafkaConnectError, KafkaConnectTransportError
from airflow_provider.hooks.status_topic import (
    POLL_TIMEOUT_S,
    KafkaConnectStatusTopicHook,
    StatusTopicWatch,
)
from airflow_provider.utils.connector_state import Verdict, check_target_state
from airflow_provider.utils.status_records import event_payload

log = logging.getLogger(__name__)

#: Backoff while Kafka cannot be reached (the wait itself is bounded by ``timeout``).
RETRY_DELAY_S = 1.0
MAX_RETRY_DELAY_S = 30.0


class StatusTopicTrigger(BaseTrigger):
    """Follow the status topic (``status_topic`` / ``bootstrap_servers`` of the connection)
    until ``connector`` is in ``target_state``; yields exactly one event:

    - ``{"status": "success", "connector", "target_state", "state", "tasks": {"0": state},
      "topics": [...], "worker_id", "message"}``;
    - ``{"status": "failed", ..., "failed": "connector" | "task N", "trace"}`` when the
      connector or a considered task is FAILED (unless FAILED is the target);
    - ``{"status": "timeout" | "error", "connector", "target_state", "message"}``.

    The topic is read with :class:`KafkaConnectStatusTopicHook` (the connection is looked
    up without blocking the event loop). An unreachable Kafka is waited out (with backoff,
    within ``timeout``); a missing or unreadable status topic or an unusable connection is
    an ``error`` event.

    The whole topic is read from the beginning and judged only once every partition has
    been read to its end, then after every batch. ``timeout`` is in seconds (None: none);
    ``poll_interval`` is the longest one ``poll()`` waits when nothing arrives (a record is
    handled as soon as it is fetched).
    """

    def __init__(self, kafka_connect_conn_id: str, connector: str, target_state: str = "RUNNING",
                 wait_for_tasks: bool = True, expected_tasks: int | None = None,
                 timeout: float | None = None, poll_interval: float = POLL_TIMEOUT_S) -> None:
        super().__init__()
        self.kafka_connect_conn_id = kafka_connect_conn_id
        self.connector = connector
        self.target_state = check_target_state(target_state)
        self.wait_for_tasks = wait_for_tasks
        self.expected_tasks = expected_tasks
        self.timeout = timeout
        self.poll_interval = poll_interval

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return ("airflow_provider.triggers.status_topic.StatusTopicTrigger", {
            "kafka_connect_conn_id": self.kafka_connect_conn_id,
            "connector": self.connector,
            "target_state": self.target_state,
            "wait_for_tasks": self.wait_for_tasks,
            "expected_tasks": self.expected_tasks,
            "timeout": self.timeout,
            "poll_interval": self.poll_interval,
        })

    async def run(self) -> AsyncIterator[TriggerEvent]:
        # The consumer is closed before the event is yielded: a triggerer (and dag.test())
        # may never resume the generator after its first event.
        yield TriggerEvent(await self._wait())

    async def _wait(self) -> dict[str, Any]:
        base = {"connector": self.connector, "target_state": self.target_state}
        try:
            hook = KafkaConnectStatusTopicHook(self.kafka_connect_conn_id)
            watch = await hook.awatch(self.connector)
            unreachable: KafkaConnectTransportError | None = None
            try:
                async with asyncio.timeout(self.timeout):  # None: no limit
                    delay = RETRY_DELAY_S
                    while True:
                        try:
                            outcome = await watch.until(
                                self.target_state, wait_for_tasks=self.wait_for_tasks,
                                expected_tasks=self.expected_tasks,
                                poll_timeout=self.poll_interval)
                            break
                        except KafkaConnectTransportError as exc:  # Kafka down: wait it out
                            unreachable = exc
                            log.warning("%s; retrying in %g s", exc, delay)
                            await asyncio.sleep(delay)
                            delay = min(delay * 2, MAX_RETRY_DELAY_S)
            except TimeoutError:
                return {**base, "status": "timeout",
                        "message": self._timed_out(watch, unreachable)}
        except KafkaConnectError as exc:
            return {**base, "status": "error", "message": f"{type(exc).__name__}: {exc}"}
        except Exception as exc:  # an event, never a crashed trigger
            log.exception("Watching the status topic for connector %r failed", self.connector)
            return {**base, "status": "error", "message": f"{type(exc).__name__}: {exc}"}
        assert outcome.verdict is not Verdict.WAITING
        return event_payload(watch.view, outcome, self.target_state)

    def _timed_out(self, watch: StatusTopicWatch,
                   unreachable: KafkaConnectTransportError | None) -> str:
        if watch.caught_up:
            seen = watch.view.evaluate(self.target_state, wait_for_tasks=self.wait_for_tasks,
                                       expected_tasks=self.expected_tasks).detail
        else:
            seen = "the status topic was not read to its end" + (
                f" (last error: {unreachable})" if unreachable is not None else "")
        return f"{self.target_state} not reached within {self.timeout:g} s: {seen}"
