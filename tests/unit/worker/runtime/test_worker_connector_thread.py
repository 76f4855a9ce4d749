"""WorkerConnector's thread exists only while commands run: an idle connector (RUNNING,
STOPPED) holds none, commands still run in order on a thread of their own, and a connector
whose code hangs is abandoned after a bounded wait."""

from __future__ import annotations

import threading
from collections.abc import Mapping

import pytest

from tests.support import wait_until
from worker.api import SourceConnector, SourceTask
from worker.runtime.worker_connector import WorkerConnector
from worker.storage.base import State, TargetState

NAME = "idle-connector"


class Recorder(SourceConnector):
    def __init__(self, hang: threading.Event | None = None) -> None:
        self.calls: list[tuple[str, str]] = []  # (call, thread name)
        self.hang = hang

    def start(self, props: Mapping[str, str]) -> None:
        self.calls.append(("start", threading.current_thread().name))
        if self.hang is not None:
            self.hang.wait(10)

    def task_class(self) -> type[SourceTask]:
        raise NotImplementedError

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        self.calls.append(("task_configs", threading.current_thread().name))
        return [{"n": str(i)} for i in range(max_tasks)]

    def stop(self) -> None:
        self.calls.append(("stop", threading.current_thread().name))


class Statuses:
    def __init__(self) -> None:
        self.states: list[State] = []

    def connector(self, _name: str, state: State, _error: BaseException | None = None) -> None:
        self.states.append(state)


def make(connector: Recorder, target: TargetState = TargetState.STARTED
         ) -> tuple[WorkerConnector, Statuses]:
    statuses = Statuses()
    worker = WorkerConnector(NAME, lambda: connector, {"name": NAME}, target,
                             statuses,  # type: ignore[arg-type]
                             offset_reader=lambda _c: None,
                             on_reconfiguration_request=lambda _n: None)
    return worker, statuses


def connector_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name == f"connector-{NAME}"]


def settle(worker: WorkerConnector, state: State) -> None:
    wait_until(lambda: worker.state is state and not worker.has_thread, timeout=5,
               message=lambda: f"{state} with no thread; have {worker.state}, "
                               f"thread {worker.has_thread}")


def test_an_idle_connector_holds_no_thread_and_commands_still_run_in_order() -> None:
    connector = Recorder()
    worker, statuses = make(connector)
    worker.start()
    settle(worker, State.RUNNING)
    assert connector_threads() == []
    assert worker.task_configs(2).result(5) == [{"n": "0"}, {"n": "1"}]
    worker.transition_to(TargetState.STOPPED)
    settle(worker, State.STOPPED)
    assert connector_threads() == []
    worker.transition_to(TargetState.STARTED)
    settle(worker, State.RUNNING)
    assert [call for call, _ in connector.calls] == [
        "start", "task_configs", "stop", "start"]
    # Connector code ran on the connector's thread, never on the caller's.
    assert {thread for _, thread in connector.calls} == {f"connector-{NAME}"}
    worker.shutdown()
    assert worker.await_shutdown(5)
    assert statuses.states == [State.RUNNING, State.STOPPED, State.RUNNING, State.UNASSIGNED]
    assert not worker.has_thread
    late = worker.task_configs(1)  # after shutdown: answered, never left waiting
    with pytest.raises(RuntimeError, match="was shut down"):
        late.result(5)


def test_a_connector_created_stopped_never_starts() -> None:
    connector = Recorder()
    worker, _ = make(connector, TargetState.STOPPED)
    worker.start()
    settle(worker, State.STOPPED)
    assert connector.calls == []


def test_a_hanging_connector_is_abandoned_after_the_wait() -> None:
    release = threading.Event()
    worker, _ = make(Recorder(hang=release))
    worker.start()
    worker.shutdown()
    try:
        assert not worker.await_shutdown(0.2)  # start() still hangs
        assert worker.has_thread
    finally:
        release.set()
    assert worker.await_shutdown(5)
    wait_until(lambda: not worker.has_thread, timeout=5, message="the thread ended")
