"""DistributedHerder, without a broker: the work the leader holds reaches
``cluster_info`` (``GET /admin/cluster``) on every worker, counts as assigned (no rebalance
for it), and a write arriving during a rebalance waits for the group instead of failing.

The herder is built over real (never started) Kafka stores, as in
``test_distributed_worker_config.py``; the same runs for real in
``tests/integration/test_distributed_held_work.py``.
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime

import pytest

from tests.unit.worker.herder.conftest import new_distributed_herder
from worker.errors import RebalanceNeededError
from worker.herder.distributed import cluster_view
from worker.herder.distributed import herder as distributed
from worker.herder.distributed.assignor import Assignment
from worker.herder.distributed.herder import DistributedHerder
from worker.herder.distributed.protocol import NO_ERROR, ClusterMember, HeldWork, WorkerAssignment
from worker.herder.models import ClusterInfo, ClusterMemberInfo, HeldWorkInfo
from worker.rest.forward import FORWARD_TIMEOUT_S
from worker.storage.base import TaskId

W1 = Assignment(frozenset({"src"}), frozenset({TaskId("src", 0)}))
HELD = Assignment(frozenset({"sink"}), frozenset({TaskId("sink", 0), TaskId("src", 1)}))
UNTIL_MS = 1_767_225_910_250  # 2026-01-01T00:05:10.250Z


@pytest.fixture
def herder() -> DistributedHerder:
    return new_distributed_herder("http://127.0.0.1:8083",
                                  listeners="http://127.0.0.1:8083")


def holding() -> WorkerAssignment:
    return WorkerAssignment(
        NO_ERROR, "m1", "http://127.0.0.1:8083", 3, assigned=W1,
        cluster=(ClusterMember("http://127.0.0.1:8083", "127.0.0.1:8083", W1),),
        held=(HeldWork("127.0.0.1:8084", "http://127.0.0.1:8084", HELD, UNTIL_MS),))


def test_cluster_info_lists_the_held_work(herder: DistributedHerder) -> None:
    herder._assignment = holding()
    assert herder.cluster_info() == ClusterInfo(
        "http://127.0.0.1:8083", [ClusterMemberInfo("127.0.0.1:8083", "http://127.0.0.1:8083")],
        [HeldWorkInfo("127.0.0.1:8084", "http://127.0.0.1:8084", ["sink"],
                      [TaskId("sink", 0), TaskId("src", 1)],
                      datetime(2026, 1, 1, 0, 5, 10, 250000, tzinfo=UTC))])


def test_held_work_is_not_unassigned_work() -> None:
    """Every worker asks for a rebalance when the config holds work nobody was given; work
    held for a worker that left waits for that worker instead."""
    shape = {"src": 2, "sink": 1}
    assert not cluster_view.has_unassigned_work(holding(), shape)
    assert cluster_view.has_unassigned_work(holding(), {**shape, "new": 1})
    assert cluster_view.has_stale_work(holding(), {"src": 1})  # a held task was deleted


def test_a_write_during_a_rebalance_waits_for_it(herder: DistributedHerder) -> None:
    """Kafka's herder keeps requests queued until its member is back in a stable group."""
    calls: list[float] = []

    def write() -> str:
        calls.append(time.monotonic())
        return "written"
    results: list[object] = []
    writer = threading.Thread(target=lambda: results.append(herder._when_stable(write)))
    writer.start()
    writer.join(0.5)
    assert writer.is_alive() and calls == []  # still rebalancing: not run, not failed
    stable_at = time.monotonic()
    herder._stable.set()
    writer.join(5)
    assert results == ["written"] and calls[0] >= stable_at


def test_a_write_retries_when_a_rebalance_starts_before_it_runs(
        herder: DistributedHerder) -> None:
    attempts: list[int] = []

    def write() -> str:
        attempts.append(1)
        if len(attempts) < 3:
            raise RebalanceNeededError()  # the herder thread found the group rebalancing
        return "written"
    herder._stable.set()
    assert herder._when_stable(write) == "written"
    assert len(attempts) == 3


def test_a_write_gives_up_with_kafkas_409_after_the_wait(
        herder: DistributedHerder, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(distributed, "REBALANCE_WAIT_S", 0.3)
    started = time.monotonic()
    with pytest.raises(RebalanceNeededError, match="stale configuration"):
        herder._when_stable(lambda: "never run")
    assert 0.3 <= time.monotonic() - started < 3


def test_the_wait_ends_before_a_forwarding_follower_gives_up() -> None:
    """A write forwarded by a follower must get its answer (or the 409) back in time."""
    assert 30 <= distributed.REBALANCE_WAIT_S < FORWARD_TIMEOUT_S
