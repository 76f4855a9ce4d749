"""worker.runtime.source_offsets: the per-task offset tracker and the store-backed offset reader."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from worker.api.records import SourceRecord
from worker.api.task import partition_key
from worker.runtime.source_offsets import OffsetItem, OffsetTracker, StoreOffsetReader
from worker.storage.memory import MemoryOffsetBackingStore

P1 = {"filename": "a.txt"}
P2 = {"filename": "b.txt"}


def rec(partition: Mapping[str, Any] | None, offset: Mapping[str, Any] | None
        ) -> SourceRecord:
    return SourceRecord(partition, offset, "topic", value="v")


def pos(n: int) -> dict[str, int]:
    return {"position": n}


def as_dict(items: list[OffsetItem]) -> dict[str, Mapping[str, Any] | None]:
    return {partition_key(p): o for p, o in items}


class TestOffsetTracker:
    def test_empty_tracker(self) -> None:
        tracker = OffsetTracker()

        assert not tracker
        assert tracker.take() == []

    def test_latest_offset_per_partition_within_a_batch(self) -> None:
        tracker = OffsetTracker()

        tracker.track([rec(P1, pos(1)), rec(P2, pos(7)), rec(P1, pos(3)), rec(P1, pos(2))])

        # The last record of a partition wins, not the largest number: offsets are opaque.
        assert as_dict(tracker.take()) == {partition_key(P1): pos(2),
                                           partition_key(P2): pos(7)}

    def test_later_batch_overrides_earlier_one(self) -> None:
        tracker = OffsetTracker()
        tracker.track([rec(P1, pos(1)), rec(P2, pos(1))])
        tracker.track([rec(P1, pos(5))])

        assert as_dict(tracker.take()) == {partition_key(P1): pos(5),
                                           partition_key(P2): pos(1)}

    def test_reused_partition_object(self) -> None:
        # Tasks usually hand out one partition object for every record of a file.
        tracker = OffsetTracker()
        partition = {"filename": "same.txt"}

        tracker.track([rec(partition, pos(n)) for n in range(1, 6)])

        assert tracker.take() == [(partition, pos(5))]

    def test_equal_partitions_are_one_partition_whatever_the_key_order(self) -> None:
        tracker = OffsetTracker()

        tracker.track([rec({"db": "x", "table": "t"}, {"id": 1}),
                       rec({"table": "t", "db": "x"}, {"id": 2}),
                       rec({"db": "x", "table": "t"}, {"id": 3}),
                       rec(P1, pos(0)),
                       rec({"table": "t", "db": "x"}, {"id": 4})])

        assert as_dict(tracker.take()) == {partition_key({"db": "x", "table": "t"}): {"id": 4},
                                           partition_key(P1): pos(0)}

    def test_records_without_partition_are_ignored(self) -> None:
        tracker = OffsetTracker()

        tracker.track([rec(None, pos(9))])
        assert not tracker

        tracker.track([rec(P1, pos(1)), rec(None, pos(9)), rec(P1, pos(2)), rec(None, None)])
        assert as_dict(tracker.take()) == {partition_key(P1): pos(2)}

    def test_null_offset_is_tracked_as_a_reset(self) -> None:
        tracker = OffsetTracker()

        tracker.track([rec(P1, pos(4)), rec(P1, None)])

        assert as_dict(tracker.take()) == {partition_key(P1): None}

    def test_take_empties_the_tracker(self) -> None:
        tracker = OffsetTracker()
        tracker.track([rec(P1, pos(1))])
        assert tracker

        assert len(tracker.take()) == 1
        assert not tracker
        assert tracker.take() == []

    def test_empty_batch_tracks_nothing(self) -> None:
        tracker = OffsetTracker()
        tracker.track([])
        assert not tracker

    def test_restore_puts_failed_commit_back(self) -> None:
        tracker = OffsetTracker()
        tracker.track([rec(P1, pos(1)), rec(P2, pos(2))])
        items = tracker.take()

        tracker.restore(items)  # the store write failed

        assert tracker
        assert as_dict(tracker.take()) == as_dict(items)

    def test_restore_does_not_override_newer_offsets(self) -> None:
        tracker = OffsetTracker()
        tracker.track([rec(P1, pos(1)), rec(P2, pos(2))])
        items = tracker.take()
        tracker.track([rec(P1, pos(5))])  # sent while the commit was failing

        tracker.restore(items)

        assert as_dict(tracker.take()) == {partition_key(P1): pos(5),
                                           partition_key(P2): pos(2)}

    def test_batch_tracked_after_restore_wins(self) -> None:
        tracker = OffsetTracker()
        tracker.track([rec(P1, pos(1))])
        tracker.restore(tracker.take())

        tracker.track([rec(P1, pos(6))])

        assert as_dict(tracker.take()) == {partition_key(P1): pos(6)}

    def test_restore_accepts_any_iterable(self) -> None:
        tracker = OffsetTracker()
        tracker.restore(iter([(P1, pos(3))]))
        assert as_dict(tracker.take()) == {partition_key(P1): pos(3)}


class TestStoreOffsetReader:
    @pytest.fixture
    def store(self) -> MemoryOffsetBackingStore:
        store = MemoryOffsetBackingStore()
        store.put("conn", [(P1, pos(10)), (P2, pos(20))])
        store.put("other", [(P1, pos(99))])
        return store

    def test_reads_committed_offsets_keyed_by_partition(self, store: MemoryOffsetBackingStore
                                                         ) -> None:
        reader = StoreOffsetReader(store, "conn")

        assert reader.offsets([P1, P2, {"filename": "unknown"}]) == {
            partition_key(P1): pos(10), partition_key(P2): pos(20)}

    def test_single_partition_and_missing_one(self, store: MemoryOffsetBackingStore) -> None:
        reader = StoreOffsetReader(store, "conn")

        assert reader.offset(P2) == pos(20)
        assert reader.offset({"filename": "unknown"}) is None

    def test_partition_key_order_does_not_matter(self) -> None:
        store = MemoryOffsetBackingStore()
        store.put("c", [({"db": "x", "table": "t"}, {"id": 4})])

        assert StoreOffsetReader(store, "c").offset({"table": "t", "db": "x"}) == {"id": 4}

    def test_connectors_are_isolated(self, store: MemoryOffsetBackingStore) -> None:
        assert StoreOffsetReader(store, "other").offset(P1) == pos(99)
        assert StoreOffsetReader(store, "nobody").offsets([P1, P2]) == {}

    def test_accepts_any_iterable_of_partitions(self, store: MemoryOffsetBackingStore
                                                ) -> None:
        reader = StoreOffsetReader(store, "conn")

        assert list(reader.offsets(p for p in (P1,))) == [partition_key(P1)]

    def test_sees_commits_and_resets_from_the_tracker(self, store: MemoryOffsetBackingStore
                                                      ) -> None:
        reader = StoreOffsetReader(store, "conn")
        tracker = OffsetTracker()
        tracker.track([rec(P1, pos(11)), rec(P2, None)])

        store.put("conn", tracker.take())

        assert reader.offset(P1) == pos(11)
        assert reader.offset(P2) is None

    def test_returned_offsets_are_copies(self, store: MemoryOffsetBackingStore) -> None:
        reader = StoreOffsetReader(store, "conn")
        first = reader.offset(P1)
        assert first is not None
        first["position"] = -1

        assert reader.offset(P1) == pos(10)
