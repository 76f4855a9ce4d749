"""The worker hands what stopped tasks freed back to the operating system: one trim
request per stop of tasks, none when nothing stopped."""

from __future__ import annotations

from worker.config.worker_config import WorkerConfig
from worker.plugins.registry import builtin_registry
from worker.runtime.worker import Worker
from worker.storage.base import TaskId
from worker.storage.memory import MemoryOffsetBackingStore, MemoryStatusBackingStore


class StoppableTask:
    def __init__(self, task_id: TaskId) -> None:
        self.id = task_id
        self.events: list[str] = []

    def stop(self) -> None:
        self.events.append("stop")

    def await_stop(self, timeout_s: float) -> bool:
        self.events.append("await_stop")
        return True


class Requests:
    def __init__(self, tasks: list[StoppableTask]) -> None:
        self.tasks = tasks
        self.seen: list[list[str]] = []  # the tasks' events at each request
        self.closed = False

    def request(self) -> None:
        self.seen.append([e for t in self.tasks for e in t.events])

    def close(self) -> None:
        self.closed = True


def test_stopping_tasks_asks_for_one_trim_once_they_stopped() -> None:
    worker = Worker("w:8083", WorkerConfig({"bootstrap.servers": "127.0.0.1:1"}),
                    builtin_registry(), MemoryOffsetBackingStore(),
                    MemoryStatusBackingStore())
    tasks = [StoppableTask(TaskId("c", n)) for n in range(3)]
    requests = Requests(tasks)
    worker.memory = requests  # type: ignore[assignment]
    for task in tasks:
        worker.tasks[task.id] = task  # type: ignore[assignment]
    worker.stop_tasks([])
    worker.stop_tasks([TaskId("other", 0)])  # not on this worker
    assert requests.seen == []
    worker.stop_tasks([t.id for t in tasks[:2]])
    # One request, after both tasks stopped.
    assert requests.seen == [["stop", "await_stop", "stop", "await_stop"]]
    worker.stop()
    assert len(requests.seen) == 2 and requests.closed
