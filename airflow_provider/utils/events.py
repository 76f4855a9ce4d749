"""How a task reads the event of a connector-state wait, in one place.

:class:`~airflow_provider.triggers.connector_state.ConnectorStateTrigger` and
:class:`~airflow_provider.triggers.status_topic.StatusTopicTrigger` end with one event
whose ``status`` is ``success``, ``failed`` (with ``message`` and ``trace``), ``timeout``
or ``error`` (with ``message``). Every task that defers on them resumes in
:meth:`ConnectorStateEventMixin.execute_complete`, so each outcome becomes the same result
or error whichever trigger ran.
"""

from __future__ import annotations

from typing import Any, ClassVar

from airflow.sdk import Context

from airflow_provider.exceptions import (
    ConnectorFailedError,
    KafkaConnectError,
    StateTimeoutError,
)


def connector_failed(connector: str, detail: object, trace: str | None = None
                     ) -> ConnectorFailedError:
    """The error of a wait that found ``connector`` (or a task) FAILED: ``detail`` says
    what failed, ``trace`` is its stack trace."""
    return ConnectorFailedError(connector, f"connector {connector!r}: {detail}", trace=trace)


def raise_for_event(connector: str, event: dict[str, Any],
                    waiting_for: str = "waiting for") -> None:
    """Return for a ``success`` event; raise :class:`ConnectorFailedError`,
    :class:`StateTimeoutError` or :class:`KafkaConnectError` for the others."""
    status = event.get("status")
    if status == "success":
        return
    if status == "failed":
        raise connector_failed(connector, event.get("message"), event.get("trace"))
    if status == "timeout":
        raise StateTimeoutError(event.get("message"))
    raise KafkaConnectError(f"{waiting_for} {connector!r} failed: {event.get('message')}")


class ConnectorStateEventMixin:
    """``execute_complete`` for operators and sensors that defer on a connector-state
    trigger: a ``success`` event goes to :meth:`on_state_reached` (its return value is the
    task's XCom), the others raise :class:`ConnectorFailedError`,
    :class:`StateTimeoutError` or :class:`KafkaConnectError`."""

    connector: str
    #: What the task waits with, as the ``error`` event's message says:
    #: ``"<waiting_for> 'c' failed: ..."``.
    waiting_for: ClassVar[str] = "waiting for"

    def execute_complete(self, context: Context, event: dict[str, Any]) -> Any:
        """Resume after the trigger: the success result, else raise."""
        raise_for_event(self.connector, event, self.waiting_for)
        return self.on_state_reached(context, event)

    def on_state_reached(self, context: Context, event: dict[str, Any]) -> Any:
        """Called with the ``success`` event; returns the task's result."""
        raise NotImplementedError
