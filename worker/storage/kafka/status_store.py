"""Connector, task and active-topic statuses in the status topic.

A local cache fed by the log (the latest record per key, in log order). Writes never wait
for the broker: they show in the cache at once and are produced asynchronously; a write
stays visible over older records read meanwhile until the log reads it back (or a newer
record of its key), and is dropped again if its delivery fails (which is logged).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass

from worker.config.worker_config import DistributedConfig
from worker.storage.base import (
    ConnectorStatus,
    StatusBackingStore,
    TaskId,
    TaskStatus,
    TopicStatus,
)
from worker.storage.kafka import formats
from worker.storage.kafka.formats import Status, StatusKey
from worker.storage.kafka.log import LogRecord
from worker.storage.kafka.topics import DEFAULT_TIMEOUT_S, TopicBackedStore

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class StatusUpdate:
    """A status record read from the topic: ``kind`` is connector, task or topic."""

    kind: str
    connector: str
    task: int | None = None
    topic: str | None = None


@dataclass
class _Pending:
    seq: int
    status: Status | None
    at: tuple[int, int] | None = None  # where it was written, once delivered


class KafkaStatusBackingStore(TopicBackedStore, StatusBackingStore):
    """The status store of distributed mode (``status.storage.topic``)."""

    def __init__(self, config: DistributedConfig, *, timeout_s: float = DEFAULT_TIMEOUT_S
                 ) -> None:
        super().__init__(config, "status", timeout_s)
        self._lock = threading.Lock()
        self._send_lock = threading.Lock()
        self._seq = 0
        self._from_log: dict[StatusKey, Status] = {}
        self._pending: dict[StatusKey, _Pending] = {}  # our writes not yet read back
        self._visible: dict[StatusKey, Status] = {}
        self._index: dict[tuple[str, str], set[StatusKey]] = {}  # (kind, connector) -> keys
        self._applied: dict[int, int] = {}  # next offset the log will apply, per partition

    def set_listener(self, callback: Callable[[StatusUpdate], None] | None) -> None:
        """``callback(StatusUpdate)`` on the log thread for each status record read."""
        super().set_listener(callback)

    # --------------------------------------------------------------------------- reads

    def get_connector(self, connector: str) -> ConnectorStatus | None:
        with self._lock:
            status = self._visible.get(StatusKey("connector", connector))
        return status if isinstance(status, ConnectorStatus) else None

    def get_task(self, task: TaskId) -> TaskStatus | None:
        with self._lock:
            status = self._visible.get(StatusKey("task", task.connector, task=task.task))
        return status if isinstance(status, TaskStatus) else None

    def get_tasks(self, connector: str) -> list[TaskStatus]:
        return [s for s in self._of("task", connector) if isinstance(s, TaskStatus)]

    def get_topics(self, connector: str) -> list[TopicStatus]:
        return [s for s in self._of("topic", connector) if isinstance(s, TopicStatus)]

    def _of(self, kind: str, connector: str) -> list[Status]:
        with self._lock:
            keys = sorted(self._index.get((kind, connector), ()),
                          key=lambda k: (k.task or 0, k.topic or ""))
            return [self._visible[k] for k in keys]

    # --------------------------------------------------------------------------- writes

    def put_connector(self, status: ConnectorStatus) -> None:
        self._write(StatusKey("connector", status.connector), status,
                    formats.status_value(status))

    def put_task(self, status: TaskStatus) -> None:
        self._write(StatusKey("task", status.id.connector, task=status.id.task), status,
                    formats.status_value(status))

    def put_topic(self, status: TopicStatus) -> None:
        # KIP-558: the first discovery is kept.
        self._write(StatusKey("topic", status.connector, topic=status.topic), status,
                    formats.topic_status_value(status), keep_existing=True)

    def delete_connector(self, connector: str) -> None:
        with self._lock:
            tasks = list(self._index.get(("task", connector), ()))
        for key in [StatusKey("connector", connector), *tasks]:
            self._write(key, None, None)

    def delete_task(self, task: TaskId) -> None:
        self._write(StatusKey("task", task.connector, task=task.task), None, None)

    def delete_topics(self, connector: str) -> None:
        with self._lock:
            topics = list(self._index.get(("topic", connector), ()))
        for key in topics:
            self._write(key, None, None)

    def _write(self, key: StatusKey, status: Status | None, value: bytes | None, *,
               keep_existing: bool = False) -> None:
        kafka_log = self.kafka_log
        # Sequence and send under one lock, so the log order of our writes is their
        # sequence order; not under _lock, which delivery reports need while send waits
        # for room in a full producer queue.
        with self._send_lock:
            with self._lock:
                if keep_existing and key in self._visible:
                    return
                self._seq += 1
                seq = self._seq
                self._pending[key] = _Pending(seq, status)
                self._show(key)
            try:
                future = kafka_log.send(formats.status_key(key), value)
            except BaseException:
                self._forget(key, seq)
                raise
        future.add_done_callback(lambda done: self._delivered(key, seq, done))

    def _forget(self, key: StatusKey, seq: int) -> None:
        with self._lock:
            pending = self._pending.get(key)
            if pending is not None and pending.seq == seq:
                del self._pending[key]
                self._show(key)

    def _delivered(self, key: StatusKey, seq: int, future: Future[LogRecord]) -> None:
        error = future.exception()
        if error is not None:
            log.error("Failed to write the status record %r: %s",
                      formats.status_key(key), error)
            self._forget(key, seq)
            return
        record = future.result()
        with self._lock:
            pending = self._pending.get(key)
            if pending is not None and pending.seq == seq:
                if self._applied.get(record.partition, 0) > record.offset:
                    del self._pending[key]  # the log already read past it
                    self._show(key)
                else:
                    pending.at = (record.partition, record.offset)

    # --------------------------------------------------------------------------- the log

    def _on_record(self, record: LogRecord) -> None:
        decoded = formats.decode_status_record(record.key, record.value)
        with self._lock:
            self._applied[record.partition] = record.offset + 1
            if decoded is None:
                return
            key, status = decoded
            changed = [key]
            if status is not None:
                self._from_log[key] = status
            else:
                self._from_log.pop(key, None)
                if key.kind == "connector":  # as in Kafka, its tasks' statuses go too
                    tasks = [k for k in self._from_log
                             if k.kind == "task" and k.connector == key.connector]
                    for task in tasks:
                        del self._from_log[task]
                    changed += tasks
            pending = self._pending.get(key)
            if pending is not None and pending.at is not None and (
                    pending.at[0] == record.partition and pending.at[1] <= record.offset):
                del self._pending[key]
            for k in changed:
                self._show(k)
        self._emit(StatusUpdate(key.kind, key.connector, key.task, key.topic))

    def _show(self, key: StatusKey) -> None:
        """Recompute what readers see for ``key`` (under the lock)."""
        pending = self._pending.get(key)
        status = pending.status if pending is not None else self._from_log.get(key)
        group = (key.kind, key.connector)
        if status is None:
            self._visible.pop(key, None)
            keys = self._index.get(group)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del self._index[group]
        else:
            self._visible[key] = status
            self._index.setdefault(group, set()).add(key)
