"""worker.runtime.sink_offsets against a fake AdminClient: membership checks, removal of
single partitions (delete + re-commit), idempotent reset, error translation.

The real broker round trip is covered by ``tests/integration/test_offsets_kip875.py``.
"""

from __future__ import annotations

from concurrent.futures import Future
from types import SimpleNamespace
from typing import Any

import pytest
from confluent_kafka import (
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    KafkaError,
    KafkaException,
)
from confluent_kafka import TopicPartition as KafkaTopicPartition

from worker.api.connector import TopicPartition
from worker.config.worker_config import WorkerConfig
from worker.errors import WorkerError
from worker.runtime.sink_offsets import SinkGroupOffsets, open_sink_offsets

GROUP = "connect-sink"
TP0, TP1 = TopicPartition("t", 0), TopicPartition("t", 1)


def done(value: Any = None, error: BaseException | None = None) -> Future[Any]:
    future: Future[Any] = Future()
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(value)
    return future


def kafka_error(code: int) -> KafkaException:
    return KafkaException(KafkaError(code))


class FakeAdmin:
    """Group offsets in a dict; records the calls in order."""

    def __init__(self) -> None:
        self.committed: dict[tuple[str, int], int] | None = None  # None: no such group
        self.state = ConsumerGroupState.EMPTY
        self.members: list[Any] = []
        self.calls: list[str] = []
        self.fail_alter: KafkaError | None = None
        self.lost_connections = 0  # how many alter calls fail with a transport error

    def list_consumer_group_offsets(self, request: list[ConsumerGroupTopicPartitions],
                                    **kwargs: Any) -> dict[str, Future[Any]]:
        self.calls.append("list")
        tps = [KafkaTopicPartition(t, p, o) for (t, p), o in (self.committed or {}).items()]
        return {GROUP: done(ConsumerGroupTopicPartitions(GROUP, tps))}

    def describe_consumer_groups(self, groups: list[str], **kwargs: Any
                                 ) -> dict[str, Future[Any]]:
        self.calls.append("describe")
        return {GROUP: done(SimpleNamespace(members=self.members, state=self.state))}

    def alter_consumer_group_offsets(self, request: list[ConsumerGroupTopicPartitions],
                                     **kwargs: Any) -> dict[str, Future[Any]]:
        self.calls.append("alter")
        if self.lost_connections:
            self.lost_connections -= 1
            return {GROUP: done(error=kafka_error(KafkaError._TRANSPORT))}
        out = []
        for tp in request[0].topic_partitions or []:
            # TopicPartition.error is read-only: results carry it in a look-alike.
            out.append(SimpleNamespace(topic=tp.topic, partition=tp.partition,
                                       offset=tp.offset, error=self.fail_alter))
            if self.fail_alter is None:
                self.committed = {**(self.committed or {}), (tp.topic, tp.partition): tp.offset}
        return {GROUP: done(SimpleNamespace(group_id=GROUP, topic_partitions=out))}

    def delete_consumer_groups(self, groups: list[str], **kwargs: Any
                               ) -> dict[str, Future[Any]]:
        self.calls.append("delete")
        if self.committed is None:
            return {GROUP: done(error=kafka_error(KafkaError.GROUP_ID_NOT_FOUND))}
        self.committed = None
        return {GROUP: done()}


@pytest.fixture
def admin() -> FakeAdmin:
    return FakeAdmin()


@pytest.fixture
def group(admin: FakeAdmin) -> SinkGroupOffsets:
    return SinkGroupOffsets(admin, "sink", GROUP, timeout_s=1.0)


def test_an_unknown_group_has_no_offsets(group: SinkGroupOffsets) -> None:
    assert group.offsets() == {}


def test_alter_commits_and_keeps_other_partitions(admin: FakeAdmin,
                                                  group: SinkGroupOffsets) -> None:
    admin.committed = {("t", 0): 5, ("t", 1): 6}
    group.alter({TP0: 2})
    assert group.offsets() == {TP0: 2, TP1: 6}
    assert "delete" not in admin.calls


def test_a_null_offset_removes_only_that_partition(admin: FakeAdmin,
                                                   group: SinkGroupOffsets) -> None:
    admin.committed = {("t", 0): 5, ("t", 1): 6, ("u", 0): 7}
    group.alter({TP0: None, TopicPartition("u", 0): 1})
    assert group.offsets() == {TP1: 6, TopicPartition("u", 0): 1}
    assert admin.calls == ["describe", "list", "delete", "alter", "list"]


def test_removing_an_uncommitted_partition_deletes_nothing(admin: FakeAdmin,
                                                           group: SinkGroupOffsets) -> None:
    admin.committed = {("t", 1): 6}
    group.alter({TP0: None})
    assert group.offsets() == {TP1: 6}
    assert "delete" not in admin.calls


def test_reset_is_idempotent(admin: FakeAdmin, group: SinkGroupOffsets) -> None:
    admin.committed = {("t", 0): 5}
    group.reset()
    group.reset()  # GROUP_ID_NOT_FOUND the second time: still a success
    assert group.offsets() == {}


@pytest.mark.parametrize(("state", "members"), [
    (ConsumerGroupState.STABLE, []),  # Tansu: a live group, but no members listed
    (ConsumerGroupState.PREPARING_REBALANCING, []),
    (ConsumerGroupState.EMPTY, [object()]),
])
def test_writes_are_refused_while_the_group_has_members(admin: FakeAdmin,
                                                        group: SinkGroupOffsets,
                                                        state: ConsumerGroupState,
                                                        members: list[Any]) -> None:
    admin.committed = {("t", 0): 5}
    admin.state, admin.members = state, members
    with pytest.raises(WorkerError, match="Failed to reset consumer group offsets for "
                                           "connector sink either because its tasks haven't "
                                           "stopped completely yet") as info:
        group.reset()
    assert "zombie sink tasks" in str(info.value)
    with pytest.raises(WorkerError, match="Failed to alter consumer group offsets"):
        group.alter({TP0: 1})
    assert admin.committed == {("t", 0): 5}
    assert "delete" not in admin.calls and "alter" not in admin.calls


def test_a_member_error_from_the_broker_is_the_zombie_error(admin: FakeAdmin,
                                                             group: SinkGroupOffsets) -> None:
    admin.fail_alter = KafkaError(KafkaError.UNKNOWN_MEMBER_ID)
    with pytest.raises(WorkerError, match="zombie sink tasks"):
        group.alter({TP0: 1})


def test_other_broker_errors_become_connect_errors(admin: FakeAdmin,
                                                   group: SinkGroupOffsets) -> None:
    admin.fail_alter = KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART)
    with pytest.raises(WorkerError, match="Failed to alter consumer group offsets for "
                                           "connector sink: t-0"):
        group.alter({TP0: 1})


def test_a_failed_recommit_names_the_offsets_to_restore(admin: FakeAdmin,
                                                        group: SinkGroupOffsets) -> None:
    admin.committed = {("t", 0): 5, ("t", 1): 6}
    admin.fail_alter = KafkaError(KafkaError.COORDINATOR_NOT_AVAILABLE)
    with pytest.raises(WorkerError, match="they were t-1: 6"):
        group.alter({TP0: None})


def test_a_lost_connection_is_retried_once_with_a_new_client(admin: FakeAdmin) -> None:
    clients: list[FakeAdmin] = []

    def new_admin() -> FakeAdmin:
        clients.append(admin)
        return admin

    group = SinkGroupOffsets(admin, "sink", GROUP, timeout_s=1.0, new_admin=new_admin)
    admin.lost_connections = 1
    group.alter({TP0: 1})
    assert group.offsets() == {TP0: 1} and len(clients) == 1
    admin.lost_connections = 2
    with pytest.raises(WorkerError, match="Broker transport failure|Local: Broker"):
        group.alter({TP0: 2})
    assert group.offsets() == {TP0: 1}


def test_an_operation_is_bounded_as_a_whole(admin: FakeAdmin) -> None:
    group = SinkGroupOffsets(admin, "sink", GROUP, timeout_s=1.0, operation_timeout_s=0.0)
    with pytest.raises(WorkerError, match="timed out"):
        group.reset()
    assert admin.calls == []


def test_kafka_exceptions_and_timeouts_are_translated(group: SinkGroupOffsets,
                                                      admin: FakeAdmin) -> None:
    admin.list_consumer_group_offsets = lambda *a, **k: {  # type: ignore[method-assign]
        GROUP: done(error=kafka_error(KafkaError._TRANSPORT))}
    with pytest.raises(WorkerError, match="Failed to retrieve consumer group offsets for "
                                           "sink connector sink") as info:
        group.offsets()
    assert isinstance(info.value.__cause__, KafkaException)
    admin.list_consumer_group_offsets = lambda *a, **k: {  # type: ignore[method-assign]
        GROUP: Future()}
    group.timeout_s = 0.05
    with pytest.raises(WorkerError, match="timed out"):
        group.offsets()


def test_open_uses_the_overridden_group_and_admin_settings() -> None:
    config = WorkerConfig({"bootstrap.servers": "127.0.0.1:1"})
    group = open_sink_offsets(config, "sink", {"consumer.override.group.id": "mine"})
    assert group.group_id == "mine"
    assert open_sink_offsets(config, "sink", {}).group_id == "connect-sink"
