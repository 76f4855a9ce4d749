"""Incremental cooperative assignment of connectors and tasks (KIP-415), run by the leader.

Pure: no I/O, no threads. At each rebalance the group leader passes every member's id with
what that member reports it runs, and the configured connectors with their task counts;
``IncrementalAssignor.assign`` returns each member's full assignment, what it must revoke,
and the delay before a scheduled rebalance. One round:

1. *Work* is every connector plus ``TaskId(c, 0..n-1)``. Reported work that no longer exists
   (deleted connector, fewer tasks) is revoked; work reported by several members stays with
   the smallest member id and is revoked from the others.
2. *Lost* work was assigned by this leader last round but is reported by nobody (its worker
   left). With ``max_delay_ms > 0`` it is *held* — assigned to nobody — until the deadline
   (first time the loss was seen + ``max_delay_ms``, per item) so a restarting worker gets
   it back without churn; meanwhile every member is told ``delay_ms`` (time to the earliest
   deadline, rounded up) to rejoin. Work reported again before its deadline is no longer
   lost; after it, it is assigned like new work. Members joining during a hold do not change
   it (Kafka hands held work to new members; we keep it simple). Held work is left out of
   the balance computation.
3. *Balance*, for connectors and tasks separately: with ``n`` members and ``T`` assignable
   items, every member ends with ``floor(T/n)`` or ``ceil(T/n)``; the members owning the most
   get the ceil quotas so the fewest items move. A member above its quota revokes its
   highest-sorted excess and keeps the rest; work within quota is never revoked.
4. *Two-phase rule*: revoked work is given to nobody in the same round — its owner must stop
   it before another may start it. It is unowned at the next round (not lost: the leader's
   memory of what it assigned excludes revoked work) and assigned then.
5. Unowned work (new, released from a hold, revoked last round) goes at once to members
   below quota, least loaded first, ties by member id. Everything is sorted: the same input
   gives the same output.

Known simplification: a new leader starts with fresh state, so work lost before it became
leader looks new and is assigned at once, without a hold.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from worker.storage.base import TaskId

_Item = TypeVar("_Item", str, TaskId)


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


class IncrementalAssignor:
    """Stateful across rounds on one leader; see the module docstring for the rules."""

    def __init__(self, max_delay_ms: int, clock: Callable[[], float] = time.monotonic) -> None:
        if max_delay_ms < 0:
            raise ValueError(f"max_delay_ms must be >= 0, got {max_delay_ms}")
        self._max_delay_ms = max_delay_ms
        self._clock = clock  # seconds
        self._previous = Assignment()  # assigned last round, plus work still held
        self._deadlines: dict[str | TaskId, float] = {}  # held item -> release time

    def checkpoint(self) -> tuple[Assignment, dict[str | TaskId, float]]:
        """The memory before a round, to :meth:`restore` if that round never took effect."""
        return self._previous, dict(self._deadlines)

    def restore(self, state: tuple[Assignment, dict[str | TaskId, float]]) -> None:
        """Forget a round whose assignment was never delivered (its SyncGroup failed):
        otherwise work it gave out would look lost next round and be held again."""
        self._previous, self._deadlines = state[0], dict(state[1])

    @property
    def held(self) -> Assignment:
        """Lost work currently held back, waiting for its worker to return."""
        return Assignment.of(self._deadlines)

    def assign(self, members: Mapping[str, Assignment], connectors: Mapping[str, int]
               ) -> dict[str, MemberAssignment]:
        """Each member's assignment for this round; ``connectors`` maps name to task count."""
        if not members:
            return {}
        ids = sorted(members)
        work = Assignment(frozenset(connectors),
                          frozenset(TaskId(c, i) for c, n in connectors.items() for i in range(n)))
        kept: dict[str, Assignment] = {}
        claimed = Assignment()
        for member in ids:  # smallest id first, so it wins duplicates
            kept[member] = (members[member] & work) - claimed
            claimed |= kept[member]
        held, delay_ms = self._hold((self._previous & work) - claimed)
        assignable = work - held
        conns = _balance({m: kept[m].connectors for m in ids}, assignable.connectors)
        tasks = _balance({m: kept[m].tasks for m in ids}, assignable.tasks)
        result: dict[str, MemberAssignment] = {}
        previous = held
        for member in ids:
            assigned = Assignment(conns[member], tasks[member])
            # Newly assigned work was reported by nobody, so this is exactly the deleted,
            # duplicate and excess work the member reported.
            result[member] = MemberAssignment(assigned, members[member] - assigned, delay_ms)
            previous |= assigned
        self._previous = previous
        return result

    def _hold(self, lost: Assignment) -> tuple[Assignment, int]:
        """Update the held set from this round's lost work; return it and the delay (ms)."""
        if self._max_delay_ms == 0:
            return Assignment(), 0
        now = self._clock()
        start = now + self._max_delay_ms / 1000
        # Work reported again or deleted is dropped; new losses start their own clock.
        items: tuple[str | TaskId, ...] = (*lost.connectors, *lost.tasks)
        deadlines = {item: self._deadlines.get(item, start) for item in items}
        self._deadlines = {i: d for i, d in deadlines.items() if _remaining_ms(d, now) > 0}
        if not self._deadlines:
            return Assignment(), 0
        return self.held, max(1, math.ceil(_remaining_ms(min(self._deadlines.values()), now)))


def _remaining_ms(deadline: float, now: float) -> float:
    # Rounded to the microsecond so float noise neither delays a release nor adds 1 ms.
    return round((deadline - now) * 1000, 6)


def _balance(owned: Mapping[str, frozenset[_Item]], work: frozenset[_Item]
             ) -> dict[str, frozenset[_Item]]:
    """Balance one kind: revoke excess above quota, give unowned work to those below it."""
    base, extra = divmod(len(work), len(owned))
    ranked = sorted(owned, key=lambda m: (-len(owned[m]), m))  # biggest owners keep the ceil
    quota = {m: base + (rank < extra) for rank, m in enumerate(ranked)}
    result = {m: sorted(owned[m])[:quota[m]] for m in owned}
    # Work owned at the start of the round, including the excess just revoked, is not free.
    taken = frozenset().union(*owned.values())
    for item in sorted(work - taken):
        # The quotas sum to len(work), so some member is always below its quota here.
        member = min((m for m in owned if len(result[m]) < quota[m]),
                     key=lambda m: (len(result[m]), m))
        result[member].append(item)
    return {m: frozenset(items) for m, items in result.items()}
