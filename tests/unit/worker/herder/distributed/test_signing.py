"""DistributedHerder and KIP-507, without a broker: the group's protocol decides whether
internal requests are checked; the key the herder signs and checks with is the one read
last from the config topic; a session-key record asks for neither a rebalance nor a
reconcile. Built as in test_distributed_worker_config (real, never started stores)."""

from __future__ import annotations

import pytest

from tests.unit.worker.herder.conftest import new_distributed_herder
from worker.errors import BadRequestError, ForbiddenError
from worker.herder.distributed.group_leader import GroupLeader
from worker.herder.distributed.herder import DistributedHerder
from worker.herder.distributed.protocol import NO_ERROR, MemberMetadata, WorkerAssignment
from worker.herder.request_signing import (
    SIGNATURE_ALGORITHM_HEADER,
    SIGNATURE_HEADER,
    InternalRequestSignature,
    sign,
)
from worker.storage.kafka import (
    LogRecord,
)
from worker.storage.kafka.formats import SessionKey, session_key_value

BODY = b"[]"


def build(protocol: str = "sessioned") -> DistributedHerder:
    return new_distributed_herder(**{"connect.protocol": protocol})


def read_key(herder: DistributedHerder, offset: int, key: bytes) -> None:
    herder.kafka_config_store._on_record(LogRecord(
        0, offset, b"session-key", session_key_value(SessionKey(key, "HmacSHA256", 1))))


def signed(key: bytes) -> InternalRequestSignature | None:
    headers = sign(key, "HmacSHA256", BODY)
    return InternalRequestSignature.from_headers(
        BODY, headers[SIGNATURE_ALGORITHM_HEADER], headers[SIGNATURE_HEADER])


@pytest.fixture
def herder() -> DistributedHerder:
    return build()


def test_checks_with_the_key_read_last(herder: DistributedHerder) -> None:
    herder._assignment = WorkerAssignment(NO_ERROR, "m1", "http://w1:8083", 0)
    with pytest.raises(BadRequestError, match="missing required signature"):
        herder.verify_internal_request(None)
    read_key(herder, 0, b"a" * 32)
    herder.verify_internal_request(signed(b"a" * 32))
    assert herder._keys.sign(BODY) == sign(b"a" * 32, "HmacSHA256", BODY)
    read_key(herder, 1, b"b" * 32)  # rotated: the old key's signatures are refused
    with pytest.raises(ForbiddenError):
        herder.verify_internal_request(signed(b"a" * 32))
    herder.verify_internal_request(signed(b"b" * 32))


def test_a_session_key_record_needs_no_rebalance_or_reconcile(
        herder: DistributedHerder) -> None:
    herder._assignment = WorkerAssignment(NO_ERROR, "m1", "http://w1:8083", 0)
    herder.kafka_config_store._listening = True
    herder.kafka_config_store.set_listener(herder._on_config_update)
    calls: list[str] = []
    herder.membership.request_rejoin = lambda: calls.append("rejoin")  # type: ignore[method-assign]
    herder._reconciler.reconcile = lambda: calls.append("reconcile")  # type: ignore[method-assign]
    read_key(herder, 0, b"a" * 32)
    herder._process_config_updates()
    assert calls == []


def test_group_below_sessioned_checks_nothing() -> None:
    herder = build()
    herder._assignment = WorkerAssignment(NO_ERROR, "m1", "http://w1:8083", 0,
                                          protocol="compatible")
    herder.verify_internal_request(None)  # accepted: validation is off for the group
    herder._assignment = WorkerAssignment(NO_ERROR, "m1", "http://w1:8083", 0)
    with pytest.raises(BadRequestError):
        herder.verify_internal_request(None)


def test_own_protocol_counts_before_the_first_assignment() -> None:
    build("COMPATIBLE").verify_internal_request(None)
    with pytest.raises(BadRequestError):
        build().verify_internal_request(None)


def test_metadata_carries_the_protocol_and_the_leader_takes_the_lowest() -> None:
    assert build("eager")._metadata().protocol == "eager"
    members = {"m1": MemberMetadata("http://w1:8083", "w1", 0),
               "m2": MemberMetadata("http://w2:8083", "w2", 0, protocol="compatible")}
    assignments = GroupLeader(0).assign("m1", members, config_offset=0, current={},
                                        led_last_round=True, own_url="http://w1:8083")
    assert {a.protocol for a in assignments.values()} == {"compatible"}
    del members["m2"]
    assignments = GroupLeader(0).assign("m1", members, config_offset=0, current={},
                                        led_last_round=True, own_url="http://w1:8083")
    assert all(a.sessioned for a in assignments.values())
