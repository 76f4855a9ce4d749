"""WorkerTask's thread life cycle: states reported, and a task abandoned after the graceful
timeout (cancelled, as in Kafka) reporting no status and committing no offsets once its
thread finally ends."""

from __future__ import annotations

import threading
from collections.abc import Mapping

from worker.api.task import Task
from worker.builtin.converters.string_bytes import StringConverter
from worker.runtime.chain import TransformationChain
from worker.runtime.source_task import WorkerSourceTask
from worker.runtime.worker_task import WorkerTask
from worker.storage.base import State, TargetState, TaskId
from worker.storage.memory import MemoryOffsetBackingStore

TASK = TaskId("c", 0)


class RecordingStatus:
    def __init__(self) -> None:
        self.states: list[State] = []
        self.running = threading.Event()

    def task(self, _task: TaskId, state: State, _error: BaseException | None = None) -> None:
        self.states.append(state)
        if state is State.RUNNING:
            self.running.set()


class IdleTask(Task):
    def version(self) -> str:
        return "1"

    def start(self, props: dict[str, str]) -> None:
        pass

    def stop(self) -> None:
        pass


class SlowClosingTask(WorkerTask):
    """Runs until stopped, then blocks in close() until ``release`` is set."""

    def __init__(self, status: RecordingStatus) -> None:
        super().__init__(TASK, IdleTask(), {}, TargetState.STARTED, status)  # type: ignore[arg-type]
        self.release = threading.Event()
        self.closed = threading.Event()

    def initialize(self) -> None:
        pass

    def execute(self) -> None:
        self.stopping.wait(10)

    def close(self) -> None:
        self.release.wait(10)
        self.closed.set()


def test_a_task_stopped_in_time_reports_running_then_unassigned() -> None:
    status = RecordingStatus()
    task = SlowClosingTask(status)
    task.release.set()
    task.start()
    # A task stopped before its thread got going never reports RUNNING: stop a running one.
    assert status.running.wait(5)
    task.stop()
    assert task.await_stop(5)
    assert not task.cancelled
    assert status.states == [State.RUNNING, State.UNASSIGNED]


def test_an_abandoned_task_writes_no_status_when_its_thread_ends_later() -> None:
    status = RecordingStatus()
    task = SlowClosingTask(status)
    task.start()
    assert status.running.wait(5)  # as above: a running task, then its stop
    task.stop()
    assert not task.await_stop(0.2)  # still closing: abandoned
    assert task.cancelled
    task.release.set()
    assert task.closed.wait(5)
    task.await_stop(5)
    # No UNASSIGNED after the abandonment: a task started again meanwhile keeps its state.
    assert status.states == [State.RUNNING]


class AcknowledgingProducer:
    """Stands in for confluent_kafka.Producer: nothing in flight, every report served."""

    def poll(self, _timeout: float) -> int:
        return 0

    def flush(self, _timeout: float) -> int:
        return 0

    def __len__(self) -> int:
        return 0


def _source_task_with_one_acknowledged_batch(store: MemoryOffsetBackingStore
                                             ) -> WorkerSourceTask:
    from worker.api import SourceRecord, SourceTask

    class Idle(SourceTask):
        def start(self, props: Mapping[str, str]) -> None:
            pass

        def poll(self) -> list[SourceRecord] | None:
            return None

        def stop(self) -> None:
            pass

    task = WorkerSourceTask(
        TASK, Idle(), {}, TargetState.STARTED, RecordingStatus(),  # type: ignore[arg-type]
        producer_config={}, key_converter=StringConverter(), value_converter=StringConverter(),
        chain=TransformationChain([]), offset_store=store, offset_flush_interval_ms=1000,
        offset_flush_timeout_ms=1000)
    task._producer = AcknowledgingProducer()  # type: ignore[assignment]
    batch = task._submitted.new_batch()  # sent and acknowledged: committable
    task._submitted.submit(batch, [SourceRecord({"file": "f"}, {"position": 7}, "t", None,
                                                None, None, None, "line")])
    return task


def test_a_source_task_commits_what_was_acknowledged() -> None:
    store = MemoryOffsetBackingStore()
    task = _source_task_with_one_acknowledged_batch(store)
    assert task.commit_offsets()
    assert store.get("c", [{"file": "f"}]) == {'{"file":"f"}': {"position": 7}}


def test_a_cancelled_source_task_commits_nothing() -> None:
    # Its offsets may have been reset (stop -> DELETE offsets) while it was still closing.
    store = MemoryOffsetBackingStore()
    task = _source_task_with_one_acknowledged_batch(store)
    task.cancelled = True
    assert not task.commit_offsets()
    assert store.get("c", [{"file": "f"}]) == {}
