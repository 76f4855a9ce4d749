"""worker.runtime.metrics.sampled_stat: Kafka's windowed Avg, Max and Rate."""

from __future__ import annotations

import math

import pytest

from worker.runtime.metrics.sampled_stat import MetricWindow, SampledStat


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


WINDOW = MetricWindow(window_s=30.0, samples=2)  # Kafka's defaults


def test_nothing_recorded_is_nan_for_avg_and_max_and_zero_rate() -> None:
    stat = SampledStat(WINDOW, Clock())
    assert math.isnan(stat.avg()) and math.isnan(stat.max())
    assert stat.rate() == 0.0


def test_avg_and_max_over_the_samples_that_count() -> None:
    clock = Clock()
    stat = SampledStat(WINDOW, clock)
    for value in (2, 8, 5):
        stat.record(value)
    assert stat.avg() == 5 and stat.max() == 8
    clock.now += 35  # a second sample starts; the first still counts
    stat.record(1)
    assert stat.avg() == 4 and stat.max() == 8
    clock.now += 30  # the first sample is now older than both windows together
    assert stat.avg() == 1 and stat.max() == 1
    clock.now += 60
    assert math.isnan(stat.avg())


def test_a_new_sample_reuses_the_oldest_once_the_current_is_a_window_old() -> None:
    clock = Clock()
    stat = SampledStat(WINDOW, clock)
    stat.record(100)
    clock.now += 31
    stat.record(1)
    clock.now += 31  # a third window: the sample holding 100 is reused
    stat.record(2)
    assert stat.max() == 2 and stat.avg() == 1.5


def test_rate_assumes_at_least_num_samples_minus_one_windows_as_kafka() -> None:
    clock = Clock()
    stat = SampledStat(WINDOW, clock)
    stat.record(300)
    # Kafka's Rate: elapsed 0 s is widened to (samples - 1) windows = 30 s.
    assert stat.rate() == pytest.approx(10.0)
    clock.now += 45  # 45 s covered: one full window, no widening
    assert stat.rate() == pytest.approx(300 / 45)
    clock.now += 20  # 65 s: the only sample has expired
    assert stat.rate() == 0.0


def test_window_must_be_positive() -> None:
    with pytest.raises(ValueError):
        MetricWindow(0, 2)
    with pytest.raises(ValueError):
        MetricWindow(1, 0)
