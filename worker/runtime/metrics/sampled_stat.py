"""Windowed statistics as Kafka's metrics library computes them (``SampledStat``).

A stat keeps ``metrics.num.samples`` samples, each covering ``metrics.sample.window.ms``;
a value is recorded into the current sample, a new one starts (reusing the oldest) once the
current one is a window old, and a sample older than all the windows together no longer
counts. Over the samples that count: ``avg`` (Kafka's ``Avg``), ``max`` (``Max``) — NaN
when nothing was recorded, as in Kafka — and ``rate`` (``Rate`` over a ``WindowedSum``:
the sum divided by the time the samples cover, at least ``num.samples - 1`` windows).

One thread records (the task thread that owns the stat, once per batch); the scrape
thread only reads. Reading takes no lock and changes nothing: under the GIL a read that
overlaps a record may see that record half-applied, which a metric may show for one scrape
(Kafka locks per sensor instead; a lock per batch is what this module avoids).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

NAN = math.nan


@dataclass(frozen=True)
class MetricWindow:
    """``metrics.sample.window.ms`` and ``metrics.num.samples`` (Kafka's defaults)."""

    window_s: float = 30.0
    samples: int = 2

    def __post_init__(self) -> None:
        if self.window_s <= 0 or self.samples < 1:
            raise ValueError("a metric window needs window_s > 0 and samples >= 1")


class _Sample:
    __slots__ = ("start", "count", "total", "max")

    def __init__(self, start: float) -> None:
        self.start = start
        self.count = 0
        self.total = 0.0
        self.max = -math.inf

    def reset(self, start: float) -> None:
        self.start = start
        self.count = 0
        self.total = 0.0
        self.max = -math.inf


class SampledStat:
    """Windowed count, sum and maximum of recorded values."""

    __slots__ = ("_window", "_n", "_samples", "_current", "_clock")

    def __init__(self, window: MetricWindow,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._window = window.window_s
        self._n = window.samples
        self._clock = clock
        now = clock()
        self._samples = [_Sample(now) for _ in range(window.samples)]
        self._current = 0

    def record(self, value: float, now: float | None = None) -> None:
        """Add ``value`` to the current sample (the writer thread only)."""
        if now is None:
            now = self._clock()
        sample = self._samples[self._current]
        if now - sample.start >= self._window:
            self._current = (self._current + 1) % self._n
            sample = self._samples[self._current]
            sample.reset(now)
        sample.count += 1
        sample.total += value
        if value > sample.max:
            sample.max = value

    def _live(self, now: float) -> list[_Sample]:
        expire = self._n * self._window
        return [s for s in self._samples if now - s.start < expire]

    def avg(self, now: float | None = None) -> float:
        live = self._live(self._clock() if now is None else now)
        count = sum(s.count for s in live)
        return sum(s.total for s in live) / count if count else NAN

    def max(self, now: float | None = None) -> float:
        values = [s.max for s in self._live(self._clock() if now is None else now)
                  if s.count]
        return max(values) if values else NAN

    def rate(self, now: float | None = None) -> float:
        """The windowed sum per second (Kafka's ``Rate`` in seconds)."""
        if now is None:
            now = self._clock()
        live = self._live(now)
        oldest = min((s.start for s in live), default=now)
        elapsed = now - oldest
        full_windows = int(elapsed / self._window)
        if full_windows < self._n - 1:
            # As Kafka: a young stat is assumed to span n-1 windows, so a burst in its
            # first second does not show as a huge rate.
            elapsed += (self._n - 1 - full_windows) * self._window
        return sum(s.total for s in live) / max(elapsed, 0.001)
