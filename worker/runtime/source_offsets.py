"""Source offsets: the reader tasks/connectors see, and the per-task commit bookkeeping.

Offsets are committed only once Kafka acknowledged the records, the way Kafka Connect 3.x
does it (its ``SubmittedRecords``): every ``poll()`` batch handed to the producer becomes a
``SubmittedBatch`` that counts its outstanding delivery callbacks down from the producer's
delivery reports (one callback object per batch, no per-record bookkeeping in Python beyond
that count). A callback stands for one record, or, for keyless records sent to one
partition by an in-order, gapless producer, for every record of the batch in that partition
up to it (``worker.runtime.source_task``). Per source partition, ``SubmittedRecords``
keeps the batches' latest offsets in the order they were sent; an offset becomes
committable once its batch and every earlier batch of that source partition were fully
acknowledged. A commit takes what is committable at that moment — it never flushes the
producer and never waits for acknowledgements.

A failed delivery stops the partition's queue for good and, for the whole task, nothing
sent after the failed batch is committed any more.
"""

from __future__ import annotations

from collections import deque
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


def latest_offsets(records: Sequence[SourceRecord]) -> dict[str, OffsetItem]:
    """The last offset of each source partition in ``records``, keyed by ``partition_key``."""
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
    return seen


class OffsetTracker:
    """Latest source offset per source partition, waiting to be written to the store."""

    def __init__(self) -> None:
        self._pending: dict[str, OffsetItem] = {}

    def track(self, records: Sequence[SourceRecord]) -> None:
        """Note the records of one poll() batch (in order: the last one per partition wins)."""
        self._pending.update(latest_offsets(records))

    def update(self, offsets: Mapping[str, OffsetItem]) -> None:
        """Note offsets by partition key (newer than anything tracked for them)."""
        self._pending.update(offsets)

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


class SubmittedBatch:
    """The records of one ``poll()`` batch handed to the producer, counted down by its
    delivery reports. ``acknowledge`` is the producer's delivery callback for the records of
    the batch that carry one; ``unacked`` counts those (librdkafka calls it from
    ``poll()``/``flush()`` on the task thread)."""

    __slots__ = ("seq", "unacked", "error", "_owner")

    def __init__(self, seq: int, owner: SubmittedRecords) -> None:
        self.seq = seq
        self.unacked = 0
        self.error: Any = None  # the first KafkaError of a failed delivery
        self._owner = owner

    def acknowledge(self, err: Any, _msg: Any) -> None:
        if err is None:
            self.unacked -= 1
        elif self.error is None:
            self.error = err
            self._owner.failed(self)

    @property
    def done(self) -> bool:
        """Every record sent was acknowledged and none failed."""
        return self.unacked <= 0 and self.error is None


class SubmittedRecords:
    """Per source partition, the offsets of sent batches in order; see the module doc."""

    def __init__(self) -> None:
        self._queues: dict[str, deque[tuple[SubmittedBatch, OffsetItem]]] = {}
        self._committable = OffsetTracker()
        self._seq = 0
        self._failed_seq: int | None = None
        self.error: Any = None  # the first delivery failure of any batch

    def new_batch(self) -> SubmittedBatch:
        """A batch to count the next poll()'s records with (pass it to ``submit`` once all
        its records were handed to the producer)."""
        self._seq += 1
        return SubmittedBatch(self._seq, self)

    def submit(self, batch: SubmittedBatch, records: Sequence[SourceRecord]) -> None:
        """Every record of ``records`` was handed to the producer (or dropped): their
        offsets wait for ``batch`` and every earlier batch of their source partitions."""
        queues = self._queues
        for key, item in latest_offsets(records).items():
            queue = queues.get(key)
            if queue is None:
                queue = queues[key] = deque()
            queue.append((batch, item))

    def failed(self, batch: SubmittedBatch) -> None:
        """A record of ``batch`` failed: nothing sent from it on may be committed."""
        if self._failed_seq is None or batch.seq < self._failed_seq:
            self._failed_seq = batch.seq
        if self.error is None:
            self.error = batch.error

    def _collect(self) -> None:
        """Move the acknowledged head of each partition's queue to the committable offsets."""
        limit = self._failed_seq
        committable: dict[str, OffsetItem] = {}
        for key in list(self._queues):
            queue = self._queues[key]
            latest: OffsetItem | None = None
            while queue:
                batch, item = queue[0]
                if not batch.done or (limit is not None and batch.seq >= limit):
                    break
                latest = item
                queue.popleft()
            if latest is not None:
                committable[key] = latest
            if not queue:
                del self._queues[key]
        if committable:
            self._committable.update(committable)

    def take(self) -> list[OffsetItem]:
        """The committable offsets (latest per partition) not written yet; the caller writes
        them and hands them back to ``restore`` if that failed."""
        self._collect()
        return self._committable.take()

    def restore(self, items: Iterable[OffsetItem]) -> None:
        """Put back offsets whose write failed, unless newer ones became committable."""
        self._committable.restore(items)

    def pending(self) -> int:
        """How many sent batches still wait for acknowledgements (or failed)."""
        return sum(len(queue) for queue in self._queues.values())

    def __bool__(self) -> bool:
        """Anything still to commit or to wait for."""
        return bool(self._queues) or bool(self._committable)
