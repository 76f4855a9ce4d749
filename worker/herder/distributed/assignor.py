"""Incremental cooperative assignment of connectors and tasks (KIP-415), run by the leader.

Pure: no I/O, no threads. At each rebalance the group leader passes every member's id with
what that member reports it runs (and which worker it is: ``workers``, member id -> worker
id), and the configured connectors with their task counts; ``IncrementalAssignor.assign``
returns each member's full assignment, what it must revoke, and the delay before a
scheduled rebalance; ``last_round`` says what happened to lost work, for the leader's log.
One round:

1. *Work* is every connector plus ``TaskId(c, 0..n-1)``. Reported work that no longer exists
   (deleted connector, fewer tasks) is revoked; work reported by several members stays with
   the smallest member id and is revoked from the others.
2. *Lost* work was assigned by this leader last round (or is held) but is reported by
   nobody. Who it was assigned to decides what happens to it:

   * that member is still in the group: it never received its assignment (its SyncGroup
     failed, or it rejoined before applying it), so nothing left — the work is given
     again at once, to that member (Kafka, seeing every previous member still there,
     likewise reassigns lost work at once);
   * that member left, but its worker is back under a new member id (same worker id): the
     work goes back to it at once;
   * the worker is gone: with ``max_delay_ms > 0`` the work is *held* for that worker —
     assigned to nobody — until its deadline (the loss + ``max_delay_ms``), so that a
     restarting worker gets it back without churn; meanwhile every member is told
     ``delay_ms`` (time to the earliest deadline, rounded up) to rejoin. When the worker
     rejoins (any member id) it gets its held work back at once; at the deadline the work
     is assigned like new work. Kafka waits for the whole delay even when the worker is
     back, and then gives the lost work to members that joined empty during the delay.
     Held work is left out of the balance computation.
3. *Balance*, for connectors and tasks separately: with ``n`` members and ``T`` assignable
   items, every member ends with ``floor(T/n)`` or ``ceil(T/n)``; the members owning more
   than the floor get the ceil quotas first, the most first, so the fewest items move; the
   remaining ceil quotas go to the members with the most work owned or given back to them
   (step 5). A member above its quota revokes its highest-sorted excess and keeps the
   rest; work within quota is never revoked.
4. *Two-phase rule*: revoked work is given to nobody in the same round — its owner must stop
   it before another may start it. It is unowned at the next round (not lost: the leader's
   memory of what it assigned excludes revoked work) and assigned then.
5. Unowned work (new, released from a hold, revoked last round) goes at once to members
   below quota: work given back (step 2) to the member it is meant for while that member
   is below quota (beyond it, to others: ``RoundReport.moved``), the rest to the least
   loaded, ties by member id. Everything is sorted: the same input gives the same output.

Known simplification: a new leader starts with fresh state, so work lost before it became
leader looks new and is assigned at once, without a hold (as in Kafka).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from worker.storage.base import TaskId

_Item = TypeVar("_Item", str, TaskId)
Item = str | TaskId


@dataclass(frozen=True)
class Assignment:
    """A set of connectors and tasks: what a member runs, starts or stops."""

    connectors: frozenset[str] = frozenset()
    tasks: frozenset[TaskId] = frozenset()

    def __post_init__(self) -> None:
        # Accept any iterables (lists in tests, tuples from JSON) and normalise to TaskId.
        object.__setattr__(self, "connectors", frozenset(self.connectors))
        object.__setattr__(self, "tasks", frozenset(TaskId(*t) for t in self.tasks))

    @classmethod
    def of(cls, items: Iterable[str | TaskId]) -> Assignment:
        """Build from mixed items: a ``TaskId`` is a task, a ``str`` a connector."""
        items = list(items)
        return cls(frozenset(i for i in items if isinstance(i, str)),
                   frozenset(i for i in items if isinstance(i, TaskId)))

    def items(self) -> list[Item]:
        """Connectors, then tasks, each sorted."""
        return [*sorted(self.connectors), *sorted(self.tasks)]

    def __len__(self) -> int:
        return len(self.connectors) + len(self.tasks)

    def is_empty(self) -> bool:
        return not self.connectors and not self.tasks

    def union(self, other: Assignment) -> Assignment:
        return Assignment(self.connectors | other.connectors, self.tasks | other.tasks)

    def difference(self, other: Assignment) -> Assignment:
        return Assignment(self.connectors - other.connectors, self.tasks - other.tasks)

    def intersection(self, other: Assignment) -> Assignment:
        return Assignment(self.connectors & other.connectors, self.tasks & other.tasks)

    __or__ = union
    __sub__ = difference
    __and__ = intersection

    def to_dict(self) -> dict[str, Any]:
        """``{"connectors": [names], "tasks": [[connector, task], ...]}``, both sorted."""
        return {"connectors": sorted(self.connectors),
                "tasks": [[t.connector, t.task] for t in sorted(self.tasks)]}

    @classmethod
    def from_dict(cls, body: Mapping[str, Any]) -> Assignment:
        """Inverse of ``to_dict``; missing keys mean empty. Raises on malformed entries."""
        return cls(frozenset(str(c) for c in body.get("connectors", ())),
                   frozenset(TaskId(str(c), int(t)) for c, t in body.get("tasks", ())))


@dataclass(frozen=True)
class MemberAssignment:
    """One member's result for a round."""

    assigned: Assignment  # the full set to run after this round (revoked work excluded)
    revoked: Assignment  # what to stop now (a subset of what the member reported)
    delay_ms: int = 0  # > 0: work is held; rejoin after this delay


@dataclass(frozen=True)
class Hold:
    """Lost work held for ``worker`` (a worker id) until ``deadline`` (assignor clock)."""

    worker: str
    deadline: float


@dataclass(frozen=True)
class RoundReport:
    """What a round did with lost work, per worker id (``redelivered``: per member id)."""

    #: Newly held for a worker that left.
    held: Mapping[str, Assignment] = field(default_factory=dict)
    #: Held (or lost) work given back to its worker, which rejoined under a new member id.
    returned: Mapping[str, Assignment] = field(default_factory=dict)
    #: Released to the group: the worker did not return in time (or there is no delay).
    reassigned: Mapping[str, Assignment] = field(default_factory=dict)
    #: Not reported by a member still in the group (its assignment was not delivered):
    #: given to it again.
    redelivered: Mapping[str, Assignment] = field(default_factory=dict)
    #: Meant to go back (``returned``, ``redelivered``) but given to other members, beyond
    #: the quota of the one it was meant for.
    moved: Mapping[str, Assignment] = field(default_factory=dict)


#: A round's report as it is built: ``RoundReport``'s field -> who -> items.
_Report = dict[str, dict[str, list[Item]]]
_KINDS = ("held", "returned", "reassigned", "redelivered", "moved")

#: The assignor's memory between rounds (``checkpoint``/``restore``).
State = tuple[dict[Item, str], dict[str, str], dict[Item, Hold]]


class IncrementalAssignor:
    """Stateful across rounds on one leader; see the module docstring for the rules."""

    def __init__(self, max_delay_ms: int, clock: Callable[[], float] = time.monotonic) -> None:
        if max_delay_ms < 0:
            raise ValueError(f"max_delay_ms must be >= 0, got {max_delay_ms}")
        self._max_delay_ms = max_delay_ms
        self._clock = clock  # seconds
        self._owners: dict[Item, str] = {}  # assigned last round -> member id
        self._workers: dict[str, str] = {}  # last round's members -> worker id
        self._holds: dict[Item, Hold] = {}  # held item -> for whom, until when
        self.last_round = RoundReport()

    def checkpoint(self) -> State:
        """The memory before a round, to :meth:`restore` if that round never took effect."""
        return dict(self._owners), dict(self._workers), dict(self._holds)

    def restore(self, state: State) -> None:
        """Forget a round whose assignment was never delivered (its SyncGroup failed):
        otherwise work it gave out would look lost next round and be held again."""
        self._owners, self._workers, self._holds = (dict(state[0]), dict(state[1]),
                                                    dict(state[2]))

    @property
    def held(self) -> Assignment:
        """Lost work currently held back, waiting for its worker to return."""
        return Assignment.of(self._holds)

    def holds(self) -> dict[tuple[str, float], Assignment]:
        """Held work by (worker id, deadline in the assignor's clock)."""
        grouped: dict[tuple[str, float], list[Item]] = {}
        for item, hold in self._holds.items():
            grouped.setdefault((hold.worker, hold.deadline), []).append(item)
        return {key: Assignment.of(items) for key, items in sorted(grouped.items())}

    def assign(self, members: Mapping[str, Assignment], connectors: Mapping[str, int],
               workers: Mapping[str, str] | None = None) -> dict[str, MemberAssignment]:
        """Each member's assignment for this round; ``connectors`` maps name to task count,
        ``workers`` member id to worker id (default: each member is a worker of its own)."""
        self.last_round = RoundReport()
        if not members:
            return {}
        ids = sorted(members)
        worker_of = {m: (workers or {}).get(m, m) for m in ids}
        work = Assignment(frozenset(connectors),
                          frozenset(TaskId(c, i) for c, n in connectors.items() for i in range(n)))
        kept: dict[str, Assignment] = {}
        claimed = Assignment()
        for member in ids:  # smallest id first, so it wins duplicates
            kept[member] = (members[member] & work) - claimed
            claimed |= kept[member]
        report: _Report = {kind: {} for kind in _KINDS}
        given_back = self._lost(work - claimed, worker_of, report)
        prefer = {item: member for item, (member, _, _) in given_back.items()}
        held = self.held
        assignable = work - held
        conns = _balance({m: kept[m].connectors for m in ids}, assignable.connectors, prefer)
        tasks = _balance({m: kept[m].tasks for m in ids}, assignable.tasks, prefer)
        delay_ms = self._delay_ms()
        result: dict[str, MemberAssignment] = {}
        self._owners = {}
        for member in ids:
            assigned = Assignment(conns[member], tasks[member])
            # Newly assigned work was reported by nobody, so this is exactly the deleted,
            # duplicate and excess work the member reported.
            result[member] = MemberAssignment(assigned, members[member] - assigned, delay_ms)
            self._owners.update(dict.fromkeys(assigned.items(), member))
        self._workers = worker_of
        for item, (member, kind, who) in given_back.items():
            if self._owners.get(item) != member:  # beyond that member's quota
                kind, who = "moved", worker_of[member]
            report[kind].setdefault(who, []).append(item)
        self.last_round = RoundReport(**{kind: {who: Assignment.of(items)
                                                for who, items in by.items()}
                                         for kind, by in report.items()})
        return result

    def _lost(self, unclaimed: Assignment, worker_of: Mapping[str, str], report: _Report
              ) -> dict[Item, tuple[str, str, str]]:
        """Decide the fate of lost work (module docstring, step 2): update the holds, add
        work held or reassigned to ``report``, and return the work to give back, each item
        with (the member it goes to, the ``report`` kind and key saying so)."""
        now = self._clock()
        member_of: dict[str, str] = {}
        for member in sorted(worker_of, reverse=True):  # the smallest id wins
            member_of[worker_of[member]] = member
        given_back: dict[Item, tuple[str, str, str]] = {}
        holds: dict[Item, Hold] = {}
        for item in unclaimed.items():  # held or assigned last round, reported by nobody
            hold = self._holds.get(item)
            owner = self._owners.get(item)
            if hold is None and owner is None:
                continue  # new work
            if hold is None and owner is not None and owner in worker_of:
                given_back[item] = (owner, "redelivered", owner)
                continue
            worker = hold.worker if hold is not None else self._workers.get(owner or "",
                                                                            owner or "")
            if worker in member_of:
                given_back[item] = (member_of[worker], "returned", worker)
            elif hold is not None and _remaining_ms(hold.deadline, now) > 0:
                holds[item] = hold
            elif hold is None and self._max_delay_ms > 0:
                holds[item] = Hold(worker, now + self._max_delay_ms / 1000)
                report["held"].setdefault(worker, []).append(item)
            else:
                report["reassigned"].setdefault(worker, []).append(item)
        self._holds = holds
        return given_back

    def _delay_ms(self) -> int:
        if not self._holds:
            return 0
        now = self._clock()
        earliest = min(h.deadline for h in self._holds.values())
        return max(1, math.ceil(_remaining_ms(earliest, now)))


def _remaining_ms(deadline: float, now: float) -> float:
    # Rounded to the microsecond so float noise neither delays a release nor adds 1 ms.
    return round((deadline - now) * 1000, 6)


def _balance(owned: Mapping[str, frozenset[_Item]], work: frozenset[_Item],
             prefer: Mapping[Any, str]) -> dict[str, frozenset[_Item]]:
    """Balance one kind: revoke excess above quota, give unowned work to those below it
    (``prefer``: work meant for a member goes to it while it is below its quota)."""
    base, extra = divmod(len(work), len(owned))
    wanted = dict.fromkeys(owned, 0)
    for item in work:
        if prefer.get(item) in wanted:
            wanted[prefer[item]] += 1

    def order(m: str) -> tuple[int, int, str]:
        # Members owning more than the floor keep the ceil first, the biggest first (each
        # denied one revokes running work); then those with the most owned or given back.
        above = len(owned[m]) if len(owned[m]) > base else 0
        return -above, -(len(owned[m]) + wanted[m]), m
    ranked = sorted(owned, key=order)
    quota = {m: base + (rank < extra) for rank, m in enumerate(ranked)}
    result = {m: sorted(owned[m])[:quota[m]] for m in owned}
    # Work owned at the start of the round, including the excess just revoked, is not free.
    taken = frozenset().union(*owned.values())
    free = sorted(work - taken)
    rest = []
    for item in free:
        member = prefer.get(item)
        if member in result and len(result[member]) < quota[member]:
            result[member].append(item)
        else:
            rest.append(item)
    for item in rest:
        # The quotas sum to len(work), so some member is always below its quota here.
        member = min((m for m in owned if len(result[m]) < quota[m]),
                     key=lambda m: (len(result[m]), m))
        result[member].append(item)
    return {m: frozenset(items) for m, items in result.items()}
