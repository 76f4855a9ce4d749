"""worker.runtime.source_offsets.SubmittedRecords: offsets become committable only once their batch
and every earlier batch of the same source partition were acknowledged."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from worker.api.records import SourceRecord
from worker.api.task import partition_key
from worker.runtime.source_offsets import OffsetItem, SubmittedBatch, SubmittedRecords

P1 = {"filename": "a.txt"}
P2 = {"filename": "b.txt"}
ERROR = object()  # stands for a KafkaError: the tracker only keeps it


def rec(partition: Mapping[str, Any] | None, position: int) -> SourceRecord:
    return SourceRecord(partition, {"position": position}, "topic", value="v")


def as_dict(items: list[OffsetItem]) -> dict[str, Mapping[str, Any] | None]:
    return {partition_key(p): o for p, o in items}


def send(submitted: SubmittedRecords, records: list[SourceRecord]) -> SubmittedBatch:
    """Submit a batch whose every record was handed to the producer."""
    batch = submitted.new_batch()
    batch.unacked += len(records)
    submitted.submit(batch, records)
    return batch


def ack(batch: SubmittedBatch, count: int | None = None) -> None:
    for _ in range(batch.unacked if count is None else count):
        batch.acknowledge(None, None)


def test_nothing_is_committable_before_acknowledgement() -> None:
    submitted = SubmittedRecords()
    batch = send(submitted, [rec(P1, 1), rec(P1, 2)])

    assert submitted.take() == []
    ack(batch, 1)  # one of two records: the batch is not done
    assert submitted.take() == []
    ack(batch, 1)
    assert as_dict(submitted.take()) == {partition_key(P1): {"position": 2}}
    assert not submitted


def test_a_later_batch_waits_for_an_earlier_one_of_its_partition() -> None:
    submitted = SubmittedRecords()
    first = send(submitted, [rec(P1, 1)])
    second = send(submitted, [rec(P1, 2)])
    ack(second)

    assert submitted.take() == []  # a gap: the first batch is still in flight
    ack(first)
    assert as_dict(submitted.take()) == {partition_key(P1): {"position": 2}}


def test_partitions_advance_independently() -> None:
    submitted = SubmittedRecords()
    first = send(submitted, [rec(P1, 1)])
    second = send(submitted, [rec(P2, 7)])
    ack(second)

    assert as_dict(submitted.take()) == {partition_key(P2): {"position": 7}}
    assert submitted.pending() == 1
    ack(first)
    assert as_dict(submitted.take()) == {partition_key(P1): {"position": 1}}


def test_the_acknowledged_prefix_is_committed_up_to_the_gap() -> None:
    submitted = SubmittedRecords()
    batches = [send(submitted, [rec(P1, n)]) for n in range(1, 5)]
    for index in (0, 1, 3):
        ack(batches[index])

    assert as_dict(submitted.take()) == {partition_key(P1): {"position": 2}}
    ack(batches[2])
    assert as_dict(submitted.take()) == {partition_key(P1): {"position": 4}}


def test_a_batch_of_dropped_records_follows_its_predecessors() -> None:
    # Records a transformation dropped are never sent: their batch has nothing to wait for,
    # but its offset must not overtake an earlier batch still in flight.
    submitted = SubmittedRecords()
    first = send(submitted, [rec(P1, 1)])
    dropped = submitted.new_batch()
    submitted.submit(dropped, [rec(P1, 2)])

    assert submitted.take() == []
    ack(first)
    assert as_dict(submitted.take()) == {partition_key(P1): {"position": 2}}


def test_a_failed_delivery_blocks_its_batch_and_everything_sent_after_it() -> None:
    submitted = SubmittedRecords()
    before = send(submitted, [rec(P2, 1)])
    failed = send(submitted, [rec(P1, 1), rec(P1, 2)])
    after = send(submitted, [rec(P2, 2)])
    ack(before)
    ack(after)
    failed.acknowledge(None, None)
    failed.acknowledge(ERROR, None)

    assert submitted.error is ERROR
    # Only what was sent before the failure: P2's later batch is held back too.
    assert as_dict(submitted.take()) == {partition_key(P2): {"position": 1}}
    assert submitted.take() == []


def test_the_first_error_is_kept() -> None:
    submitted = SubmittedRecords()
    batch = send(submitted, [rec(P1, 1), rec(P1, 2)])
    other = object()
    batch.acknowledge(ERROR, None)
    batch.acknowledge(other, None)

    assert submitted.error is ERROR
    assert batch.error is ERROR


def test_restore_after_a_store_failure() -> None:
    submitted = SubmittedRecords()
    ack(send(submitted, [rec(P1, 1), rec(P2, 1)]))
    items = submitted.take()
    assert submitted.take() == []

    submitted.restore(items)  # the write failed: try again next time
    assert as_dict(submitted.take()) == as_dict(items)


def test_restore_keeps_newer_offsets() -> None:
    submitted = SubmittedRecords()
    ack(send(submitted, [rec(P1, 1), rec(P2, 1)]))
    items = submitted.take()
    ack(send(submitted, [rec(P1, 5)]))
    submitted.restore(items)

    assert as_dict(submitted.take()) == {partition_key(P1): {"position": 5},
                                        partition_key(P2): {"position": 1}}


def test_records_without_a_source_partition_are_not_tracked() -> None:
    submitted = SubmittedRecords()
    ack(send(submitted, [rec(None, 1)]))

    assert submitted.take() == []
    assert not submitted


def test_last_offset_of_a_partition_within_a_batch_wins() -> None:
    submitted = SubmittedRecords()
    ack(send(submitted, [rec(P1, 3), rec(P2, 9), rec(P1, 2)]))

    # Offsets are opaque: the last record of a partition wins, not the largest number.
    assert as_dict(submitted.take()) == {partition_key(P1): {"position": 2},
                                        partition_key(P2): {"position": 9}}
