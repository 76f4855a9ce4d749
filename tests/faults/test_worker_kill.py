"""Fault: the standalone worker is SIGKILLed while a pipeline streams, then started again.

Nothing is flushed or committed on the way down. On restart every connector and task
comes back RUNNING by itself, the source continues from its last committed offsets and
the sink from its group's: records since those commits arrive twice (at-least-once, counted),
none is lost or reordered.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.faults._pipeline import assert_nothing_lost_or_reordered, start_standalone, summarize

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


def test_sigkilled_standalone_worker_recovers_without_loss(standalone_worker, kafka_admin,
                                                           unique_topic, tmp_path: Path
                                                           ) -> None:
    worker, pipeline = start_standalone(standalone_worker, kafka_admin, unique_topic("kill"),
                                        tmp_path / "sink.txt", rate=150.0)
    pipeline.wait_delivered(1500, timeout=90)

    worker.kill()
    at_kill = pipeline.delivered()
    killed_at = time.monotonic()
    worker.start()
    pipeline.wait_running(timeout=90)
    pipeline.wait_delivered(at_kill + 1, timeout=120)
    recovery_s = time.monotonic() - killed_at
    pipeline.wait_delivered(pipeline.total(), timeout=180)

    reports = pipeline.report()
    print("\n" + summarize("worker-sigkill/standalone", reports, recovery_s=recovery_s))
    assert_nothing_lost_or_reordered(reports)
    assert at_kill < pipeline.total(), "the kill must land mid-stream"
