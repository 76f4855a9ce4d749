"""Leaving the group on stop: LeaveGroup at once, except for a leader of a rebalance in
progress, which lets its session expire (a leader leaving a forming group leaves Tansu's
group without a leader that can ever sync) — after ending its heartbeat loop, which would
otherwise be cancelled by the network loop's stop and log an ERROR."""

from __future__ import annotations

from typing import Any

import pytest

from worker.config.worker_config import DistributedConfig
from worker.herder.distributed.membership import HEARTBEAT_STOP_TIMEOUT_MS, GroupMembership
from worker.herder.distributed.protocol import NO_ERROR, WorkerAssignment


class FakeLoop:
    """kafka-python's heartbeat loop task: it ends (if ``ends``) once awaited after the
    coordinator closed it, as the real one wakes up, sees it closed and returns."""

    def __init__(self, coordinator: FakeCoordinator, *, ends: bool) -> None:
        self._coordinator, self._ends = coordinator, ends
        self.is_done = False

    def awaited(self) -> None:
        self.is_done = self._ends and self._coordinator.heartbeat_closed


class FakeManager:
    def __init__(self) -> None:
        self.waits: list[tuple[Any, int]] = []

    def run(self, coro: Any, *args: Any) -> Any:
        return coro(*args)

    def wait_for(self, task: FakeLoop, timeout_ms: int) -> None:
        self.waits.append((task, timeout_ms))
        task.awaited()
        if not task.is_done:
            raise TimeoutError(f"Timed out after {timeout_ms} ms")


class FakeCoordinator:
    def __init__(self, *, stable: bool, need_rejoin: bool, loop_ends: bool = True) -> None:
        self._stable, self._need_rejoin = stable, need_rejoin
        self.closed = False
        self.heartbeat_closed = False
        self._manager = FakeManager()
        self._heartbeat_loop_future = FakeLoop(self, ends=loop_ends)

    def _close_heartbeat(self) -> None:
        self.heartbeat_closed = True

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
    # A leader ends its heartbeat loop itself (close() does it for a leaving member).
    assert coordinator.heartbeat_closed is not leaves


@pytest.mark.parametrize("loop_ends", [True, False])
def test_a_stopping_leader_waits_boundedly_for_its_heartbeat_loop(loop_ends: bool) -> None:
    coordinator = FakeCoordinator(stable=True, need_rejoin=False, loop_ends=loop_ends)
    membership = _membership(True, coordinator)
    membership.stop()  # a loop that does not end in time does not hold up the stop
    assert coordinator.heartbeat_closed and not coordinator.closed
    assert [w for _, w in coordinator._manager.waits] == [HEARTBEAT_STOP_TIMEOUT_MS]


def test_the_leader_of_a_round_being_formed_lets_its_session_expire() -> None:
    """Elected in the JoinGroup answer, before the SyncGroup that completes the join."""
    coordinator = FakeCoordinator(stable=False, need_rejoin=False)
    membership = _membership(False, coordinator)
    membership.leading()
    membership.stop()
    assert coordinator.closed is False
