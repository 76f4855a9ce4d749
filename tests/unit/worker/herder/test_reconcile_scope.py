"""A change to one connector reconciles that connector only (issue #19: creating a connector
must not re-check every other one), and a pass that changes nothing wakes no task."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support import wait_until
from tests.unit.worker.herder.conftest import GENERATOR, new_standalone_herder
from worker.config.worker_config import WorkerConfig
from worker.herder.standalone import StandaloneHerder
from worker.plugins.registry import builtin_registry
from worker.runtime.worker import Worker
from worker.storage.base import TargetState, TaskId
from worker.storage.memory import MemoryOffsetBackingStore, MemoryStatusBackingStore


@pytest.fixture
def herder() -> Iterator[StandaloneHerder]:
    herder = new_standalone_herder(stored=["a", "b", "c"])
    herder.start()
    try:
        yield herder
    finally:
        herder.stop()


@pytest.fixture
def reconciled(herder: StandaloneHerder) -> list[str]:
    """The connectors each reconcile pass looks at from now on, in order."""
    seen: list[str] = []
    reconcile_tasks = herder._reconciler._reconcile_tasks

    def spy(name: str, *args: Any) -> None:
        seen.append(name)
        reconcile_tasks(name, *args)

    herder._call(lambda: setattr(herder._reconciler, "_reconcile_tasks", spy))
    return seen


def test_creating_a_connector_looks_at_that_connector_only(
        herder: StandaloneHerder, reconciled: list[str]) -> None:
    herder.put_connector_config("new", GENERATOR, allow_replace=False,
                                initial_state=TargetState.STOPPED)
    assert set(reconciled) == {"new"}
    wait_until(lambda: herder.connector_status("new").connector.state == "STOPPED",
               timeout=5, message="new STOPPED")


def test_writes_to_one_connector_look_at_it_only(
        herder: StandaloneHerder, reconciled: list[str]) -> None:
    herder.pause_connector("b")
    herder.stop_connector("b")
    herder.put_connector_config("b", {**GENERATOR, "rate": "5"}, allow_replace=True)
    herder.delete_connector("b")
    assert set(reconciled) == {"b"}
    assert "b" not in herder.worker.connectors
    assert herder.status_store.get_connector("b") is None
    assert sorted(herder.worker.connectors) == ["a", "c"]  # the others left as they were


def test_a_full_pass_still_looks_at_every_connector(
        herder: StandaloneHerder, reconciled: list[str]) -> None:
    herder._call(herder._reconciler.reconcile)
    assert sorted(reconciled) == ["a", "b", "c"]


class TargetRecorder:
    """A running task as the worker sees it: its target state and the transitions."""

    def __init__(self, target: TargetState) -> None:
        self.target_state = target
        self.transitions: list[TargetState] = []

    def transition_to(self, target: TargetState) -> None:
        self.transitions.append(target)
        self.target_state = target


def test_setting_a_task_to_its_current_target_does_not_wake_it() -> None:
    worker = Worker("w:8083", WorkerConfig({"bootstrap.servers": "127.0.0.1:1"}),
                    builtin_registry(), MemoryOffsetBackingStore(),
                    MemoryStatusBackingStore())
    task = TargetRecorder(TargetState.STARTED)
    worker.tasks[TaskId("c", 0)] = task  # type: ignore[assignment]
    worker.set_task_target(TaskId("c", 0), TargetState.STARTED)
    assert task.transitions == []
    worker.set_task_target(TaskId("c", 0), TargetState.PAUSED)
    worker.set_task_target(TaskId("c", 0), TargetState.PAUSED)
    assert task.transitions == [TargetState.PAUSED]
