"""worker.runtime.metrics.tasks and worker_metrics: the per-batch accumulators."""

from __future__ import annotations

import math

import pytest

from worker.runtime.metrics.sampled_stat import MetricWindow
from worker.runtime.metrics.tasks import TaskMetrics
from worker.runtime.metrics.worker import RebalanceMetrics, WorkerMetrics
from worker.storage.base import State


class Clock:
    def __init__(self) -> None:
        self.now = 500.0

    def __call__(self) -> float:
        return self.now


def metrics(clock: Clock, kind: str = "source") -> TaskMetrics:
    return TaskMetrics("c", 0, kind, MetricWindow(30.0, 2), clock)


def test_ratios_follow_the_time_spent_in_each_state() -> None:
    clock = Clock()
    m = metrics(clock)
    assert m.ratio(State.RUNNING) == 0.0  # before the first state change, as Kafka
    m.state_changed(State.RUNNING)
    clock.now += 30
    m.state_changed(State.PAUSED)
    clock.now += 10
    assert m.ratio(State.RUNNING) == pytest.approx(0.75)
    assert m.ratio(State.PAUSED) == pytest.approx(0.25)
    m.state_changed(State.RUNNING)
    clock.now += 40
    assert m.ratio(State.RUNNING) == pytest.approx(70 / 80)
    assert m.state is State.RUNNING


@pytest.mark.parametrize(("states", "outcome"), [
    ([State.RUNNING, State.PAUSED, State.RUNNING, State.FAILED], [True]),
    ([State.FAILED, State.RUNNING], [False]),
    ([State.UNASSIGNED, State.PAUSED], []),
])
def test_startup_is_reported_once(states: list[State], outcome: list[bool]) -> None:
    m = metrics(Clock())
    seen: list[bool] = []
    m.on_startup = seen.append
    for state in states:
        m.state_changed(state)
    assert seen == outcome


def test_source_poll_and_write_move_totals_rates_and_the_active_count() -> None:
    clock = Clock()
    m = metrics(clock)
    m.record_poll(100, 0.002)
    m.record_poll(50, 0.004)
    assert (m.poll_total, m.source_active) == (150, 150)
    assert m.poll_time_ms.avg() == pytest.approx(3.0)
    assert m.poll_time_ms.max() == pytest.approx(4.0)
    assert m.batch_size.max() == 100
    m.record_write(120, skipped=10)
    assert (m.write_total, m.source_active) == (120, 20)
    assert m.source_active_stat.max() == 150
    assert m.write_counts.rate() == pytest.approx(120 / 30)  # young stat: 1 window
    m.record_write(100)  # more than active (acks of records polled before a restart)
    assert m.source_active == 0


def test_sink_read_put_commit() -> None:
    clock = Clock()
    m = metrics(clock, "sink")
    m.record_read(10)
    m.record_put(8, 0.010)
    m.record_sink_active(8)
    m.record_commit(0.005, ok=True)
    m.record_commit(0.050, ok=False)
    assert (m.read_total, m.send_total, m.commit_completion_total) == (10, 8, 1)
    assert m.put_time_ms.avg() == pytest.approx(10.0)
    assert m.commit_time_ms.max() == pytest.approx(5.0)  # successes only, as Kafka
    assert m.commit_success_fraction() == pytest.approx(0.5)
    assert m.sink_active == 8


def test_sink_commit_sequence_number_counts_attempts_and_nothing_is_skipped() -> None:
    m = metrics(Clock(), "sink")
    assert (m.commit_seq_no, m.commit_skip_total) == (0, 0)
    m.record_commit_attempt()
    m.record_commit(0.005, ok=True)
    m.record_commit_attempt()
    m.record_commit(0.005, ok=False)
    m.record_commit_attempt()  # e.g. nothing committable after pre_commit: no completion
    assert m.commit_seq_no == 3  # Kafka's commitSeqno: every attempt
    assert m.commit_completion_total == 1
    assert m.commit_skip_total == 0  # synchronous commits: never a late completion


def test_commit_fraction_without_attempts_is_zero() -> None:
    assert metrics(Clock()).commit_success_fraction() == 0.0


def test_worker_startup_counters() -> None:
    wm = WorkerMetrics()
    wm.connector_startup(True)
    wm.task_startup(True)
    wm.task_startup(False)
    assert (wm.connector_startup_success, wm.connector_startup_failure) == (1, 0)
    assert (wm.task_startup_success, wm.task_startup_failure) == (1, 1)
    assert wm.task_startup_results.avg() == pytest.approx(0.5)


def test_rebalance_metrics() -> None:
    clock, wall = Clock(), Clock()
    rm = RebalanceMetrics("sessioned", MetricWindow(30.0, 2), clock, wall)
    assert math.isinf(rm.time_since_last_ms()) and not rm.rebalancing
    rm.started()
    clock.now += 1.5
    rm.started()  # a round restarted before it completed: the first start counts
    assert rm.rebalancing
    clock.now += 0.5
    rm.completed_round(7, "http://leader:8083")
    wall.now += 2
    assert (rm.completed, rm.epoch, rm.leader, rm.rebalancing) == (
        1, 7, "http://leader:8083", False)
    assert rm.times_ms.max() == pytest.approx(2000.0)
    assert rm.time_since_last_ms() == pytest.approx(2000.0)
