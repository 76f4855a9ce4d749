"""Reading one offset range of one partition into Arrow record batches (executor side).

A Spark task reads exactly one ``[start, end)`` range with its own confluent-kafka
``Consumer``: assigned (no group join, no commit) at ``start``, it stops once the record
at ``end - 1`` or beyond has been seen or the partition's end (EOF) is reached — the latter
covers offsets that hold no record (compaction, transaction markers) and ranges whose end
was computed from a watermark. Rows go to Spark as ``pyarrow.RecordBatch`` objects, which skips
PySpark's per-row conversion.
"""

from __future__ import annotations

import bisect
import gc
import logging
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import pyarrow as pa

log = logging.getLogger(__name__)

#: Rows per Arrow batch handed to Spark (Spark's default ``maxRecordsPerBatch``).
BATCH_ROWS = 10_000
#: Longest single ``consume()`` wait; the overall wait is ``kafkaConsumer.pollTimeoutMs``.
_CONSUME_WAIT_S = 1.0

# confluent-kafka's timestamp types → Kafka's TimestampType ids (Spark's timestampType):
# NOT_AVAILABLE=0 → -1 (NO_TIMESTAMP_TYPE), CREATE_TIME=1 → 0, LOG_APPEND_TIME=2 → 1.
_TIMESTAMP_TYPES = {0: -1, 1: 0, 2: 1}


#: Milliseconds before librdkafka fetches again for a partition whose queue was full.
FETCH_QUEUE_BACKOFF_MS = 100


class KafkaReadError(RuntimeError):
    """A range could not be read: records are gone, or Kafka stopped answering."""


def consumer_config(client_config: Mapping[str, str], *, group_id_prefix: str,
                    fail_on_data_loss: bool) -> dict[str, Any]:
    """librdkafka settings of a range reader: the user's ``kafka.*`` options plus what
    the reader owns (no commits, EOF events, and what to do at a missing offset)."""
    config: dict[str, Any] = dict(client_config)
    # librdkafka insists on a group.id even for assign(); no group is ever joined with it.
    config.setdefault("group.id", f"{group_id_prefix}-{uuid.uuid4().hex}")
    # librdkafka (2.4+) waits fetch.queue.backoff.ms, 1 s by default, before fetching again
    # for a partition whose local queue is full (queued.min.messages, 100,000 records): a
    # range reader draining its queue faster than that would idle for the rest of it.
    config.setdefault("fetch.queue.backoff.ms", FETCH_QUEUE_BACKOFF_MS)
    config.update({
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "enable.partition.eof": True,
        # "error": an offset that is gone surfaces as an error event (failOnDataLoss);
        # "earliest": skip to the oldest record still there, as Spark does with false.
        "auto.offset.reset": "error" if fail_on_data_loss else "earliest",
    })
    return config


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while column lists are filled.

    Each record allocates a handful of acyclic objects (bytes, tuples, lists), which keeps
    triggering collections that find nothing; pausing them reads ~30 % faster.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


class _Columns:
    """Column buffers of one Arrow batch, filled a consumed batch at a time.

    One list comprehension per column instead of a method call per record: per-record
    Python work is what bounds the read rate (see docs/benchmarks.md).
    """

    def __init__(self) -> None:
        self.keys: list[bytes | None] = []
        self.values: list[bytes | None] = []
        self.offsets: list[int] = []
        self.timestamps: list[int | None] = []
        self.types: list[int] = []
        self.headers: list[list[tuple[str, bytes | None]] | None] = []

    def __len__(self) -> int:
        return len(self.offsets)

    def extend(self, records: Sequence[Any]) -> None:
        with _gc_paused():
            self._extend(records)

    def _extend(self, records: Sequence[Any]) -> None:
        self.keys += [m.key() for m in records]
        self.values += [m.value() for m in records]
        self.offsets += [m.offset() for m in records]
        stamps = [m.timestamp() for m in records]
        self.types += [_TIMESTAMP_TYPES.get(kind, -1) for kind, _ in stamps]
        # Arrow wants microseconds; no timestamp (type 0) is null.
        self.timestamps += [millis * 1000 if kind else None for kind, millis in stamps]
        self.headers += [m.headers() or None for m in records]  # Spark: null when none

    def to_batch(self, schema: pa.Schema, topic: str, partition: int) -> pa.RecordBatch:
        n = len(self)
        data = {
            "key": self.keys, "value": self.values, "topic": pa.repeat(topic, n),
            "partition": pa.repeat(partition, n), "offset": self.offsets,
            "timestamp": self.timestamps, "timestampType": self.types,
            "headers": self.headers,
        }
        arrays = [pa.array(data[f.name], type=f.type) if isinstance(data[f.name], list)
                  else data[f.name].cast(f.type) for f in schema]
        return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _records_until_event(messages: list[Any], topic: str, partition: int, start: int
                         ) -> tuple[list[Any], bool]:
    """The records of a consumed batch, and whether the partition's end (EOF) came.

    Records after an EOF event are left out: the range ends at the EOF. Data loss and
    fatal errors raise; transient errors (librdkafka retries them) are logged.
    """
    from confluent_kafka import KafkaError

    events = [i for i, m in enumerate(messages) if m.error() is not None]
    if not events:  # the common case: nothing but records
        return messages, False
    cut, at_end = len(messages), False
    for index in events:
        error = messages[index].error()
        if error.code() == KafkaError._PARTITION_EOF:
            cut, at_end = index, True  # nothing at or after the position: the range ends
            break
        if error.code() in (KafkaError._AUTO_OFFSET_RESET, KafkaError.OFFSET_OUT_OF_RANGE):
            raise KafkaReadError(
                f"records of {topic}-{partition} from offset {start} are no longer in "
                f"Kafka ({error.str()}); set failOnDataLoss=false to skip them")
        if error.fatal():
            raise KafkaReadError(f"reading {topic}-{partition}: {error.str()}")
        log.warning("reading %s-%d: %s", topic, partition, error.str())
    return [m for m in messages[:cut] if m.error() is None], at_end


def read_range(config: Mapping[str, Any], topic: str, partition: int, start: int, end: int,
               schema: pa.Schema, *, poll_timeout_ms: int,
               batch_rows: int = BATCH_ROWS) -> Iterator[pa.RecordBatch]:
    """Yield the records of ``topic``-``partition`` in ``[start, end)`` as batches of
    ``schema`` (the Arrow form of the source's Spark schema).

    Raises :class:`KafkaReadError` when no record arrives for ``poll_timeout_ms``
    before the range is complete, or (``auto.offset.reset=error``) when ``start`` is no
    longer in the partition.
    """
    from confluent_kafka import Consumer, TopicPartition

    if end <= start:
        return
    consumer = Consumer({**config, "logger": log})
    try:
        consumer.assign([TopicPartition(topic, partition, start)])
        columns = _Columns()
        done = False
        last_offset: int | None = None
        last_progress = time.monotonic()
        while not done:
            messages = consumer.consume(batch_rows, _CONSUME_WAIT_S)
            records, done = _records_until_event(messages, topic, partition, start)
            if records and records[-1].offset() >= end - 1:
                # librdkafka fetches ahead: drop what lies past the range.
                cut = bisect.bisect_left(records, end, key=lambda m: m.offset())
                records, done = records[:cut], True
            if records:
                columns.extend(records)
                last_offset = records[-1].offset()
            if records or done:
                last_progress = time.monotonic()
            elif (time.monotonic() - last_progress) * 1000 > poll_timeout_ms:
                raise KafkaReadError(
                    f"no record of {topic}-{partition} within {poll_timeout_ms} ms "
                    f"(kafkaConsumer.pollTimeoutMs) while reading [{start}, {end}); "
                    f"last offset read: {last_offset}")
            if len(columns) >= batch_rows or (done and len(columns)):
                yield columns.to_batch(schema, topic, partition)
                columns = _Columns()
    finally:
        consumer.close()


def arrow_schema(spark_schema: Any) -> pa.Schema:
    """The Arrow schema PySpark expects for ``spark_schema`` (it checks equality)."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(spark_schema, timezone="UTC")

