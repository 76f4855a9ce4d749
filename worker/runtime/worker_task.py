"""WorkerTask: the thread that runs one task, its target state and its status.

Subclasses implement ``execute()`` (the task loop, which returns when ``stopping`` is set)
and ``close()``. A task that raises goes FAILED with its stack trace and never takes the
worker down. ``stop()`` asks the task to stop and calls the plugin's ``stop()`` from a
separate thread (it is meant to interrupt a blocking ``poll``/``put``); ``await_stop`` waits
a bounded time, after which the thread is abandoned and reported. An abandoned task is
cancelled, as in Kafka (``WorkerTask.cancel``): whatever it does later, it writes no more
status and commits no offsets, so a thread that finishes closing after the task was
started again (a stop → reset → resume while it still closed its clients) can neither
overwrite the new task's RUNNING nor undo the reset.
"""

from __future__ import annotations

import logging
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable

from worker.api.headers import HeaderConverter
from worker.api.task import Task
from worker.runtime.metrics.tasks import TaskMetrics
from worker.runtime.status import StatusReporter
from worker.storage.base import State, TargetState, TaskId
from worker.util.threads import name_native_thread

log = logging.getLogger(__name__)


class WorkerTask(ABC):
    def __init__(self, task_id: TaskId, task: Task, task_config: dict[str, str],
                 target_state: TargetState, status: StatusReporter,
                 on_topic: Callable[[str], None] | None = None,
                 metrics: TaskMetrics | None = None) -> None:
        self.id = task_id
        self.task = task
        self.task_config = task_config  # what the plugin runs with (placeholders resolved)
        # Both as stored (placeholders as written), set by the Worker: the herder compares
        # them with the store and restarts the task when either changed.
        self.stored_task_config: dict[str, str] = dict(task_config)
        self.connector_config: dict[str, str] = {}
        self.status = status
        # /metrics: what this task counts (worker.runtime.metrics.tasks); the task thread
        # records into it once per batch, the scrape thread reads it.
        self.metrics = metrics or TaskMetrics(task_id.connector, task_id.task)
        self.stopping = threading.Event()
        self.cancelled = False
        self.failed = False
        # KIP-558: topics this task already recorded as active (cleared by a topic reset,
        # so the next use records them again).
        self.seen_topics: set[str] = set()
        self._on_topic = on_topic
        # header.converter (set by the Worker before start): writes a source task's headers
        # as bytes, reads a sink task's; None means SimpleHeaderConverter's format.
        self.header_converter: HeaderConverter | None = None
        self._target = target_state
        self._state_changed = threading.Condition()
        self._thread = threading.Thread(target=self._run, name=f"task-{task_id.connector}-"
                                        f"{task_id.task}", daemon=True)

    # --- control, from the herder thread ------------------------------------------------

    def start(self) -> None:
        self._thread.start()

    def transition_to(self, target: TargetState) -> None:
        with self._state_changed:
            self._target = target
            self._state_changed.notify_all()

    @property
    def target_state(self) -> TargetState:
        return self._target

    def stop(self) -> None:
        if self.stopping.is_set():
            return
        self.stopping.set()
        with self._state_changed:
            self._state_changed.notify_all()
        self._interrupt()

    def await_stop(self, timeout_s: float) -> bool:
        """Wait for the thread to end; False if it is still running (then abandoned)."""
        self._thread.join(timeout_s)
        if self._thread.is_alive():
            self.cancelled = True
            log.error("Task %s did not stop within %.1f s; abandoning its thread", self.id,
                      timeout_s)
            return False
        return True

    # --- inside the task thread ----------------------------------------------------------

    #: The start of the thread's name for the operating system (``top -H``, ``ps -L``):
    #: ``{kind}{task}-{connector}``, cut at 15 bytes.
    native_kind = "task"

    def _run(self) -> None:
        name_native_thread(f"{self.native_kind}{self.id.task}-{self.id.connector}")
        try:
            self.initialize()
            if not self.stopping.is_set():
                self.report_state(State.RUNNING)
                self.execute()
        except Exception as exc:  # any plugin failure: FAILED with its trace, worker lives on
            self.failed = True
            if not self.stopping.is_set():
                log.error("Task %s failed", self.id, exc_info=True)
            self.report_state(State.FAILED, exc)
        finally:
            try:
                self.close()
            except Exception:
                log.exception("Task %s failed while closing", self.id)
            if self.header_converter is not None:
                try:
                    self.header_converter.close()
                except Exception:
                    log.exception("Task %s: closing the header converter failed", self.id)
            if not self.failed:
                self.report_state(State.UNASSIGNED)

    def record_topic(self, topic: str) -> None:
        """KIP-558: note a topic this task produced to / consumed from, once per topic."""
        self.seen_topics.add(topic)
        if self._on_topic is not None:
            self._on_topic(topic)

    def await_unpaused(self) -> bool:
        """Block while the target state is PAUSED; return False when stopping."""
        if self._target is not TargetState.PAUSED:
            return not self.stopping.is_set()
        self.on_pause()
        self.report_state(State.PAUSED)
        with self._state_changed:
            while self._target is TargetState.PAUSED and not self.stopping.is_set():
                self._state_changed.wait(1.0)
        if self.stopping.is_set():
            return False
        self.on_resume()
        self.report_state(State.RUNNING)
        return True

    def report_state(self, state: State, error: BaseException | None = None) -> None:
        """Record a state change in the task's metrics and the status store (not once
        the task was cancelled: the status belongs to whatever runs the task now)."""
        if self.cancelled:
            return
        self.metrics.state_changed(state)
        self.status.task(self.id, state, error)

    def _interrupt(self) -> None:
        # The plugin's stop() may block; never let it block the caller.
        threading.Thread(target=_call_quietly, args=(self.task.stop, self.id),
                         name=f"stop-{self.id.connector}-{self.id.task}", daemon=True).start()

    @abstractmethod
    def initialize(self) -> None:
        """Create clients and start the plugin task."""

    @abstractmethod
    def execute(self) -> None:
        """The task loop; returns once ``stopping`` is set."""

    @abstractmethod
    def close(self) -> None:
        """Commit what can be committed and release clients."""

    def on_pause(self) -> None:
        """Hook: the task is about to pause."""

    def on_resume(self) -> None:
        """Hook: the task resumed."""


def _call_quietly(fn: Callable[[], None], task_id: TaskId) -> None:
    try:
        fn()
    except Exception:
        log.exception("Task %s raised from stop()", task_id)
