"""Threads named for the operating system: what ``top -H`` and ``/proc`` show of a task's,
a connector's or the idle poller's thread."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import pytest

from worker.util.threads import name_native_thread

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="native thread names are set on Linux only")


def _native_name_of_a_thread_named(name: str) -> str:
    seen: list[str] = []

    def run() -> None:
        name_native_thread(name)
        seen.append(Path(f"/proc/self/task/{threading.get_native_id()}/comm")
                    .read_text().strip())

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(10)
    assert seen, "the thread did not run"
    return seen[0]


def test_the_thread_gets_the_name() -> None:
    assert _native_name_of_a_thread_named("sink0-orders") == "sink0-orders"


def test_a_long_name_is_cut_at_15_bytes_and_the_caller_keeps_its_own() -> None:
    own = Path(f"/proc/self/task/{threading.get_native_id()}/comm").read_text().strip()
    assert _native_name_of_a_thread_named("src12-a-very-long-connector-name") == \
        "src12-a-very-lo"
    assert Path(f"/proc/self/task/{threading.get_native_id()}/comm").read_text().strip() \
        == own
