"""worker.util.memory: the heap's free pages go back to the operating system once task
stops have settled, once per burst of stops."""

from __future__ import annotations

import subprocess
import sys
import threading

import pytest

from tests.support import wait_until
from worker.util.memory import MemoryTrimmer, release_free_memory

# In a fresh interpreter: 200 MB in 4 kB blocks (malloc'd, below glibc's mmap threshold)
# allocated and freed by another thread, so they stay in one of glibc's arenas; the RSS
# before and after the trim.
PROBE = """
import threading
from worker.util.memory import release_free_memory

def rss_mb():
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) // 1024 for line in f if line.startswith("VmRSS"))

def churn():
    blocks = [bytearray(4096) for _ in range(50_000)]
    del blocks

thread = threading.Thread(target=churn)
thread.start()
thread.join()
before = rss_mb()
assert release_free_memory()
print(before, rss_mb())
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim")
def test_freed_heap_goes_back_to_the_operating_system() -> None:
    result = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                            timeout=60, check=True)
    before, after = map(int, result.stdout.split())
    assert before - after > 100, (before, after)  # most of the 200 MB


class Counting:
    def __init__(self) -> None:
        self.calls = 0
        self.threads: list[str] = []

    def __call__(self) -> bool:
        self.calls += 1
        self.threads.append(threading.current_thread().name)
        return True


class Clock:
    """Moves only when the test moves it; counts the trimmer's reads."""

    def __init__(self) -> None:
        self.now, self.reads = 100.0, 0

    def __call__(self) -> float:
        self.reads += 1
        return self.now


def test_a_burst_of_stops_trims_once_after_it_settled() -> None:
    trim, clock = Counting(), Clock()
    trimmer = MemoryTrimmer(settle_s=0.02, trim=trim, clock=clock)
    for _ in range(5):
        trimmer.request()  # stops one after another, the clock standing still
    reads = clock.reads
    # The timer fires every 0.02 s, finds the last stop too recent and waits again.
    wait_until(lambda: clock.reads >= reads + 3, timeout=5, interval=0.01,
               message="the timer to look three times")
    assert trim.calls == 0 and trimmer.pending
    clock.now += 0.02  # the stops have settled
    wait_until(lambda: trim.calls == 1, timeout=5, interval=0.01, message="the trim")
    wait_until(lambda: not trimmer.pending, timeout=5, interval=0.01,
               message="no timer left")
    assert trim.threads == ["memory-trim"]  # off the caller's thread
    trimmer.request()
    clock.now += 0.02
    wait_until(lambda: trim.calls == 2, timeout=5, interval=0.01, message="the next trim")


def test_close_cancels_a_pending_trim_and_later_requests() -> None:
    trim, clock = Counting(), Clock()
    trimmer = MemoryTrimmer(settle_s=0.02, trim=trim, clock=clock)
    trimmer.request()
    timer = trimmer._timer  # its own, not another test's worker's
    assert timer is not None and timer.name == "memory-trim"
    trimmer.close()
    trimmer.request()
    clock.now += 1.0
    assert not trimmer.pending
    wait_until(lambda: not timer.is_alive(), timeout=5, interval=0.01,
               message="the cancelled timer's thread to end")
    assert trim.calls == 0


def test_release_free_memory_says_whether_it_could() -> None:
    assert release_free_memory() is sys.platform.startswith("linux")
