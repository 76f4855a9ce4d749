"""Is a connector in the state being waited for? One rule, used by every waiter.

The REST sensor and trigger, the lifecycle operators' waits and the offsets runbook all
decide with :func:`evaluate`: the connector must be in ``target_state``; unless the target
is ``STOPPED`` (a stopped connector has no tasks) and ``wait_for_tasks`` is off, so must be
every task (tasks ``0..expected_tasks-1`` when the count is known, else every task listed,
and at least one). ``FAILED`` anywhere fails the wait at once, with the trace, unless
``FAILED`` is what is awaited.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

#: Every state Kafka Connect reports for a connector or a task.
STATES = frozenset({"UNASSIGNED", "RUNNING", "PAUSED", "STOPPED", "FAILED", "RESTARTING"})
#: States a connector can be asked to wait for.
TARGET_STATES = frozenset({"RUNNING", "PAUSED", "STOPPED", "FAILED"})


class Verdict(StrEnum):
    MET = "met"
    WAITING = "waiting"
    FAILED = "failed"


@dataclass(frozen=True)
class TaskState:
    """A connector's or a task's state, and what goes with it."""

    state: str
    trace: str | None = None
    worker_id: str | None = None


@dataclass(frozen=True)
class Outcome:
    """The verdict, why (``detail``), and for ``FAILED`` what failed and its trace."""

    verdict: Verdict
    detail: str = ""
    failed: str | None = None  # "connector" or "task N"
    trace: str | None = None


def check_target_state(target_state: str) -> str:
    """Upper-cased ``target_state``, or ``ValueError`` naming the allowed ones."""
    state = str(target_state).strip().upper()
    if state not in TARGET_STATES:
        raise ValueError(f"target_state must be one of {sorted(TARGET_STATES)}, "
                         f"got {target_state!r}")
    return state


def evaluate(target_state: str, connector: TaskState | None, tasks: Mapping[int, TaskState], *,
             wait_for_tasks: bool = True, expected_tasks: int | None = None) -> Outcome:
    """Decide whether ``connector`` (``None``: not seen yet) and ``tasks`` meet the target."""
    target = check_target_state(target_state)
    if connector is None:
        return Outcome(Verdict.WAITING, "the connector has no status yet")
    if connector.state == "FAILED" and target != "FAILED":
        return Outcome(Verdict.FAILED, "the connector is FAILED", "connector", connector.trace)
    check_tasks = wait_for_tasks and target != "STOPPED"
    if check_tasks:
        ids = range(expected_tasks) if expected_tasks is not None else sorted(tasks)
        if target != "FAILED":
            for task_id in ids:
                task = tasks.get(task_id)
                if task is not None and task.state == "FAILED":
                    return Outcome(Verdict.FAILED, f"task {task_id} is FAILED",
                                   f"task {task_id}", task.trace)
    if connector.state != target:
        return Outcome(Verdict.WAITING, f"the connector is {connector.state}, not {target}")
    if not check_tasks:
        return Outcome(Verdict.MET, f"the connector is {target}")
    if not ids:
        return Outcome(Verdict.WAITING, "the connector has no tasks yet")
    for task_id in ids:
        task = tasks.get(task_id)
        if task is None or task.state != target:
            state = task.state if task is not None else "not reported"
            return Outcome(Verdict.WAITING, f"task {task_id} is {state}, not {target}")
    return Outcome(Verdict.MET, f"the connector and its {len(ids)} task(s) are {target}")


class _StateAnswer(Protocol):
    def as_state(self) -> TaskState: ...


class RestConnectorStatus(Protocol):
    """What :func:`evaluate_rest_status` reads of a ``GET /connectors/{c}/status`` answer
    (:class:`airflow_provider.hooks.results.ConnectorStatus`, built on :class:`TaskState`:
    a protocol here, so this module imports no hook and the two form no import cycle)."""

    @property
    def connector(self) -> _StateAnswer: ...

    def task_states(self) -> Mapping[int, TaskState]: ...


def evaluate_rest_status(status: RestConnectorStatus, target_state: str, *,
                         wait_for_tasks: bool = True) -> Outcome:
    """:func:`evaluate` on a ``GET /connectors/{c}/status`` answer.

    Over REST a stopped connector lists no tasks (KIP-875 removes its task configs), so
    with ``wait_for_tasks`` STOPPED is met only once the task list is empty: that is when
    offsets may be altered.
    """
    tasks = status.task_states()
    outcome = evaluate(target_state, status.connector.as_state(), tasks,
                       wait_for_tasks=wait_for_tasks)
    if outcome.verdict is Verdict.MET and wait_for_tasks and tasks \
            and check_target_state(target_state) == "STOPPED":
        return Outcome(Verdict.WAITING, f"the connector is STOPPED but {len(tasks)} task(s) "
                       "are still listed")
    return outcome
