"""Give the memory that stopped tasks freed back to the operating system.

A task's librdkafka client and its threads allocate from glibc's malloc arenas (up to 8 per
core, shared by the worker's thousands of threads), and glibc keeps what they free for
later allocations: a worker whose 500 tasks were stopped measured 315 MB RSS, most of it
free heap. ``malloc_trim(0)`` hands every arena's free pages back (a few ms, without the
GIL: ctypes releases it around the call). ``MemoryTrimmer`` runs it once the stops have
settled, so that stopping many connectors one after the other trims once, not per stop.

Where there is no ``malloc_trim`` (not glibc, e.g. musl or macOS) nothing happens.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import logging
import threading
import time
from collections.abc import Callable

log = logging.getLogger(__name__)

#: How long after the last stop the trim runs.
SETTLE_S = 2.0


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        trim: Callable[[int], int] = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):
        return None
    return trim


def release_free_memory() -> bool:
    """Hand the heap's free pages back to the operating system; False where it cannot."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True


class MemoryTrimmer:
    """``request()`` after tasks stopped; the trim runs ``settle_s`` after the last request,
    on a timer thread that exists only while one is pending."""

    def __init__(self, settle_s: float = SETTLE_S,
                 trim: Callable[[], bool] = release_free_memory,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._settle_s = settle_s
        self._trim = trim
        self._clock = clock
        self._lock = threading.Lock()
        self._last = 0.0
        self._timer: threading.Timer | None = None
        self._closed = False

    @property
    def pending(self) -> bool:
        return self._timer is not None

    def request(self) -> None:
        with self._lock:
            self._last = self._clock()
            if self._timer is None and not self._closed:
                self._schedule(self._settle_s)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None

    def _schedule(self, delay_s: float) -> None:
        timer = threading.Timer(delay_s, self._fire)
        timer.name, timer.daemon = "memory-trim", True
        self._timer = timer
        timer.start()

    def _fire(self) -> None:
        with self._lock:
            if self._closed:
                return
            wait = self._last + self._settle_s - self._clock()
            if wait > 0:  # more stops came meanwhile: trim once they have settled
                self._schedule(wait)
                return
            self._timer = None
        started = self._clock()
        if self._trim():
            log.debug("Freed heap memory returned to the operating system in %.0f ms",
                      (self._clock() - started) * 1000)
