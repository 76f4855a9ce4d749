"""Faults in a 3-worker cluster, one after the other on one pipeline:

1. the broker stalls for 30 s (SIGSTOP/SIGCONT) — the group coordinator, the internal
   topics and the data all freeze at once;
2. the leader is SIGKILLed while a connector is being created through a follower (the
   follower forwards the write to the leader, which dies with it in flight).

After each, without any restart by the test, every connector and task is RUNNING on the
surviving workers and the REST API answers without a 5xx; the connector whose creation
was interrupted exists once (the client retries as Connect's clients do) and, like the
first sink, receives every record: nothing lost or reordered, duplicates counted.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import httpx
import pytest
from confluent_kafka.admin import AdminClient

from tests.conftest import DistributedClusterFactory
from tests.faults._pipeline import (
    WORKER_PROPS,
    Pipeline,
    assert_nothing_lost_or_reordered,
    check_sequences,
    sink_lines,
    summarize,
)
from tests.integration._cluster_helpers import leader_of, post_retrying_conflicts
from tests.support import create_topic, wait_for_connector_state, wait_until
from worker.testing import EmbeddedBroker

STALL_S = 30.0

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(420)]


def _create(api: httpx.Client, name: str, config: dict[str, str]) -> list[int]:
    """Create ``name`` as a client would across a leader failure: 409s and failed
    connections are retried; "already exists" means an earlier attempt got through."""
    codes: list[int] = []
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        try:
            response = post_retrying_conflicts(api, "/connectors", timeout=60,
                                               json={"name": name, "config": config})
        except httpx.HTTPError:
            codes.append(0)
            continue
        codes.append(response.status_code)
        if response.status_code == 201 or "already exists" in response.text:
            return codes
    raise AssertionError(f"could not create {name}: {codes}")


def test_cluster_rides_out_a_broker_stall_and_a_leader_killed_mid_create(
        private_broker: EmbeddedBroker, distributed_cluster: DistributedClusterFactory,
        tmp_path: Path) -> None:
    bootstrap = private_broker.bootstrap_servers
    create_topic(AdminClient({"bootstrap.servers": bootstrap}), "cluster-faults",
                 partitions=2)
    cluster = distributed_cluster(3, {**WORKER_PROPS, "bootstrap.servers": bootstrap})
    leader = leader_of(cluster.workers)
    follower = next(w for w in cluster.workers if w is not leader)
    pipeline = Pipeline(follower.client, "cluster-faults", tmp_path / "sink.txt", tasks=2,
                        count=3000, rate=50.0)
    for name, config in pipeline.configs().items():
        assert post_retrying_conflicts(follower.client, "/connectors", timeout=60,
                                       json={"name": name, "config": config}
                                       ).status_code == 201
    pipeline.wait_running(timeout=90)
    pipeline.wait_delivered(300, timeout=90)

    # 1. The broker stalls.
    private_broker.pause()
    time.sleep(STALL_S)  # the fault itself: a stall of fixed length
    at_resume = pipeline.delivered()
    private_broker.resume()
    resumed_at = time.monotonic()
    pipeline.wait_delivered(at_resume + 1, timeout=120)
    stall_recovery_s = time.monotonic() - resumed_at
    pipeline.wait_running(timeout=90)
    assert all(w.client.get("/connectors?expand=status").status_code == 200
               for w in cluster.workers)

    # 2. The leader dies while it handles a create forwarded by a follower.
    leader = leader_of(cluster.workers)
    follower = next(w for w in cluster.workers if w is not leader)
    second_file = tmp_path / "second-sink.txt"
    second = {"connector.class": "FileStreamSink", "topics": "cluster-faults",
              "file": str(second_file)}
    codes: list[int] = []
    creating = threading.Thread(target=lambda: codes.extend(
        _create(follower.client, "faults-second-sink", second)), daemon=True)
    creating.start()
    leader.kill()
    killed_at = time.monotonic()
    creating.join(120)
    assert codes and (codes[-1] == 201 or codes[-1] == 409), codes
    survivors = [w for w in cluster.workers if w.is_running]
    wait_for_connector_state(follower.client, "faults-second-sink", "RUNNING",
                             tasks_state="RUNNING", timeout=120)
    kill_recovery_s = time.monotonic() - killed_at
    pipeline.client = follower.client
    pipeline.wait_running(timeout=120)

    pipeline.wait_delivered(pipeline.total(), timeout=240)
    expected = dict.fromkeys(range(pipeline.tasks), pipeline.count)
    wait_until(lambda: len(set(sink_lines(second_file))) >= pipeline.total(), timeout=240,
               message="the interrupted connector did not receive every record")
    first, later = pipeline.report(), check_sequences(sink_lines(second_file), expected)
    print("\n" + summarize("broker-stall-30s/cluster-3", first,
                           recovery_s=stall_recovery_s))
    print(summarize("leader-sigkill-mid-create/cluster-3", later,
                    recovery_s=kill_recovery_s, create_answers=codes))
    assert [c for c in codes if c >= 500] == [], codes
    for worker in survivors:
        listing = worker.client.get("/connectors")
        assert listing.status_code == 200
        assert sorted(listing.json()) == sorted([pipeline.source, pipeline.sink,
                                                 "faults-second-sink"])
    assert_nothing_lost_or_reordered(first)
    assert_nothing_lost_or_reordered(later)
