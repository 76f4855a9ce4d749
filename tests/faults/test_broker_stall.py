"""Fault: the broker stalls for 30 s (SIGSTOP, then SIGCONT) while a pipeline streams.

Connections stay open and nothing answers, as with a broker stuck in a long GC pause or
a frozen VM. The worker must ride it out: when the broker is back, every connector and
task is RUNNING without a restart, the REST API answers without a 5xx, and the sink has
every record once the source finished — duplicates allowed, no loss, no reordering.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from tests.faults._pipeline import assert_nothing_lost_or_reordered, start_standalone, summarize
from worker.testing import EmbeddedBroker

STALL_S = 30.0

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(300)]


def test_standalone_rides_out_a_30s_broker_stall(private_broker: EmbeddedBroker,
                                                 standalone_worker, tmp_path: Path) -> None:
    bootstrap = private_broker.bootstrap_servers
    # 2 streams × 3,000 records at 100/s each: 30 s of production, the stall in its middle.
    worker, pipeline = start_standalone(
        standalone_worker, AdminClient({"bootstrap.servers": bootstrap}), "stall",
        tmp_path / "sink.txt", rate=100.0, bootstrap=bootstrap)
    pipeline.wait_delivered(500, timeout=60)

    private_broker.pause()
    stalled_at = time.monotonic()
    during = [worker.client.get(f"/connectors/{name}/status").status_code
              for name in (pipeline.source, pipeline.sink)]
    remaining = STALL_S - (time.monotonic() - stalled_at)
    time.sleep(max(0.0, remaining))  # the fault itself: a stall of fixed length
    at_resume = pipeline.delivered()
    private_broker.resume()
    resumed_at = time.monotonic()

    # Flowing again: new records reach the sink, with no restart by anyone.
    pipeline.wait_delivered(at_resume + 1, timeout=120)
    flowing_s = time.monotonic() - resumed_at
    pipeline.wait_running(timeout=60)
    pipeline.wait_delivered(pipeline.total(), timeout=180)
    drained_s = time.monotonic() - resumed_at

    after = [worker.client.get(path).status_code for path in (
        "/connectors", f"/connectors/{pipeline.source}/status",
        f"/connectors/{pipeline.sink}/status", f"/connectors/{pipeline.source}/offsets",
        f"/connectors/{pipeline.sink}/offsets", "/health")]
    reports = pipeline.report()
    print("\n" + summarize("broker-stall-30s/standalone", reports, recovery_s=flowing_s,
                           drained_s=drained_s))

    assert during == [200, 200], "status is served from the worker's own state"
    assert all(code < 500 for code in after), after
    assert_nothing_lost_or_reordered(reports)
