"""Tasks: where the data moves. Each task runs in its own thread.

Source: ``start(props)``, then ``poll()`` repeatedly (return a list of SourceRecords, or
None/[] when there is nothing now — block briefly rather than spin), ``commit()`` after
offsets were committed, ``commit_record(record, metadata)`` per acknowledged record (only if
overridden), ``stop()`` from another thread.

Sink: ``open(partitions)`` on assignment, ``put(records)`` per batch, ``pre_commit`` /
``flush`` before consumer offsets are committed, ``close(partitions)`` on revocation,
``stop()``.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from concurrent.futures import Future
from typing import Any, NamedTuple

from worker.api.records import SinkRecord, SourceRecord, TopicPartition
from worker.api.versioned import DEFAULT_VERSION


def partition_key(source_partition: Mapping[str, Any]) -> str:
    """A canonical, hashable form of a source partition (sorted compact JSON)."""
    return json.dumps(source_partition, sort_keys=True, separators=(",", ":"))


class RecordMetadata(NamedTuple):
    topic: str
    partition: int
    offset: int
    timestamp: int | None


class OffsetStorageReader(ABC):
    """Read-only view of a source connector's committed offsets."""

    @abstractmethod
    def offsets(self, partitions: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
        """Committed offsets keyed by ``partition_key(partition)``; missing ones omitted."""

    def offset(self, partition: Mapping[str, Any]) -> dict[str, Any] | None:
        return self.offsets([partition]).get(partition_key(partition))


class SourceTaskContext(ABC):
    @property
    @abstractmethod
    def configs(self) -> dict[str, str]: ...

    @property
    @abstractmethod
    def offset_storage_reader(self) -> OffsetStorageReader: ...


class ErrantRecordReporter(ABC):
    """KIP-610: a sink task reports a record it cannot write instead of failing."""

    @abstractmethod
    def report(self, record: SinkRecord, error: BaseException) -> Future[None]:
        """Report ``record`` (from ``put``, on the task's thread) to the connector's error
        log and dead letter queue. The future completes once the dead letter queue has the
        record; offsets past it are committed only after that. Raises ConnectException
        when ``errors.tolerance=none`` (the task should fail)."""


class SinkTaskContext(ABC):
    @property
    @abstractmethod
    def configs(self) -> dict[str, str]: ...

    @abstractmethod
    def offset(self, offsets: Mapping[TopicPartition, int]) -> None:
        """Rewind/advance consumption of these partitions (applied before the next poll)."""

    @abstractmethod
    def timeout(self, timeout_ms: int) -> None:
        """After a RetriableException from put, retry the batch after this long."""

    @abstractmethod
    def assignment(self) -> set[TopicPartition]: ...

    @abstractmethod
    def pause(self, *partitions: TopicPartition) -> None: ...

    @abstractmethod
    def resume(self, *partitions: TopicPartition) -> None: ...

    @abstractmethod
    def request_commit(self) -> None:
        """Commit consumer offsets as soon as possible."""

    def errant_record_reporter(self) -> ErrantRecordReporter | None:
        """The reporter for records ``put`` cannot write (KIP-610); None when the connector
        has neither a dead letter queue nor ``errors.log.enable``."""
        return None


class Task(ABC):
    def version(self) -> str:
        return DEFAULT_VERSION

    @abstractmethod
    def start(self, props: Mapping[str, str]) -> None: ...

    @abstractmethod
    def stop(self) -> None:
        """Called from another thread; make ``poll``/``put`` return promptly."""


class SourceTask(Task):
    context: SourceTaskContext

    def initialize(self, context: SourceTaskContext) -> None:
        self.context = context

    @abstractmethod
    def poll(self) -> list[SourceRecord] | None: ...

    def commit(self) -> None:
        """Offsets up to the last acknowledged records were committed."""

    def commit_record(self, record: SourceRecord, metadata: RecordMetadata | None) -> None:
        """A record was acknowledged by Kafka (metadata None: a transformation dropped it)."""


class SinkTask(Task):
    context: SinkTaskContext

    def initialize(self, context: SinkTaskContext) -> None:
        self.context = context

    @abstractmethod
    def put(self, records: list[SinkRecord]) -> None: ...

    def flush(self, current_offsets: Mapping[TopicPartition, int]) -> None:
        """Make everything ``put`` so far durable."""

    def pre_commit(self, current_offsets: Mapping[TopicPartition, int]
                   ) -> Mapping[TopicPartition, int]:
        """Offsets (next offset to read) safe to commit; default: flush, then all of them."""
        self.flush(current_offsets)
        return current_offsets

    def open(self, partitions: list[TopicPartition]) -> None:
        """Partitions were assigned to this task."""

    def close(self, partitions: list[TopicPartition]) -> None:
        """Partitions are being revoked; offsets were committed just before."""
