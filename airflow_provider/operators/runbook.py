"""The KIP-875 offsets runbook: stop → reset or alter offsets → resume, with a way back.

Every step is checked before the next one, and every failure after the snapshot puts the
connector back where it was (offsets restored from the snapshot, original state resumed)
before the task fails with the original error.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from airflow.sdk import Context
from airflow.sdk.exceptions import TaskDeferred

from airflow_provider.exceptions import KafkaConnectError
from airflow_provider.hooks.results import ConnectorStatus
from airflow_provider.operators._base import (
    DEFAULT_POLL_INTERVAL_S,
    DEFAULT_STATE_TIMEOUT_S,
    KafkaConnectBaseOperator,
    wait_for_state,
)
from airflow_provider.utils.events import raise_for_event
from airflow_provider.utils.offsets import validate_offsets

ACTIONS = ("reset", "alter")
SNAPSHOT_XCOM_KEY = "offsets_snapshot"
#: Where a deferred runbook keeps its progress between the task's processes.
STATE_XCOM_KEY = "runbook_state"


def _canonical(offsets: list[dict[str, Any]]) -> list[str]:
    return sorted(json.dumps(entry, sort_keys=True) for entry in offsets)


class KafkaConnectOffsetsRunbookOperator(KafkaConnectBaseOperator):
    """Stop a connector, reset or alter its offsets, resume it; roll back on failure.

    1. Read the connector's status (it must exist; its type picks the offset checks).
    2. Check the shape of ``offsets`` (``action="alter"``) before touching anything.
    3. Snapshot the committed offsets to XCom ``offsets_snapshot``.
    4. ``PUT .../stop`` and wait for STOPPED (skipped if already stopped).
    5. ``DELETE .../offsets`` (``reset``) or ``PATCH .../offsets`` (``alter``).
    6. ``PUT .../resume`` and wait for RUNNING with every task (``resume=False``: stay
       STOPPED), then, for a source connector, emit Asset events for the topics it writes
       (a sink's topics are what it reads: moving its offsets adds nothing to them, so
       the DAGs scheduled on them are not started).

    If any step from 4 on fails, the connector is stopped, its offsets are reset and the
    snapshot written back, it is returned to the state it had at step 1, and the task
    fails with the original error (notes on the error tell how the restore went).

    With ``deferrable`` (default: Airflow's ``[operators] default_deferrable``) the waits
    of steps 4 and 6 run in the triggerer — on the status topic when the connection's
    ``bootstrap_servers`` hold it, else over REST — and the task resumes in a new process with
    its progress from XCom ``runbook_state``; a wait that fails, times out in the
    triggerer or is ended by Airflow's deferral timeout restores the snapshot the same
    way (the restore itself runs in the task, not deferred).

    Returns ``{"connector", "type", "action", "initial_state", "before", "after"}`` with the
    offsets before and after.

    :param action: ``"reset"`` or ``"alter"`` (templated).
    :param offsets: for ``alter``: ``[{"partition": {...}, "offset": {...} | None}]`` or
        ``{"offsets": [...]}`` (templated; a JSON string is parsed).
    :param resume: resume the connector at the end (default) or leave it STOPPED.
    :param state_timeout: seconds to wait for each state change.
    """

    template_fields: Sequence[str] = ("connector", "action", "offsets")
    template_fields_renderers = {"offsets": "json"}

    def __init__(self, *, action: str = "reset", offsets: Any = None, resume: bool = True,
                 wait_for_tasks: bool = True, state_timeout: float = DEFAULT_STATE_TIMEOUT_S,
                 poll_interval: float = DEFAULT_POLL_INTERVAL_S,
                 emit_topic_assets: bool = True, **kwargs: Any) -> None:
        super().__init__(emit_topic_assets=emit_topic_assets, **kwargs)
        self.action = action
        self.offsets = offsets
        self.resume = resume
        self.wait_for_tasks = wait_for_tasks
        self.state_timeout = state_timeout
        self.poll_interval = poll_interval

    # ------------------------------------------------------------------ the runbook

    def execute(self, context: Context) -> dict[str, Any]:
        action = str(self.action).strip().lower()
        if action not in ACTIONS:
            raise ValueError(f"action must be one of {ACTIONS}, got {self.action!r}")
        status = self.hook.get_connector_status(self.connector)
        connector_type, initial_state = status.type, status.state
        new_offsets = self._checked_offsets(action, connector_type)

        before = self.hook.get_offsets(self.connector).to_list()
        context["ti"].xcom_push(key=SNAPSHOT_XCOM_KEY, value=before)
        self.log.info("Connector %s (%s, %s): snapshot of %d offset(s) pushed to XCom %r",
                      self.connector, connector_type, initial_state, len(before),
                      SNAPSHOT_XCOM_KEY)
        state = {"action": action, "type": connector_type, "initial_state": initial_state,
                 "offsets": new_offsets, "offsets_touched": False}
        with self._restoring_on_failure(context, state):
            if initial_state != "STOPPED":
                self.hook.stop_connector(self.connector)
            self._await(context, state, "STOPPED", "execute_stopped")
            return self._stopped(context, state)

    def execute_stopped(self, context: Context, event: dict[str, Any]) -> dict[str, Any]:
        """Resume after the deferred wait for STOPPED: change the offsets, resume."""
        state = self._state(context)
        with self._restoring_on_failure(context, state):
            raise_for_event(self.connector, event)
            return self._stopped(context, state)

    def execute_resumed(self, context: Context, event: dict[str, Any]) -> dict[str, Any]:
        """Resume after the deferred wait for RUNNING: the result."""
        state = self._state(context)
        with self._restoring_on_failure(context, state):
            raise_for_event(self.connector, event)
        return self._finish(context, state)

    def resume_execution(self, next_method: str, next_kwargs: dict[str, Any] | None,
                         context: Context) -> Any:
        """As Airflow's, but a wait that Airflow ended (deferral timeout, trigger failure:
        no event to resume with) also restores the snapshot before the task fails."""
        try:
            return super().resume_execution(next_method, next_kwargs, context)
        except BaseException as exc:
            if next_method not in ("execute_stopped", "execute_resumed"):
                state = context["ti"].xcom_pull(key=STATE_XCOM_KEY)
                if state:
                    self._restore(exc, self._snapshot(context), state["initial_state"],
                                  state["offsets_touched"])
            raise

    # ------------------------------------------------------------------ steps

    def _stopped(self, context: Context, state: dict[str, Any]) -> dict[str, Any]:
        """The connector is STOPPED: apply the offsets, read them back, resume."""
        state["offsets_touched"] = True
        if state["offsets"] is None:  # action "reset"
            self.hook.reset_offsets(self.connector)
        else:
            self.hook.alter_offsets(self.connector, state["offsets"])
        after = self.hook.get_offsets(self.connector).to_list()
        state["after"] = after
        self.log.info("Offsets of %s %s: %d partition(s) now", self.connector,
                      "reset" if state["action"] == "reset" else "altered", len(after))
        self.on_offsets_applied(context, after)
        if self.resume:
            self.hook.resume_connector(self.connector)
            self._await(context, state, "RUNNING", "execute_resumed")
        return self._finish(context, state)

    def _finish(self, context: Context, state: dict[str, Any]) -> dict[str, Any]:
        if self.resume and self.emit_topic_assets and state["type"] != "sink":
            self.emit_active_topics(context)
        return {"connector": self.connector, "type": state["type"],
                "action": state["action"], "initial_state": state["initial_state"],
                "before": self._snapshot(context), "after": state["after"]}

    def _await(self, context: Context, state: dict[str, Any], target: str,
               method_name: str) -> None:
        """Wait for ``target`` here, or defer (the state goes to XCom ``runbook_state``
        first: the task resumes in ``method_name`` in a new process)."""
        if self.deferrable:
            context["ti"].xcom_push(key=STATE_XCOM_KEY, value=state)
            self.defer_until(target, method_name=method_name,
                             wait_for_tasks=self.wait_for_tasks, timeout=self.state_timeout,
                             poll_interval=self.poll_interval)
        self._wait(target)

    @contextmanager
    def _restoring_on_failure(self, context: Context, state: dict[str, Any]
                              ) -> Iterator[None]:
        """Any failure (not a deferral) restores the snapshot, then propagates."""
        try:
            yield
        except TaskDeferred:
            raise
        except BaseException as exc:
            self._restore(exc, self._snapshot(context), state["initial_state"],
                          state["offsets_touched"])
            raise

    def _state(self, context: Context) -> dict[str, Any]:
        state = context["ti"].xcom_pull(key=STATE_XCOM_KEY)
        if not isinstance(state, dict):
            raise KafkaConnectError(f"the runbook state (XCom {STATE_XCOM_KEY!r}) is missing; "
                                    f"the snapshot is in XCom {SNAPSHOT_XCOM_KEY!r}")
        return state

    @staticmethod
    def _snapshot(context: Context) -> list[dict[str, Any]]:
        return list(context["ti"].xcom_pull(key=SNAPSHOT_XCOM_KEY) or [])

    def on_offsets_applied(self, context: Context, offsets: list[dict[str, Any]]) -> None:
        """Called with the offsets read back after the change, before resuming. Override to
        check them; raising rolls the connector back to the snapshot."""

    # ------------------------------------------------------------------ helpers

    def _checked_offsets(self, action: str, connector_type: str | None
                         ) -> list[dict[str, Any]] | None:
        """The offsets to alter, checked; ``None`` for a reset."""
        offsets = self.offsets
        if isinstance(offsets, str):
            try:
                offsets = json.loads(offsets)
            except json.JSONDecodeError as exc:
                raise ValueError(f"offsets is not valid JSON: {exc}") from None
        if action == "reset":
            if offsets not in (None, [], {}):
                raise ValueError("offsets are only given with action='alter'")
            return None
        if offsets is None:
            raise ValueError("action='alter' needs offsets")
        return validate_offsets(offsets, connector_type)

    def _wait(self, state: str) -> ConnectorStatus:
        return wait_for_state(self.hook, self.connector, state,
                              wait_for_tasks=self.wait_for_tasks, timeout=self.state_timeout,
                              poll_interval=self.poll_interval, log=self.log)

    def _restore(self, error: BaseException, snapshot: list[dict[str, Any]],
                 initial_state: str, offsets_touched: bool) -> None:
        """Put the connector back as it was; record the outcome as notes on ``error``."""
        self.log.error("Runbook for %s failed (%s: %s); restoring the snapshot",
                       self.connector, type(error).__name__, error)
        try:
            self.hook.stop_connector(self.connector)
            self._wait("STOPPED")
            if offsets_touched:
                self.hook.reset_offsets(self.connector)
                if snapshot:
                    self.hook.alter_offsets(self.connector, snapshot)
                restored = self.hook.get_offsets(self.connector).to_list()
                if _canonical(restored) != _canonical(snapshot):
                    raise RuntimeError(f"offsets read back after the restore differ from the "
                                       f"snapshot: {restored} != {snapshot}")
            if initial_state in ("RUNNING", "FAILED", "UNASSIGNED", "RESTARTING"):
                self.hook.resume_connector(self.connector)
                self._wait("RUNNING")
            elif initial_state == "PAUSED":
                self.hook.pause_connector(self.connector)
                self._wait("PAUSED")
        except Exception as restore_error:
            note = (f"Restoring connector {self.connector!r} failed too: "
                    f"{type(restore_error).__name__}: {restore_error}. The snapshot is in XCom "
                    f"{SNAPSHOT_XCOM_KEY!r}.")
            self.log.error(note)
            error.add_note(note)
            return
        note = (f"Connector {self.connector!r} was restored: offsets as in the snapshot "
                f"({len(snapshot)} partition(s)), state {initial_state or 'unknown'}.")
        self.log.info(note)
        error.add_note(note)
