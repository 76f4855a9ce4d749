"""Leaving the group on stop: LeaveGroup at once, except for a leader of a rebalance in
progress, which lets its session expire (a leader leaving a forming group leaves Tansu's
group without a leader that can ever sync)."""

from __future__ import annotations

import pytest

from worker.config.worker_config import DistributedConfig
from worker.herder.membership import GroupMembership
from worker.herder.protocol import NO_ERROR, WorkerAssignment


class FakeCoordinator:
    def __init__(self, *, stable: bool, need_rejoin: bool) -> None:
        self._stable, self._need_rejoin = stable, need_rejoin
        self.closed = False

    def stable(self) -> bool:
        return self._stable

    def need_rejoin(self) -> bool:
        return self._need_rejoin

    def close(self, timeout_ms: int | None = None) -> None:
        self.closed = True


def _membership(leader: bool, coordinator: FakeCoordinator) -> GroupMembership:
    config = DistributedConfig({"bootstrap.servers": "127.0.0.1:1", "group.id": "g",
                                "config.storage.topic": "c", "offset.storage.topic": "o",
                                "status.storage.topic": "s"})
    membership = GroupMembership(config, metadata=lambda: None,  # type: ignore[arg-type,return-value]
                                 assign_fn=lambda leader, members: {})
    assignment = WorkerAssignment(NO_ERROR, "m-1" if leader else "m-2", "http://w1:8083", 0)
    membership.joined(3, "m-1", assignment.encode())
    membership._coordinator = coordinator  # type: ignore[assignment]
    return membership


@pytest.mark.parametrize(("leader", "stable", "need_rejoin", "leaves"), [
    (False, False, True, True),   # a follower always leaves at once
    (False, True, False, True),
    (True, True, False, False),   # a leader lets its session expire, stable or not
    (True, False, False, False),
    (True, True, True, False),
])
def test_leave_group_on_stop(leader: bool, stable: bool, need_rejoin: bool,
                             leaves: bool) -> None:
    coordinator = FakeCoordinator(stable=stable, need_rejoin=need_rejoin)
    membership = _membership(leader, coordinator)
    membership.stop()
    assert coordinator.closed is leaves


def test_the_leader_of_a_round_being_formed_lets_its_session_expire() -> None:
    """Elected in the JoinGroup answer, before the SyncGroup that completes the join."""
    coordinator = FakeCoordinator(stable=False, need_rejoin=False)
    membership = _membership(False, coordinator)
    membership.leading()
    membership.stop()
    assert coordinator.closed is False
