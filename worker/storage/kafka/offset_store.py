"""Source connector offsets in the offset topic (key ``["{c}",{partition}]``).

Reads first read the topic to its end, as Kafka's ``KafkaOffsetBackingStore`` does, so a
task that moved here from another worker sees the offsets that worker committed. A
``put`` is one record per source partition (no multi-record atomicity on Kafka: after a
failure some may be written); once all are delivered the local view is updated, unless
the log already moved past them.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from worker.api.task import partition_key
from worker.config.worker_config import DistributedConfig
from worker.errors import StorageError
from worker.storage.base import OffsetBackingStore
from worker.storage.kafka import formats
from worker.storage.kafka.log import LogRecord
from worker.storage.kafka.topics import DEFAULT_TIMEOUT_S, TopicBackedStore


@dataclass(frozen=True)
class _Entry:
    offset: bytes | None  # the offset's JSON; None: deleted, until the log reaches `at`
    at: tuple[int, int]  # (partition, offset) of the record that set it


class KafkaOffsetBackingStore(TopicBackedStore, OffsetBackingStore):
    """The offset store of distributed mode (``offset.storage.topic``)."""

    def __init__(self, config: DistributedConfig, *, timeout_s: float = DEFAULT_TIMEOUT_S
                 ) -> None:
        super().__init__(config, "offset", timeout_s)
        self._lock = threading.Lock()
        # connector -> partition_key -> entry; the key is the partition's canonical JSON.
        self._offsets: dict[str, dict[str, _Entry]] = {}
        self._applied: dict[int, int] = {}  # next offset the log will apply, per partition

    def get(self, connector: str, partitions: Iterable[Mapping[str, Any]]
            ) -> dict[str, dict[str, Any]]:
        keys = [partition_key(p) for p in partitions]
        self.refresh()
        with self._lock:
            stored = self._offsets.get(connector, {})
            found = {k: stored[k].offset for k in keys if k in stored}
        return {k: json.loads(v) for k, v in found.items() if v is not None}

    def get_all(self, connector: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        self.refresh()
        with self._lock:
            items = [(k, e.offset) for k, e in self._offsets.get(connector, {}).items()]
        return [(json.loads(k), json.loads(v)) for k, v in sorted(items) if v is not None]

    def put(self, connector: str,
            offsets: Iterable[tuple[Mapping[str, Any], Mapping[str, Any] | None]]) -> None:
        # The last write of a partition wins; everything is encoded before anything is sent,
        # so a bad value writes nothing.
        latest: dict[str, tuple[bytes, bytes | None]] = {}
        for partition, offset in offsets:
            try:
                pkey = partition_key(partition)
            except (TypeError, ValueError) as exc:
                raise StorageError("source partition is not JSON-serialisable") from exc
            latest[pkey] = (formats.offset_key(connector, partition),
                            formats.offset_value(offset))
        if not latest:
            return
        delivered = self.kafka_log.send_all(latest.values(), self._timeout_s)
        with self._lock:
            for pkey, record in zip(latest, delivered, strict=True):
                at = (record.partition, record.offset)
                if self._applied.get(record.partition, 0) <= record.offset:
                    self._set(connector, pkey, record.value, at, from_log=False)

    def _on_record(self, record: LogRecord) -> None:
        decoded = formats.decode_offset_record(record.key, record.value)
        with self._lock:
            self._applied[record.partition] = record.offset + 1
            if decoded is None:
                return
            value = None if decoded.offset is None else record.value
            self._set(decoded.connector, partition_key(decoded.partition), value,
                      (record.partition, record.offset), from_log=True)

    def _set(self, connector: str, pkey: str, offset: bytes | None, at: tuple[int, int],
             *, from_log: bool) -> None:
        entries = self._offsets.setdefault(connector, {})
        current = entries.get(pkey)
        if current is not None and current.at[0] == at[0] and current.at[1] >= at[1]:
            # Already applied from the delivery report (or a newer one is): keep it, but
            # forget a deletion once the log itself has read the tombstone.
            if from_log and current.offset is None and current.at == at:
                del entries[pkey]
        elif offset is not None:
            entries[pkey] = _Entry(offset, at)
        elif from_log:
            entries.pop(pkey, None)
        else:
            # Deleted before the log reads the tombstone: remember it, so that an older
            # record of the partition read meanwhile cannot bring the offset back.
            entries[pkey] = _Entry(None, at)
        if not entries:
            del self._offsets[connector]
