"""Deferrable wait for a connector state over Kafka Connect's REST API."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

from airflow_provider.exceptions import WAIT_OUT_ERRORS, KafkaConnectError
from airflow_provider.hooks.kafka_connect_async import KafkaConnectAsyncHook
from airflow_provider.hooks.results import ConnectorStatus
from airflow_provider.utils.connector_state import (
    Outcome,
    Verdict,
    check_target_state,
    evaluate_rest_status,
)


def status_event(connector: str, target_state: str, status: ConnectorStatus,
                 outcome: Outcome) -> dict[str, Any]:
    """The event (and sensor XCom) for a decided wait: ``status`` is ``success`` or
    ``failed``, with the connector's type, state, task states and any failure trace."""
    return {"connector": connector, "target_state": target_state,
            "status": "success" if outcome.verdict is Verdict.MET else "failed",
            "message": outcome.detail, "failed": outcome.failed, "trace": outcome.trace,
            "type": status.type, "state": status.state,
            "tasks": {str(task.id): task.state for task in status.tasks}}


class ConnectorStateTrigger(BaseTrigger):
    """Poll ``GET /connectors/{c}/status`` every ``poll_interval`` seconds until the target
    state is met (event ``status: success``), a connector or task is FAILED (``failed``,
    with the trace), ``timeout`` seconds pass (``timeout``) or the connection is unusable
    (``error``). A 404, 409 or unreachable worker is waited out (it may be restarting).
    """

    def __init__(self, kafka_connect_conn_id: str, connector: str, target_state: str = "RUNNING",
                 wait_for_tasks: bool = True, poll_interval: float = 1.0,
                 timeout: float | None = None) -> None:
        super().__init__()
        self.kafka_connect_conn_id = kafka_connect_conn_id
        self.connector = connector
        self.target_state = check_target_state(target_state)
        self.wait_for_tasks = wait_for_tasks
        self.poll_interval = poll_interval
        self.timeout = timeout

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (f"{type(self).__module__}.{type(self).__qualname__}", {
            "kafka_connect_conn_id": self.kafka_connect_conn_id,
            "connector": self.connector,
            "target_state": self.target_state,
            "wait_for_tasks": self.wait_for_tasks,
            "poll_interval": self.poll_interval,
            "timeout": self.timeout,
        })

    async def run(self) -> AsyncIterator[TriggerEvent]:
        deadline = None if self.timeout is None else time.monotonic() + self.timeout
        base = {"connector": self.connector, "target_state": self.target_state}
        detail = "no status read yet"
        try:
            async with KafkaConnectAsyncHook(
                    kafka_connect_conn_id=self.kafka_connect_conn_id) as hook:
                while True:
                    try:
                        status = await hook.get_connector_status(self.connector)
                    except WAIT_OUT_ERRORS as exc:
                        detail = f"status unavailable: {exc}"
                    else:
                        outcome = evaluate_rest_status(status, self.target_state,
                                                       wait_for_tasks=self.wait_for_tasks)
                        if outcome.verdict is not Verdict.WAITING:
                            yield TriggerEvent(status_event(self.connector, self.target_state,
                                                            status, outcome))
                            return
                        detail = outcome.detail
                    if deadline is not None and time.monotonic() >= deadline:
                        yield TriggerEvent({**base, "status": "timeout", "message":
                                            f"{self.target_state} not reached within "
                                            f"{self.timeout:g} s: {detail}"})
                        return
                    await asyncio.sleep(self.poll_interval)
        except KafkaConnectError as exc:
            yield TriggerEvent({**base, "status": "error",
                                "message": f"{type(exc).__name__}: {exc}"})
