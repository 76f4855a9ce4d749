"""Fault: the REST API is flooded while a pipeline streams.

Eight clients send reads (status, listings with ``expand``, offsets, plugins) and
pause/resume writes as fast as the worker answers them. No answer may be a 5xx, the
pipeline's tasks keep running, and every record reaches the sink exactly as at-least-once
delivery allows: nothing lost or reordered.
"""

from __future__ import annotations

import collections
import itertools
import threading
import time
from pathlib import Path

import httpx
import pytest

from tests.faults._pipeline import (
    Pipeline,
    assert_nothing_lost_or_reordered,
    start_standalone,
    summarize,
)

CLIENTS = 8
FLOOD_S = 15.0

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


def _flood(url: str, pipeline: Pipeline, stop: threading.Event,
           statuses: collections.Counter[int], latencies: list[float]) -> None:
    requests = itertools.cycle([
        ("GET", f"/connectors/{pipeline.source}/status"),
        ("GET", "/connectors?expand=status&expand=info"),
        ("GET", f"/connectors/{pipeline.sink}/offsets"),
        ("GET", "/connector-plugins"),
        ("GET", f"/connectors/{pipeline.sink}/tasks/0/status"),
        ("PUT", f"/connectors/{pipeline.sink}/pause"),
        ("PUT", f"/connectors/{pipeline.sink}/resume"),
    ])
    with httpx.Client(base_url=url, timeout=30.0) as client:
        for method, path in requests:
            if stop.is_set():
                return
            started = time.monotonic()
            try:
                code = client.request(method, path).status_code
            except httpx.HTTPError:
                code = 0  # refused or reset: counted, must not happen
            latencies.append(time.monotonic() - started)
            statuses[code] += 1


def test_flooded_rest_api_answers_no_5xx_while_tasks_run(standalone_worker, kafka_admin,
                                                         unique_topic, tmp_path: Path
                                                         ) -> None:
    worker, pipeline = start_standalone(standalone_worker, kafka_admin, unique_topic("flood"),
                                        tmp_path / "sink.txt", rate=150.0)
    pipeline.wait_delivered(100, timeout=60)

    stop = threading.Event()
    statuses: collections.Counter[int] = collections.Counter()
    latencies: list[float] = []
    threads = [threading.Thread(target=_flood, args=(worker.url, pipeline, stop, statuses,
                                                     latencies), daemon=True)
               for _ in range(CLIENTS)]
    for thread in threads:
        thread.start()
    try:
        stop.wait(FLOOD_S)  # the fault lasts this long
    finally:
        stop.set()
        for thread in threads:
            thread.join(60)
    # The last resume may have lost to a pause: resume once more, as an operator would.
    assert worker.client.put(f"/connectors/{pipeline.sink}/resume").status_code == 202
    pipeline.wait_running(timeout=60)
    pipeline.wait_delivered(pipeline.total(), timeout=180)

    reports = pipeline.report()
    ordered = sorted(latencies)
    p99 = ordered[int(len(ordered) * 0.99)] if ordered else 0.0
    print("\n" + summarize("rest-flood/standalone", reports, requests=sum(statuses.values()),
                           p99_ms=p99 * 1000, statuses=dict(sorted(statuses.items()))))
    assert sum(statuses.values()) > 100
    assert not [code for code in statuses if code >= 500 or code == 0], statuses
    assert_nothing_lost_or_reordered(reports)
