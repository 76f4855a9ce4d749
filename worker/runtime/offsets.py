"""Source offsets: the reader tasks/connectors see, and the per-task commit tracker.

Offsets are committed only once Kafka acknowledged the records: records are tracked per
``poll()`` batch; a batch becomes committable when all its deliveries succeeded and every
earlier batch did too (so a commit never skips an unacknowledged record).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from typing import Any

from worker.api.task import OffsetStorageReader, partition_key
from worker.storage.base import OffsetBackingStore


class StoreOffsetReader(OffsetStorageReader):
    def __init__(self, store: OffsetBackingStore, connector: str) -> None:
        self._store = store
        self._connector = connector

    def offsets(self, partitions: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
        return self._store.get(self._connector, list(partitions))


class Batch:
    """One poll() batch in flight: deliveries pending, and its last offset per partition."""

    __slots__ = ("pending", "offsets", "error")

    def __init__(self) -> None:
        self.pending = 0
        self.offsets: dict[str, tuple[Mapping[str, Any], Mapping[str, Any] | None]] = {}
        self.error: BaseException | None = None

    def on_delivery(self, err: Any, _msg: Any) -> None:
        # Called by librdkafka from producer.poll()/flush() on the task's own thread.
        self.pending -= 1
        if err is not None and self.error is None:
            self.error = RuntimeError(f"Record delivery failed: {err}")


class SubmittedOffsets:
    """Batches in submission order; collects offsets that are safe to commit."""

    def __init__(self) -> None:
        self._batches: deque[Batch] = deque()
        self._committable: dict[str, tuple[Mapping[str, Any], Mapping[str, Any] | None]] = {}

    def new_batch(self) -> Batch:
        batch = Batch()
        self._batches.append(batch)
        return batch

    @staticmethod
    def track(batch: Batch, source_partition: Mapping[str, Any] | None,
              source_offset: Mapping[str, Any] | None) -> None:
        if source_partition is not None:
            batch.offsets[partition_key(source_partition)] = (source_partition, source_offset)

    @property
    def outstanding(self) -> int:
        return sum(b.pending for b in self._batches)

    def first_error(self) -> BaseException | None:
        return next((b.error for b in self._batches if b.error is not None), None)

    def drain_acknowledged(self) -> None:
        """Move fully acknowledged batches at the head into the committable set."""
        while self._batches and self._batches[0].pending == 0 and self._batches[0].error is None:
            self._committable.update(self._batches.popleft().offsets)

    def take_committable(self) -> list[tuple[Mapping[str, Any], Mapping[str, Any] | None]]:
        self.drain_acknowledged()
        items = list(self._committable.values())
        self._committable.clear()
        return items

    def restore(self, items: list[tuple[Mapping[str, Any], Mapping[str, Any] | None]]) -> None:
        """Put back offsets whose commit failed, unless newer ones arrived meanwhile."""
        for partition, offset in items:
            self._committable.setdefault(partition_key(partition), (partition, offset))
