"""worker.herder.distributed.group_leader: what the leader logs about lost work, and the
held work it sends to every member (for ``GET /admin/cluster``), with fake clocks."""

from __future__ import annotations

import logging

import pytest

from worker.herder.distributed.assignor import Assignment
from worker.herder.distributed.group_leader import GroupLeader, describe
from worker.herder.distributed.protocol import HeldWork, MemberMetadata, WorkerAssignment
from worker.storage.base import TaskId

DELAY_MS = 300_000
SHAPE = {"sink": 1, "source": 1}
#: 2026-01-01T00:00:00Z
EPOCH_S = 1_767_225_600.0


class Clocks:
    def __init__(self) -> None:
        self.mono = 50.0
        self.wall = EPOCH_S

    def advance(self, seconds: float) -> None:
        self.mono += seconds
        self.wall += seconds


NOTHING = Assignment()


def member(port: int, owned: Assignment = NOTHING, rejoin: int = 0) -> MemberMetadata:
    return MemberMetadata(f"http://127.0.0.1:{port}", f"127.0.0.1:{port}", 5, owned, rejoin)


def round_(leader: GroupLeader, members: dict[str, MemberMetadata]
           ) -> dict[str, WorkerAssignment]:
    result = leader.assign("m1", members, config_offset=5, current=SHAPE,
                           led_last_round=True, own_url="http://127.0.0.1:1")
    leader.round_applied()
    return result


@pytest.fixture
def clocks() -> Clocks:
    return Clocks()


@pytest.fixture
def leader(clocks: Clocks) -> GroupLeader:
    return GroupLeader(DELAY_MS, clock=lambda: clocks.mono, wall_clock=lambda: clocks.wall)


def two_workers(leader: GroupLeader) -> dict[str, WorkerAssignment]:
    first = round_(leader, {"m1": member(1), "m2": member(2)})
    assert all(not a.assigned.is_empty() for a in first.values())
    return first


def test_held_work_is_logged_and_sent_to_every_member(
        leader: GroupLeader, clocks: Clocks, caplog: pytest.LogCaptureFixture) -> None:
    first = two_workers(leader)
    lost = first["m2"].assigned
    clocks.advance(10)
    caplog.clear()  # only this round: the level may be INFO already (other tests)
    with caplog.at_level(logging.INFO, logger="worker.herder.distributed.group_leader"):
        alone = round_(leader, {"m1": member(1, first["m1"].assigned, 1)})
    until_ms = round((EPOCH_S + 10 + DELAY_MS / 1000) * 1000)
    assert alone["m1"].held == (HeldWork("127.0.0.1:2", "http://127.0.0.1:2", lost, until_ms),)
    assert alone["m1"].delay_ms == DELAY_MS
    assert alone["m1"].assigned == first["m1"].assigned
    [line] = caplog.messages
    assert line == (f"Worker http://127.0.0.1:2 left the group: holding its {describe(lost)} "
                    "until 2026-01-01T00:05:10.000Z (scheduled.rebalance.max.delay.ms="
                    "300000 ms); they go back to it if it rejoins by then, else to the other "
                    "workers")


def test_held_work_goes_back_at_once_to_its_worker_under_a_new_member_id(
        leader: GroupLeader, clocks: Clocks, caplog: pytest.LogCaptureFixture) -> None:
    first = two_workers(leader)
    alone = round_(leader, {"m1": member(1, first["m1"].assigned, 1)})
    clocks.advance(20)
    caplog.clear()  # only this round: the level may be INFO already (other tests)
    with caplog.at_level(logging.INFO, logger="worker.herder.distributed.group_leader"):
        back = round_(leader, {"m1": member(1, alone["m1"].assigned, 1), "m3": member(2)})
    assert back["m3"].assigned == first["m2"].assigned
    assert all(a.held == () and a.delay_ms == 0 for a in back.values())
    assert caplog.messages == [f"Worker http://127.0.0.1:2 rejoined the group: giving back "
                               f"its held {describe(first['m2'].assigned)}"]


def test_held_work_is_reassigned_after_the_delay(
        leader: GroupLeader, clocks: Clocks, caplog: pytest.LogCaptureFixture) -> None:
    first = two_workers(leader)
    round_(leader, {"m1": member(1, first["m1"].assigned, 1)})
    clocks.advance(DELAY_MS / 1000)
    caplog.clear()  # only this round: the level may be INFO already (other tests)
    with caplog.at_level(logging.INFO, logger="worker.herder.distributed.group_leader"):
        later = round_(leader, {"m1": member(1, first["m1"].assigned, 2)})
    assert later["m1"].assigned == first["m1"].assigned | first["m2"].assigned
    assert later["m1"].held == ()
    assert caplog.messages == [
        "Worker http://127.0.0.1:2 did not rejoin the group within "
        f"scheduled.rebalance.max.delay.ms=300000 ms: reassigning its held "
        f"{describe(first['m2'].assigned)}"]


def test_work_not_delivered_is_logged_and_assigned_again(
        leader: GroupLeader, caplog: pytest.LogCaptureFixture) -> None:
    first = two_workers(leader)
    caplog.clear()  # only this round: the level may be INFO already (other tests)
    with caplog.at_level(logging.INFO, logger="worker.herder.distributed.group_leader"):
        # m2 missed its SyncGroup: it rejoins owning nothing.
        again = round_(leader, {"m1": member(1, first["m1"].assigned, 1), "m2": member(2)})
    assert again["m2"].assigned == first["m2"].assigned
    assert all(a.held == () and a.delay_ms == 0 for a in again.values())
    assert caplog.messages == [
        f"Worker http://127.0.0.1:2 did not report the {describe(first['m2'].assigned)} "
        "assigned to it in the last round (its assignment was not delivered): assigning "
        "them to it again"]


def test_a_stable_round_logs_nothing(leader: GroupLeader,
                                     caplog: pytest.LogCaptureFixture) -> None:
    first = two_workers(leader)
    caplog.clear()  # only this round: the level may be INFO already (other tests)
    with caplog.at_level(logging.INFO, logger="worker.herder.distributed.group_leader"):
        round_(leader, {m: member(i + 1, a.assigned, 1) for i, (m, a) in
                        enumerate(sorted(first.items()))})
    assert caplog.messages == []


def test_describe_names_connectors_and_tasks() -> None:
    assert describe(Assignment(frozenset({"b", "a"}),
                               frozenset({TaskId("b", 1), TaskId("a", 10)}))) == \
        "connectors [a, b] and tasks [a-10, b-1]"
    assert describe(Assignment(tasks=frozenset({TaskId("a", 0)}))) == "tasks [a-0]"
    assert describe(Assignment()) == "nothing"


def test_a_round_that_never_took_effect_holds_nothing(
        leader: GroupLeader, caplog: pytest.LogCaptureFixture) -> None:
    """The leader's own SyncGroup failed: nobody got that round's assignment, so the next
    round starts from the one before, and a member gone meanwhile is the only loss."""
    first = two_workers(leader)
    grown = {**SHAPE, "new": 2}
    leader.assign("m1", {"m1": member(1, first["m1"].assigned, 1),
                         "m2": member(2, first["m2"].assigned, 1)},
                  config_offset=5, current=grown, led_last_round=True,
                  own_url="http://127.0.0.1:1")  # never applied: no round_applied()
    caplog.clear()  # only this round: the level may be INFO already (other tests)
    with caplog.at_level(logging.INFO, logger="worker.herder.distributed.group_leader"):
        again = leader.assign("m1", {"m1": member(1, first["m1"].assigned, 2),
                                     "m2": member(2, first["m2"].assigned, 2)},
                              config_offset=5, current=grown, led_last_round=True,
                              own_url="http://127.0.0.1:1")
    assert all(a.held == () and a.delay_ms == 0 for a in again.values())
    assert caplog.messages == []  # the new connector's work is new work, not lost work
