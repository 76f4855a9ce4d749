"""The group leader's side of a rebalance: turn members' metadata into assignments.

Keeps the ``IncrementalAssignor`` across rounds while this worker stays leader. A round
whose assignment never took effect (a new rebalance interrupted its SyncGroup) is forgotten
(``restore``): otherwise the work it gave out would look lost next round and be held again.

What happens to lost work is logged at INFO (Kafka logs it at DEBUG): work held for a
worker that left (which connectors and tasks, for which worker, until when), given back
when that worker rejoins, reassigned when it did not return in time, or given again to a
member that never received its assignment. The work held travels in every assignment
(``WorkerAssignment.held``), so that any worker's ``GET /admin/cluster`` shows it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime

from worker.herder.distributed.assignor import Assignment, IncrementalAssignor, RoundReport
from worker.herder.distributed.cluster_view import Shape
from worker.herder.distributed.protocol import (
    CONFIG_MISMATCH,
    NO_ERROR,
    ClusterMember,
    HeldWork,
    MemberMetadata,
    WorkerAssignment,
    group_protocol,
)

log = logging.getLogger(__name__)

DELAY_SETTING = "scheduled.rebalance.max.delay.ms"


class GroupLeader:
    def __init__(self, max_delay_ms: int, clock: Callable[[], float] = time.monotonic,
                 wall_clock: Callable[[], float] = time.time) -> None:
        self._max_delay_ms = max_delay_ms
        self._clock = clock
        self._wall_clock = wall_clock
        self._assignor = IncrementalAssignor(max_delay_ms, clock)
        self._before_round = self._assignor.checkpoint()
        self._round_pending = False
        #: Worker id -> URL of every worker seen while leading (to name held work's owner).
        self._urls: dict[str, str] = {}

    def round_applied(self) -> None:
        """This worker received the assignment of the round it computed last."""
        self._round_pending = False

    def assign(self, leader_id: str, members: dict[str, MemberMetadata], *,
               config_offset: int, current: Shape, led_last_round: bool,
               own_url: str) -> dict[str, WorkerAssignment]:
        if not led_last_round:
            # Work lost before we led is unknown to us: a new leader starts afresh.
            self._assignor = IncrementalAssignor(self._max_delay_ms, self._clock)
            self._urls = {}
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
        self._urls.update({meta.worker_id: meta.url for meta in members.values()})
        rounds = self._assignor.assign({m: meta.owned for m, meta in members.items()},
                                       current, {m: meta.worker_id
                                                 for m, meta in members.items()})
        self._log_round(self._assignor.last_round, members)
        held = self._held()
        # Only the URLs still needed: this round's members and the workers held for.
        self._urls = {**{h.worker_id: h.url for h in held if h.url},
                      **{meta.worker_id: meta.url for meta in members.values()}}
        cluster = tuple(ClusterMember(members[m].url, members[m].worker_id, r.assigned)
                        for m, r in sorted(rounds.items()))
        return {m: WorkerAssignment(NO_ERROR, leader_id, leader_url, config_offset,
                                    r.assigned, r.revoked, r.delay_ms, cluster, protocol, held)
                for m, r in rounds.items()}

    def _held(self) -> tuple[HeldWork, ...]:
        now, wall = self._clock(), self._wall_clock()
        return tuple(HeldWork(worker, self._urls.get(worker, ""), work,
                              round((wall + deadline - now) * 1000))
                     for (worker, deadline), work in self._assignor.holds().items())

    def _log_round(self, report: RoundReport, members: Mapping[str, MemberMetadata]) -> None:
        for worker, work in report.held.items():
            deadline = max(d for (w, d) in self._assignor.holds() if w == worker)
            until = self._wall_clock() + deadline - self._clock()
            log.info("Worker %s left the group: holding its %s until %s (%s=%d ms); they "
                     "go back to it if it rejoins by then, else to the other workers",
                     self._name(worker), describe(work), _iso(until), DELAY_SETTING,
                     self._max_delay_ms)
        for worker, work in report.returned.items():
            log.info("Worker %s rejoined the group: giving back its held %s",
                     self._name(worker), describe(work))
        for worker, work in report.reassigned.items():
            if self._max_delay_ms > 0:
                log.info("Worker %s did not rejoin the group within %s=%d ms: reassigning "
                         "its held %s", self._name(worker), DELAY_SETTING,
                         self._max_delay_ms, describe(work))
            else:
                log.info("Worker %s left the group: reassigning its %s at once (%s=0)",
                         self._name(worker), describe(work), DELAY_SETTING)
        for worker, work in report.moved.items():
            log.info("Giving the %s meant for worker %s to other workers instead, to keep "
                     "the balance", describe(work), self._name(worker))
        for member, work in report.redelivered.items():
            worker = members[member].worker_id if member in members else member
            log.info("Worker %s did not report the %s assigned to it in the last round (its "
                     "assignment was not delivered): assigning them to it again",
                     self._name(worker), describe(work))

    def _name(self, worker: str) -> str:
        """The worker's URL (its id is the URL's host:port), else id and URL."""
        url = self._urls.get(worker)
        if not url or url.endswith(f"://{worker}"):
            return url or worker
        return f"{worker} ({url})"


def describe(work: Assignment) -> str:
    """``connectors [a, b] and tasks [a-0, b-1]`` (each part only when there is some)."""
    tasks = [f"{t.connector}-{t.task}" for t in sorted(work.tasks)]
    parts = [f"{kind} [{', '.join(names)}]" for kind, names in
             (("connectors", sorted(work.connectors)), ("tasks", tasks)) if names]
    return " and ".join(parts) or "nothing"


def _iso(epoch_s: float) -> str:
    """An epoch time as ISO-8601 UTC, to the millisecond."""
    text = datetime.fromtimestamp(epoch_s, UTC).isoformat(timespec="milliseconds")
    return text.replace("+00:00", "Z")
