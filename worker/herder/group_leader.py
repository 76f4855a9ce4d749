"""The group leader's side of a rebalance: turn members' metadata into assignments.

Keeps the ``IncrementalAssignor`` across rounds while this worker stays leader. A round
whose assignment never took effect (a new rebalance interrupted its SyncGroup) is forgotten
(``restore``): otherwise the work it gave out would look lost next round and be held again.
"""

from __future__ import annotations

from worker.herder.assignor import IncrementalAssignor
from worker.herder.cluster_view import Shape
from worker.herder.protocol import (
    CONFIG_MISMATCH,
    NO_ERROR,
    ClusterMember,
    MemberMetadata,
    WorkerAssignment,
    group_protocol,
)


class GroupLeader:
    def __init__(self, max_delay_ms: int) -> None:
        self._max_delay_ms = max_delay_ms
        self._assignor = IncrementalAssignor(max_delay_ms)
        self._before_round = self._assignor.checkpoint()
        self._round_pending = False

    def round_applied(self) -> None:
        """This worker received the assignment of the round it computed last."""
        self._round_pending = False

    def assign(self, leader_id: str, members: dict[str, MemberMetadata], *,
               config_offset: int, current: Shape, led_last_round: bool,
               own_url: str) -> dict[str, WorkerAssignment]:
        if not led_last_round:
            # Work lost before we led is unknown to us: a new leader starts afresh.
            self._assignor = IncrementalAssignor(self._max_delay_ms)
        elif self._round_pending:
            self._assignor.restore(self._before_round)
        self._before_round = self._assignor.checkpoint()
        self._round_pending = True
        leader_url = members[leader_id].url if leader_id in members else own_url
        wanted = max((m.config_offset for m in members.values()), default=-1)
        protocol = group_protocol([m.protocol for m in members.values()])
        if config_offset < wanted:
            return {m: WorkerAssignment(CONFIG_MISMATCH, leader_id, leader_url, config_offset,
                                        protocol=protocol)
                    for m in members}
        rounds = self._assignor.assign({m: meta.owned for m, meta in members.items()},
                                       current)
        cluster = tuple(ClusterMember(members[m].url, members[m].worker_id, r.assigned)
                        for m, r in sorted(rounds.items()))
        return {m: WorkerAssignment(NO_ERROR, leader_id, leader_url, config_offset,
                                    r.assigned, r.revoked, r.delay_ms, cluster, protocol)
                for m, r in rounds.items()}
