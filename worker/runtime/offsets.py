"""Source offsets: the reader tasks/connectors see, and the per-task commit tracker.

Offsets are committed only once Kafka acknowledged the records. The source task tracks the
latest offset per source partition of everything it sent; at commit time it flushes the
producer (every record sent so far is then acknowledged or failed) and, if nothing failed,
commits the tracked offsets — as Kafka Connect's source tasks did before KIP-618. Tracking
costs one comparison per record (no per-record delivery callback).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from worker.api.records import SourceRecord
from worker.api.task import OffsetStorageReader, partition_key
from worker.storage.base import OffsetBackingStore

OffsetItem = tuple[Mapping[str, Any], Mapping[str, Any] | None]


class StoreOffsetReader(OffsetStorageReader):
    def __init__(self, store: OffsetBackingStore, connector: str) -> None:
        self._store = store
        self._connector = connector

    def offsets(self, partitions: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
        return self._store.get(self._connector, list(partitions))


class OffsetTracker:
    """Latest source offset per source partition of the records sent since the last commit."""

    def __init__(self) -> None:
        self._pending: dict[str, OffsetItem] = {}

    def track(self, records: Sequence[SourceRecord]) -> None:
        """Note the records of one poll() batch (in order: the last one per partition wins)."""
        seen: dict[str, OffsetItem] = {}
        last: Mapping[str, Any] | None = None
        # Walk backwards so each partition's first hit is its latest offset; tasks usually
        # reuse one partition object, so the JSON key is computed once per batch.
        for record in reversed(records):
            partition = record.source_partition
            if partition is None or partition is last or partition == last:
                continue
            last = partition
            key = partition_key(partition)
            if key not in seen:
                seen[key] = (partition, record.source_offset)
        self._pending.update(seen)

    def __bool__(self) -> bool:
        return bool(self._pending)

    def take(self) -> list[OffsetItem]:
        """Everything tracked so far; the tracker starts empty again."""
        items = list(self._pending.values())
        self._pending.clear()
        return items

    def restore(self, items: Iterable[OffsetItem]) -> None:
        """Put back offsets whose commit failed, unless newer ones were tracked meanwhile."""
        for partition, offset in items:
            self._pending.setdefault(partition_key(partition), (partition, offset))
