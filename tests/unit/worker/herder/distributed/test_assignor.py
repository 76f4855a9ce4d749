"""worker.herder.distributed.assignor: KIP-415 incremental cooperative assignment, with a
fake clock."""

from __future__ import annotations

import functools
import random
from collections.abc import Iterable, Mapping

import pytest

from worker.herder.distributed.assignor import (
    Assignment,
    IncrementalAssignor,
    MemberAssignment,
    RoundReport,
)
from worker.storage.base import TaskId

CONNECTORS = {"a": 4, "b": 4, "c": 4}
DELAY_MS = 10_000


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, ms: float) -> None:
        self.now += ms / 1000


def all_work(connectors: Mapping[str, int]) -> Assignment:
    return Assignment(frozenset(connectors),
                      frozenset(TaskId(c, i) for c, n in connectors.items() for i in range(n)))


def merged(assignments: Iterable[Assignment]) -> Assignment:
    return functools.reduce(Assignment.union, assignments, Assignment())


def run_round(assignor: IncrementalAssignor, owned: Mapping[str, Assignment],
              connectors: Mapping[str, int], workers: Mapping[str, str] | None = None
              ) -> dict[str, MemberAssignment]:
    """One round, checked against the invariants that hold in every round."""
    result = assignor.assign(owned, connectors, workers)
    assert sorted(result) == sorted(owned)
    all_revoked = merged(r.revoked for r in result.values())
    seen = Assignment()
    for member, r in result.items():
        assert (r.revoked - owned[member]).is_empty()
        assert (r.assigned - all_work(connectors)).is_empty()
        assert (r.assigned & seen).is_empty(), "work assigned twice"
        seen |= r.assigned
        # Two-phase rule: nothing starts on a member in the round it is revoked anywhere.
        assert ((r.assigned - owned[member]) & all_revoked).is_empty()
        assert r.delay_ms == next(iter(result.values())).delay_ms
    return result


def report(result: Mapping[str, MemberAssignment]) -> dict[str, Assignment]:
    """What members report at the next round: what they were assigned."""
    return {m: r.assigned for m, r in result.items()}


def converge(assignor: IncrementalAssignor, clock: FakeClock, owned: Mapping[str, Assignment],
             connectors: Mapping[str, int], rounds: int = 2,
             workers: Mapping[str, str] | None = None) -> dict[str, Assignment]:
    for _ in range(rounds):
        result = run_round(assignor, owned, connectors, workers)
        owned = report(result)
        clock.advance(next(iter(result.values())).delay_ms)
    assert all(r.revoked.is_empty() and r.delay_ms == 0 for r in result.values())
    assert_complete_and_balanced(owned, all_work(connectors))
    return owned


def assert_complete_and_balanced(owned: Mapping[str, Assignment], work: Assignment) -> None:
    assert sum(len(a) for a in owned.values()) == len(work)
    assert merged(owned.values()) == work
    for kind in ("connectors", "tasks"):
        counts = [len(getattr(a, kind)) for a in owned.values()]
        assert max(counts) - min(counts) <= 1, (kind, counts)


def stable_cluster(members: list[str], delay_ms: int = DELAY_MS
                   ) -> tuple[IncrementalAssignor, FakeClock, dict[str, Assignment]]:
    clock = FakeClock()
    assignor = IncrementalAssignor(delay_ms, clock)
    owned = converge(assignor, clock, {m: Assignment() for m in members}, CONNECTORS)
    return assignor, clock, owned


def test_initial_assignment_is_balanced_in_one_round() -> None:
    result = run_round(IncrementalAssignor(DELAY_MS, FakeClock()),
                       {m: Assignment() for m in ("w1", "w2", "w3")}, CONNECTORS)
    assert all(r.revoked.is_empty() and r.delay_ms == 0 for r in result.values())
    assert_complete_and_balanced(report(result), all_work(CONNECTORS))
    assert [(len(r.assigned.connectors), len(r.assigned.tasks)) for r in result.values()] \
        == [(1, 4)] * 3
    again = IncrementalAssignor(DELAY_MS, FakeClock()).assign(
        {m: Assignment() for m in ("w3", "w1", "w2")}, dict(reversed(CONNECTORS.items())))
    assert again == result


def test_stable_cluster_moves_nothing() -> None:
    assignor, _, owned = stable_cluster(["w1", "w2", "w3"])
    result = assignor.assign(owned, CONNECTORS)
    assert result == {m: MemberAssignment(a, Assignment()) for m, a in owned.items()}


def test_join_revokes_excess_first_then_assigns_it() -> None:
    assignor, _, before = stable_cluster(["w1", "w2", "w3"])
    first = run_round(assignor, {**before, "w4": Assignment()}, CONNECTORS)
    assert first["w4"].assigned.is_empty()
    revoked = merged(r.revoked for r in first.values())
    assert len(revoked.tasks) == 3 and not revoked.connectors
    for member in before:  # only the excess (the highest task) left; the rest stayed
        assert first[member].revoked.tasks == {max(before[member].tasks)}
        assert first[member].assigned == before[member] - first[member].revoked
        assert len(first[member].assigned.tasks) == 3

    second = run_round(assignor, report(first), CONNECTORS)  # revoked work is not "lost"
    assert second["w4"].assigned == revoked
    assert all(r.revoked.is_empty() and r.delay_ms == 0 for r in second.values())
    after = report(second)
    assert_complete_and_balanced(after, all_work(CONNECTORS))
    moved = {i for m in before for i in (*before[m].connectors, *before[m].tasks)
             if i not in after[m].connectors | after[m].tasks}
    assert moved == set(revoked.tasks)


def test_leave_with_delay_holds_work_until_the_deadline() -> None:
    assignor, clock, before = stable_cluster(["w1", "w2", "w3"])
    survivors = {m: before[m] for m in ("w1", "w2")}
    first = run_round(assignor, survivors, CONNECTORS)
    assert {m: r.assigned for m, r in first.items()} == survivors
    assert all(r.revoked.is_empty() and r.delay_ms == DELAY_MS for r in first.values())
    assert assignor.held == before["w3"]

    clock.advance(4400.6)
    second = run_round(assignor, report(first), CONNECTORS)
    assert report(second) == survivors
    assert {r.delay_ms for r in second.values()} == {5600}  # 5599.4, rounded up

    clock.advance(5600)
    third = run_round(assignor, report(second), CONNECTORS)
    assert all(r.revoked.is_empty() and r.delay_ms == 0 for r in third.values())
    assert_complete_and_balanced(report(third), all_work(CONNECTORS))
    assert assignor.held.is_empty()


def test_leave_without_delay_reassigns_at_once() -> None:
    assignor, _, before = stable_cluster(["w1", "w2", "w3"], delay_ms=0)
    result = run_round(assignor, {m: before[m] for m in ("w1", "w2")}, CONNECTORS)
    assert all(r.revoked.is_empty() and r.delay_ms == 0 for r in result.values())
    assert_complete_and_balanced(report(result), all_work(CONNECTORS))


def test_return_before_the_deadline_moves_nothing() -> None:
    assignor, clock, before = stable_cluster(["w1", "w2", "w3"])
    held = run_round(assignor, {m: before[m] for m in ("w1", "w2")}, CONNECTORS)
    clock.advance(3000)
    back = run_round(assignor, {**report(held), "w3": before["w3"]}, CONNECTORS)
    assert back == {m: MemberAssignment(a, Assignment()) for m, a in before.items()}
    assert assignor.held.is_empty()
    clock.advance(DELAY_MS)  # the old deadline passing changes nothing either
    assert assignor.assign(before, CONNECTORS) == back


def test_new_members_do_not_change_a_hold() -> None:
    assignor, clock, before = stable_cluster(["w1", "w2", "w3"])
    first = run_round(assignor, {m: before[m] for m in ("w1", "w2")}, CONNECTORS)
    clock.advance(1000)
    joined = run_round(assignor, {**report(first), "w4": Assignment()}, CONNECTORS)
    assert assignor.held == before["w3"]
    assert {r.delay_ms for r in joined.values()} == {DELAY_MS - 1000}
    # 8 assignable tasks over 3 members: the two owners of 4 each give up one for w4.
    assert len(merged(r.revoked for r in joined.values()).tasks) == 2


def test_a_hold_is_reported_and_listed_per_worker() -> None:
    assignor, clock, before = stable_cluster(["w1", "w2", "w3"])
    run_round(assignor, {m: before[m] for m in ("w1", "w2")}, CONNECTORS)
    assert assignor.last_round == RoundReport(held={"w3": before["w3"]})
    assert assignor.holds() == {("w3", clock.now + DELAY_MS / 1000): before["w3"]}
    clock.advance(DELAY_MS)
    run_round(assignor, {m: before[m] for m in ("w1", "w2")}, CONNECTORS)
    assert assignor.last_round == RoundReport(reassigned={"w3": before["w3"]})
    assert assignor.holds() == {}


def test_leave_without_delay_is_reported_as_reassigned() -> None:
    assignor, _, before = stable_cluster(["w1", "w2", "w3"], delay_ms=0)
    run_round(assignor, {m: before[m] for m in ("w1", "w2")}, CONNECTORS)
    assert assignor.last_round == RoundReport(reassigned={"w3": before["w3"]})


def test_work_a_member_never_received_is_given_to_it_again_at_once() -> None:
    """A member whose SyncGroup failed rejoins reporting what it ran before: the work of
    the round it missed is not lost (it is still a member), so it is not held."""
    assignor, _, before = stable_cluster(["w1", "w2", "w3"])
    grown = {**CONNECTORS, "d": 3}
    delivered = run_round(assignor, before, grown)
    missed = {m: r.assigned - before[m] for m, r in delivered.items()}
    assert all(not work.is_empty() for work in missed.values())
    # w2 never got that assignment: it reports what it had before.
    again = run_round(assignor, {**report(delivered), "w2": before["w2"]}, grown)
    assert again["w2"].assigned == delivered["w2"].assigned
    assert all(r.delay_ms == 0 and r.revoked.is_empty() for r in again.values())
    assert assignor.held.is_empty()
    assert assignor.last_round == RoundReport(redelivered={"w2": missed["w2"]})


def test_a_worker_back_under_a_new_member_id_gets_its_held_work_at_once() -> None:
    workers = {"m1": "host1", "m2": "host2", "m3": "host3"}
    clock = FakeClock()
    assignor = IncrementalAssignor(DELAY_MS, clock)
    owned: Mapping[str, Assignment] = {m: Assignment() for m in workers}
    for _ in range(2):
        owned = report(run_round(assignor, owned, CONNECTORS, workers))
    survivors = {m: owned[m] for m in ("m1", "m2")}
    held = run_round(assignor, survivors, CONNECTORS, workers)
    assert assignor.last_round == RoundReport(held={"host3": owned["m3"]})
    clock.advance(1000)
    # The worker restarted: a new member id, the same worker id, nothing running.
    back = run_round(assignor, {**report(held), "m9": Assignment()}, CONNECTORS,
                     {**workers, "m9": "host3"})
    assert back["m9"].assigned == owned["m3"]
    assert all(r.delay_ms == 0 and r.revoked.is_empty() for r in back.values())
    assert assignor.held.is_empty()
    assert assignor.last_round == RoundReport(returned={"host3": owned["m3"]})


def test_a_worker_back_before_the_next_round_is_not_held_at_all() -> None:
    """Restarted between two rounds: its old member is gone, its new one is there."""
    workers = {"m1": "host1", "m2": "host2"}
    assignor = IncrementalAssignor(DELAY_MS, FakeClock())
    owned: Mapping[str, Assignment] = {m: Assignment() for m in workers}
    owned = report(run_round(assignor, owned, CONNECTORS, workers))
    result = run_round(assignor, {"m1": owned["m1"], "m7": Assignment()}, CONNECTORS,
                       {"m1": "host1", "m7": "host2"})
    assert result["m7"].assigned == owned["m2"]
    assert all(r.delay_ms == 0 for r in result.values())
    assert assignor.last_round == RoundReport(returned={"host2": owned["m2"]})


def test_held_work_given_back_respects_the_balance() -> None:
    """Connectors created while a worker was away went to the others; when it returns it
    gets its own work back up to its quota, and the balance holds at once."""
    workers = {"m1": "host1", "m2": "host2"}
    clock = FakeClock()
    assignor = IncrementalAssignor(DELAY_MS, clock)
    owned: Mapping[str, Assignment] = {m: Assignment() for m in workers}
    owned = report(run_round(assignor, owned, {"a": 4}, workers))
    alone = report(run_round(assignor, {"m1": owned["m1"]}, {"a": 4, "b": 6}, workers))
    assert alone["m1"] == owned["m1"] | all_work({"b": 6})  # b is new: not held
    back = run_round(assignor, {**alone, "m3": Assignment()}, {"a": 4, "b": 6},
                     {**workers, "m3": "host2"})
    assert (owned["m2"] - back["m3"].assigned).is_empty()  # its own work, within quota
    converge(assignor, clock, report(back), {"a": 4, "b": 6})


def test_work_given_back_beyond_the_quota_goes_to_the_others() -> None:
    workers = {"m1": "host1", "m2": "host2"}
    clock = FakeClock()
    assignor = IncrementalAssignor(DELAY_MS, clock)
    owned: Mapping[str, Assignment] = {m: Assignment() for m in workers}
    owned = report(run_round(assignor, owned, {"a": 6}, workers))
    away = owned["m2"]
    assert len(away.tasks) == 3
    # m2 leaves (its 3 tasks held), m3 joins and takes a share of the rest.
    now = {"m1": owned["m1"], "m3": Assignment()}
    workers = {**workers, "m3": "host3", "m9": "host2"}
    for _ in range(2):
        now = report(run_round(assignor, now, {"a": 6}, workers))
    assert assignor.held == away
    back = run_round(assignor, {**now, "m9": Assignment()}, {"a": 6}, workers)
    assert len(back["m9"].assigned.tasks) == 2  # 6 tasks over 3 workers
    returned, moved = assignor.last_round.returned, assignor.last_round.moved
    assert returned["host2"] == back["m9"].assigned
    assert returned["host2"] | moved["host2"] == away and len(moved["host2"]) == 1
    assert_complete_and_balanced(report(back), all_work({"a": 6}))


def test_deleted_connector_is_revoked() -> None:
    assignor, clock, before = stable_cluster(["w1", "w2", "w3"])
    remaining = {"a": 4, "c": 4}
    result = run_round(assignor, before, remaining)
    deleted = Assignment(frozenset({"b"}), frozenset(TaskId("b", i) for i in range(4)))
    assert (deleted - merged(r.revoked for r in result.values())).is_empty()
    assert all((r.assigned & deleted).is_empty() for r in result.values())
    assert all(r.delay_ms == 0 for r in result.values())  # deleted work is not lost
    converge(assignor, clock, report(result), remaining)


def test_fewer_tasks_revokes_the_higher_tasks() -> None:
    assignor, clock, before = stable_cluster(["w1", "w2", "w3"])
    fewer = {**CONNECTORS, "b": 2}
    result = run_round(assignor, before, fewer)
    gone = {TaskId("b", 2), TaskId("b", 3)}
    for member, r in result.items():
        assert r.revoked.tasks >= gone & before[member].tasks
        assert not r.assigned.tasks & gone
    converge(assignor, clock, report(result), fewer)


def test_duplicates_stay_with_the_smallest_member_id() -> None:
    assignor, _, before = stable_cluster(["w1", "w2", "w3"])
    stolen = sorted(before["w3"].tasks)[0]
    zombie = {**before, "w1": before["w1"] | Assignment(tasks=frozenset({stolen}))}
    result = run_round(assignor, zombie, CONNECTORS)
    assert stolen in result["w3"].revoked.tasks
    assert stolen not in result["w3"].assigned.tasks
    assert stolen in result["w1"].assigned.tasks | result["w1"].revoked.tasks


def test_no_members_gives_nothing() -> None:
    assert IncrementalAssignor(DELAY_MS, FakeClock()).assign({}, CONNECTORS) == {}


def test_no_connectors_revokes_everything() -> None:
    assignor, _, before = stable_cluster(["w1", "w2"])
    result = assignor.assign(before, {})
    assert result == {m: MemberAssignment(Assignment(), a) for m, a in before.items()}


def test_a_new_leader_assigns_unreported_work_at_once() -> None:
    _, _, before = stable_cluster(["w1", "w2", "w3"])
    fresh = IncrementalAssignor(DELAY_MS, FakeClock())  # never saw w3's work assigned
    result = run_round(fresh, {m: before[m] for m in ("w1", "w2")}, CONNECTORS)
    assert all(r.delay_ms == 0 for r in result.values())
    assert_complete_and_balanced(report(result), all_work(CONNECTORS))


def test_assignment_dict_round_trip() -> None:
    a = Assignment(frozenset({"b", "a"}), frozenset({TaskId("b", 1), TaskId("a", 0)}))
    assert a.to_dict() == {"connectors": ["a", "b"], "tasks": [["a", 0], ["b", 1]]}
    assert Assignment.from_dict(a.to_dict()) == a
    assert Assignment.from_dict({}) == Assignment()
    assert len(a) == 4 and not a.is_empty() and Assignment().is_empty()


def test_negative_delay_is_rejected() -> None:
    with pytest.raises(ValueError):
        IncrementalAssignor(-1)


def _random_event(rng: random.Random, owned: dict[str, Assignment],
                  connectors: dict[str, int], next_id: list[int],
                  workers: dict[str, str]) -> bool:
    """Mutate membership/config in place; True means the leader failed over. ``workers``
    maps every member id ever seen to its worker id."""
    event = rng.choice(["join", "leave", "restart", "add", "delete", "resize", "zombie",
                        "failover", "comeback"])
    if event == "join":
        next_id[0] += 1
        owned[f"w{next_id[0]:03d}"] = Assignment()
        workers[f"w{next_id[0]:03d}"] = f"host{next_id[0]:03d}"
    elif event == "leave" and len(owned) > 1:
        del owned[rng.choice(sorted(owned))]
    elif event == "comeback":  # a worker that left, back under a new member id
        away = sorted(set(workers.values()) - {workers[m] for m in owned})
        if away:
            next_id[0] += 1
            owned[f"w{next_id[0]:03d}"] = Assignment()
            workers[f"w{next_id[0]:03d}"] = rng.choice(away)
    elif event == "restart":  # same member id, but it lost everything it ran
        owned[rng.choice(sorted(owned))] = Assignment()
    elif event == "add":
        connectors[f"c{rng.randrange(1000)}"] = rng.randrange(0, 7)
    elif event == "delete" and connectors:
        del connectors[rng.choice(sorted(connectors))]
    elif event == "resize" and connectors:
        connectors[rng.choice(sorted(connectors))] = rng.randrange(0, 7)
    elif event == "zombie" and len(owned) > 1:
        thief, victim = rng.sample(sorted(owned), 2)
        owned[thief] = owned[thief] | owned[victim]
    return event == "failover"


def assert_kept_within_quota(owned: Mapping[str, Assignment],
                             result: Mapping[str, MemberAssignment],
                             assignable: Assignment) -> None:
    """Balance only revokes excess: a member keeps its own work up to floor(T/n)."""
    claimed = Assignment()
    for member in sorted(owned):
        mine = (owned[member] & assignable) - claimed  # duplicates go to the smallest id
        claimed |= mine
        kept = mine & result[member].assigned
        for kind in ("connectors", "tasks"):
            floor = len(getattr(assignable, kind)) // len(owned)
            assert len(getattr(kept, kind)) >= min(len(getattr(mine, kind)), floor)


@pytest.mark.parametrize("seed", range(50))
def test_random_sequences_converge_to_balance_within_two_rounds(seed: int) -> None:
    rng = random.Random(seed)
    delay_ms = rng.choice([0, DELAY_MS])
    clock = FakeClock()
    assignor = IncrementalAssignor(delay_ms, clock)
    owned: dict[str, Assignment] = {"w000": Assignment()}
    workers = {"w000": "host000"}
    connectors: dict[str, int] = {}
    next_id = [0]
    for _ in range(30):
        for _ in range(rng.randint(1, 2)):
            if _random_event(rng, owned, connectors, next_id, workers):
                assignor = IncrementalAssignor(delay_ms, clock)
        first = run_round(assignor, owned, connectors, workers)
        assert_kept_within_quota(owned, first, all_work(connectors) - assignor.held)
        returned = merged(assignor.last_round.returned.values())
        back = {workers[m]: r.assigned - owned[m] for m, r in first.items()}
        for worker, work in assignor.last_round.returned.items():
            assert (work - back[worker]).is_empty()  # given back to its own worker
        assert (returned & assignor.held).is_empty()
        clock.advance(next(iter(first.values())).delay_ms)
        owned = converge(assignor, clock, report(first), connectors, rounds=1,
                         workers=workers)
