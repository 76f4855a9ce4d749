"""The idle poller: one thread polls parked consumers without waiting, hands records or an
error to the parked task and wakes it; a task takes its consumer back only between two
polls of it; the thread lives only while a consumer is parked."""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import Any

import pytest

from tests.support import wait_until
from tests.support.messages import consumed
from worker.api import SinkRecord, SinkTask
from worker.builtin.converters.string_bytes import StringConverter
from worker.runtime import idle_poller
from worker.runtime import sink_task as sink_task_module
from worker.runtime.chain import TransformationChain
from worker.runtime.idle_poller import IdlePoller
from worker.runtime.sink_task import WorkerSinkTask
from worker.storage.base import State, TargetState, TaskId


class FakeConsumer:
    """Records who calls consume() with which timeout; returns what the test queues."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.pending: list[Any] = []
        self.error: BaseException | None = None
        self.calls: list[tuple[str, float]] = []
        self.threads: set[threading.Thread] = set()  # that called consume()
        self.in_consume = threading.Event()
        self.release = threading.Event()
        self.release.set()

    def consume(self, _num: int = 1, timeout: float = -1) -> list[Any]:
        self.calls.append((threading.current_thread().name, timeout))
        self.threads.add(threading.current_thread())
        self.in_consume.set()
        self.release.wait(5)
        if timeout > 0:
            threading.Event().wait(min(timeout, 0.01))
        with self.lock:
            if self.error is not None:
                raise self.error
            out, self.pending = self.pending, []
            return out

    def commit(self, *args: Any, **kwargs: Any) -> None:
        pass

    def pause(self, _partitions: list[Any]) -> None:
        pass

    def resume(self, _partitions: list[Any]) -> None:
        pass

    def poller_calls(self) -> int:
        return sum(1 for name, _ in self.calls if name == "sink-idle-poller")


def test_records_go_to_the_parked_task_and_wake_it() -> None:
    poller = IdlePoller(interval_s=0.01)
    consumer, wake = FakeConsumer(), threading.Event()
    parking = poller.park("c-0", consumer, 100, wake)
    wait_until(lambda: consumer.poller_calls() >= 3, timeout=5, interval=0.01,
               message="the poller polls the parked consumer")
    assert not wake.is_set()
    assert all(timeout == 0 for name, timeout in consumer.calls), consumer.calls
    with consumer.lock:
        consumer.pending = ["m1", "m2"]
    assert wake.wait(5)
    poller.unpark(parking)
    assert parking.messages == ["m1", "m2"] and parking.error is None
    calls = consumer.poller_calls()
    wait_until(lambda: not poller.running, timeout=5, interval=0.01,
               message="the poller thread ends once nothing is parked")
    assert consumer.poller_calls() == calls  # not polled after the hand-over
    assert poller.parked == 0


def test_an_error_is_handed_to_the_task() -> None:
    poller = IdlePoller(interval_s=0.01)
    consumer, wake = FakeConsumer(), threading.Event()
    consumer.error = RuntimeError("rebalance callback failed")
    parking = poller.park("c-0", consumer, 100, wake)
    assert wake.wait(5)
    poller.unpark(parking)
    assert isinstance(parking.error, RuntimeError) and parking.messages == []


def test_unpark_waits_for_a_consume_in_progress() -> None:
    poller = IdlePoller(interval_s=0.01)
    consumer, wake = FakeConsumer(), threading.Event()
    consumer.release.clear()  # the poller's consume() blocks until released
    parking = poller.park("c-0", consumer, 100, wake)
    assert consumer.in_consume.wait(5)
    taken = threading.Event()

    def take_back() -> None:
        poller.unpark(parking)
        taken.set()

    threading.Thread(target=take_back, daemon=True).start()
    assert not taken.wait(0.2)  # still inside the poller's consume()
    consumer.release.set()
    assert taken.wait(5)
    calls = len(consumer.calls)
    wait_until(lambda: not poller.running, timeout=5, interval=0.01,
               message="the poller thread ends")
    assert len(consumer.calls) == calls


def test_a_slow_poll_is_logged_naming_the_task(monkeypatch: pytest.MonkeyPatch,
                                               caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(idle_poller, "SLOW_POLL_S", 0.05)
    poller = IdlePoller(interval_s=0.01)
    consumer, wake = FakeConsumer(), threading.Event()
    consumer.release.clear()  # stands in for an open() that takes its time
    with caplog.at_level(logging.WARNING, logger="worker.runtime.idle_poller"):
        parking = poller.park("slow-3", consumer, 100, wake)
        assert consumer.in_consume.wait(5)
        threading.Event().wait(0.1)  # the consume() in progress lasts at least this long
        consumer.release.set()
        wait_until(lambda: caplog.records, timeout=5, interval=0.01,
                   message="a warning about the slow poll")
        poller.unpark(parking)
    assert caplog.records[0].message.startswith(
        "Task slow-3: its consumer's rebalance callbacks (the connector's open() or close()) "
        "took")


class BlockingCallbackConsumer(FakeConsumer):
    """Its first consume() runs a rebalance callback that hands the poller over (as
    WorkerSinkTask's callbacks do), then blocks like a connector's slow close()."""

    def __init__(self, poller: IdlePoller) -> None:
        super().__init__()
        self.poller = poller
        self.in_callback = threading.Event()
        self.callback_may_end = threading.Event()

    def consume(self, _num: int = 1, timeout: float = -1) -> list[Any]:
        if not self.in_callback.is_set():
            self.callback_thread = threading.current_thread()
            self.in_callback.set()
            self.poller.hand_over()
            assert self.callback_may_end.wait(5)
        return super().consume(_num, timeout)


def test_a_blocking_rebalance_callback_does_not_hold_up_the_other_consumers() -> None:
    poller = IdlePoller(interval_s=0.01)
    slow = BlockingCallbackConsumer(poller)
    other, other_wake = FakeConsumer(), threading.Event()
    slow_parking = poller.park("slow-0", slow, 10, threading.Event())
    other_parking = poller.park("other-0", other, 10, other_wake)
    assert slow.in_callback.wait(5)
    # While the callback blocks one poller thread, a new one serves the other consumer.
    with other.lock:
        other.pending = ["m1"]
    assert other_wake.wait(5)
    poller.unpark(other_parking)
    assert other_parking.messages == ["m1"]
    # Two poller threads (other tests' pollers, which may still be ending, not counted).
    serving = [t for t in other.threads if t is not slow.callback_thread]
    assert len(serving) == 1 and slow.callback_thread.is_alive()
    assert {t.name for t in (*serving, slow.callback_thread)} == {"sink-idle-poller"}
    slow.callback_may_end.set()
    poller.unpark(slow_parking)  # waits for the callback's consume() to return
    wait_until(lambda: not poller.running and not any(
        t.is_alive() for t in (*other.threads, *slow.threads, slow.callback_thread)),
        timeout=5, interval=0.01, message="both poller threads to end")


def test_hand_over_off_the_poller_thread_changes_nothing() -> None:
    # A task's callbacks on its own thread (its consumer not parked).
    poller = IdlePoller(interval_s=0.01)
    poller.hand_over()
    assert not poller.running


def test_one_thread_polls_many_consumers_in_turn() -> None:
    poller = IdlePoller(interval_s=0.01)
    consumers = [FakeConsumer() for _ in range(20)]
    parkings = [poller.park(f"c-{i}", c, 10, threading.Event())
                for i, c in enumerate(consumers)]
    wait_until(lambda: all(c.poller_calls() >= 2 for c in consumers), timeout=5,
               interval=0.01, message="every parked consumer is polled")
    assert {name for c in consumers for name, _ in c.calls} == {"sink-idle-poller"}
    assert len({t for c in consumers for t in c.threads}) == 1  # one thread for all
    for parking in parkings:
        poller.unpark(parking)
    wait_until(lambda: not poller.running, timeout=5, interval=0.01,
               message="the poller thread ends")


# --- a sink task with the poller ----------------------------------------------------------


class _Status:
    def __init__(self) -> None:
        self.states: list[State] = []

    def task(self, _task: TaskId, state: State, _error: BaseException | None = None) -> None:
        self.states.append(state)


class CountingSink(SinkTask):
    def __init__(self) -> None:
        self.puts: list[int] = []
        self.put_threads: set[str] = set()

    def start(self, props: Mapping[str, str]) -> None:
        pass

    def put(self, records: list[SinkRecord]) -> None:
        self.puts.append(len(records))
        self.put_threads.add(threading.current_thread().name)

    def stop(self) -> None:
        pass


@pytest.fixture(autouse=True)
def _quick_parking(monkeypatch: pytest.MonkeyPatch) -> None:
    # Park after 2 empty polls, assigned or not (the fake consumer has no rebalance).
    monkeypatch.setattr(sink_task_module, "PARK_AFTER_EMPTY_POLLS", 2)
    monkeypatch.setattr(sink_task_module, "PARK_UNASSIGNED_AFTER_EMPTY_POLLS", 2)


def _task(poller: IdlePoller, flush_ms: int = 60_000) -> tuple[WorkerSinkTask, CountingSink,
                                                              _Status]:
    sink, status = CountingSink(), _Status()
    task = WorkerSinkTask(
        TaskId("c", 0), sink, {}, TargetState.STARTED, status,  # type: ignore[arg-type]
        consumer_config={}, topics=["t"], topics_regex="", key_converter=StringConverter(),
        value_converter=StringConverter(), chain=TransformationChain([]),
        offset_flush_interval_ms=flush_ms, idle_poller=poller)
    return task, sink, status


def test_an_idle_sink_sleeps_while_the_poller_watches_and_wakes_for_records() -> None:
    poller = IdlePoller(interval_s=0.01)
    task, sink, _ = _task(poller)
    consumer = FakeConsumer()
    task._consumer = consumer  # type: ignore[assignment]
    loop = threading.Thread(target=task.execute, name="task-c-0")
    loop.start()
    try:
        wait_until(lambda: poller.parked == 1, timeout=5, interval=0.01,
                   message="the idle task parks its consumer")
        own = sum(1 for name, _ in consumer.calls if name == "task-c-0")
        wait_until(lambda: consumer.poller_calls() >= 10, timeout=5, interval=0.01,
                   message="the poller polls for the sleeping task")
        # While parked, the task's own thread does not poll.
        assert sum(1 for name, _ in consumer.calls if name == "task-c-0") == own
        with consumer.lock:
            consumer.pending = [consumed(b"v", offset=o, timestamp=(1, 1000)) for o in (0, 1)]
        wait_until(lambda: sum(sink.puts) == 2, timeout=5, interval=0.01,
                   message=lambda: f"the records are put; puts {sink.puts}")
        assert sink.put_threads == {"task-c-0"}  # put() runs on the task's thread
        wait_until(lambda: poller.parked == 1, timeout=5, interval=0.01,
                   message="idle again, the task parks again")
    finally:
        task.stop()
        loop.join(5)
    assert not loop.is_alive()
    wait_until(lambda: not poller.running, timeout=5, interval=0.01,
               message="the poller thread ends once the task stopped")


def test_stop_and_pause_wake_a_parked_task_at_once() -> None:
    poller = IdlePoller(interval_s=0.01)
    task, _, status = _task(poller)  # the next commit is a minute away
    task._consumer = FakeConsumer()  # type: ignore[assignment]
    loop = threading.Thread(target=task.execute, name="task-c-0")
    loop.start()
    try:
        wait_until(lambda: poller.parked == 1, timeout=5, interval=0.01,
                   message="the idle task parks its consumer")
        task.transition_to(TargetState.PAUSED)
        wait_until(lambda: State.PAUSED in status.states, timeout=2, interval=0.01,
                   message="a pause reaches the parked task")
        wait_until(lambda: poller.parked == 1, timeout=5, interval=0.01,
                   message="paused, the task parks again")
        task.transition_to(TargetState.STARTED)
        wait_until(lambda: status.states[-1] is State.RUNNING, timeout=2, interval=0.01,
                   message="a resume reaches the parked task")
        wait_until(lambda: poller.parked == 1, timeout=5, interval=0.01,
                   message="resumed and idle, the task parks again")
    finally:
        task.stop()
        loop.join(2)
    assert not loop.is_alive()


def test_an_idle_parked_sink_still_gets_put_and_commits_per_interval() -> None:
    poller = IdlePoller(interval_s=0.01)
    task, sink, _ = _task(poller, flush_ms=200)
    task._consumer = FakeConsumer()  # type: ignore[assignment]
    loop = threading.Thread(target=task.execute, name="task-c-0")
    loop.start()
    try:
        wait_until(lambda: len(sink.puts) >= 3, timeout=10, interval=0.02,
                   message=lambda: f"put([]) once per commit interval; have {sink.puts}")
    finally:
        task.stop()
        loop.join(5)
    assert not loop.is_alive()
    assert set(sink.puts) == {0}


def test_a_consume_error_in_the_poller_fails_the_task_on_its_thread() -> None:
    poller = IdlePoller(interval_s=0.01)
    task, _, _ = _task(poller)
    consumer = FakeConsumer()
    task._consumer = consumer  # type: ignore[assignment]
    raised: list[BaseException] = []

    def run() -> None:
        try:
            task.execute()
        except BaseException as exc:  # what _run would report as FAILED
            raised.append(exc)

    loop = threading.Thread(target=run, name="task-c-0")
    loop.start()
    try:
        wait_until(lambda: poller.parked == 1, timeout=5, interval=0.01,
                   message="the idle task parks its consumer")
        with consumer.lock:
            consumer.error = RuntimeError("on_assign failed")
        loop.join(5)
    finally:
        task.stop()
        loop.join(5)
    assert not loop.is_alive()
    assert len(raised) == 1 and str(raised[0]) == "on_assign failed"
