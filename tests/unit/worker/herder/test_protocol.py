"""The distributed group protocol: metadata and assignments survive the wire, bad bytes
are rejected with ProtocolError (never a crash in the coordinator's callbacks)."""

from __future__ import annotations

import pytest

from worker.herder.assignor import Assignment
from worker.herder.protocol import (
    NO_ERROR,
    ClusterMember,
    MemberMetadata,
    ProtocolError,
    WorkerAssignment,
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
