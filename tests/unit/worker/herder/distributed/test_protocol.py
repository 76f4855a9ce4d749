"""The distributed group protocol: metadata and assignments survive the wire, bad bytes
are rejected with ProtocolError (never a crash in the coordinator's callbacks)."""

from __future__ import annotations

import pytest

from worker.herder.distributed.assignor import Assignment
from worker.herder.distributed.protocol import (
    NO_ERROR,
    ClusterMember,
    HeldWork,
    MemberMetadata,
    ProtocolError,
    WorkerAssignment,
    group_protocol,
)
from worker.storage.base import TaskId


def test_member_metadata_round_trips() -> None:
    owned = Assignment(frozenset({"a"}), frozenset({TaskId("a", 0), TaskId("b", 2)}))
    metadata = MemberMetadata("http://w1:8083", "w1:8083", 41, owned, rejoin=3)
    assert MemberMetadata.decode(metadata.encode()) == metadata


def test_assignment_round_trips_and_names_owners() -> None:
    w1 = Assignment(frozenset({"a"}), frozenset({TaskId("a", 0)}))
    w2 = Assignment(frozenset(), frozenset({TaskId("a", 1)}))
    assignment = WorkerAssignment(
        NO_ERROR, "member-1", "http://w1:8083", 7, assigned=w1,
        revoked=Assignment(frozenset(), frozenset({TaskId("a", 1)})), delay_ms=1500,
        cluster=(ClusterMember("http://w1:8083", "w1:8083", w1),
                 ClusterMember("http://w2:8083", "w2:8083", w2)))
    decoded = WorkerAssignment.decode(assignment.encode())
    assert decoded == assignment
    assert decoded.owner_url("a") == "http://w1:8083"
    assert decoded.owner_url(TaskId("a", 1)) == "http://w2:8083"
    assert decoded.owner_url(TaskId("a", 5)) is None


@pytest.mark.parametrize("raw", [b"", b"not json", b"[]", b'{"url": "x"}',
                                 b'{"url": "x", "worker_id": "y", "config_offset": "z"}'])
def test_malformed_metadata_is_a_protocol_error(raw: bytes) -> None:
    with pytest.raises(ProtocolError):
        MemberMetadata.decode(raw)
    with pytest.raises(ProtocolError):
        WorkerAssignment.decode(raw)


def test_group_runs_the_lowest_protocol_of_its_members() -> None:
    assert group_protocol(["sessioned", "sessioned"]) == "sessioned"
    assert group_protocol(["sessioned", "compatible", "sessioned"]) == "compatible"
    assert group_protocol(["compatible", "eager"]) == "eager"


def test_protocol_travels_and_defaults_to_compatible_when_absent() -> None:
    metadata = MemberMetadata("http://w1:8083", "w1:8083", 0, protocol="eager")
    assert MemberMetadata.decode(metadata.encode()).protocol == "eager"
    older = b'{"url": "u", "worker_id": "w", "config_offset": 0}'
    assert MemberMetadata.decode(older).protocol == "compatible"
    assignment = WorkerAssignment(NO_ERROR, "m", "http://w1:8083", 0)
    assert assignment.sessioned
    raw = (b'{"error": 0, "leader": "m", "leader_url": "u", "config_offset": 0, '
           b'"assigned": {}, "revoked": {}}')
    assert not WorkerAssignment.decode(raw).sessioned
    with pytest.raises(ProtocolError):
        MemberMetadata.decode(b'{"url": "u", "worker_id": "w", "config_offset": 0, '
                              b'"protocol": "v9"}')


def test_held_work_travels_in_the_assignment() -> None:
    held = (HeldWork("w3:8083", "http://w3:8083",
                     Assignment(frozenset({"a"}), frozenset({TaskId("a", 2)})), 1_800_000_000_123),)
    assignment = WorkerAssignment(NO_ERROR, "member-1", "http://w1:8083", 7, held=held)
    assert WorkerAssignment.decode(assignment.encode()).held == held
    older = WorkerAssignment(NO_ERROR, "member-1", "http://w1:8083", 7).encode()
    assert b"held" in older  # an empty list; an assignment without the field reads as none
    body = older.replace(b'"held":[],', b"")
    assert b"held" not in body and WorkerAssignment.decode(body).held == ()


@pytest.mark.parametrize("held", [b'"held":7', b'"held":[{"url":"u"}]',
                                  b'"held":[{"worker_id":"w","url":"u","assignment":{},'
                                  b'"until":"soon"}]'])
def test_malformed_held_work_is_a_protocol_error(held: bytes) -> None:
    raw = WorkerAssignment(NO_ERROR, "m", "http://w1:8083", 0).encode()
    with pytest.raises(ProtocolError):
        WorkerAssignment.decode(raw.replace(b'"held":[]', held))
