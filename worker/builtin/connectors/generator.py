"""A sequence-number generator source for demos, tests and throughput benchmarks.

Each task ``n`` emits records with consecutive sequence numbers 0, 1, 2, ... Its source
partition is ``{"task": n}`` and its offset ``{"seq": <last seq emitted>}``; a restarted task
continues after the committed sequence number. The connector name is not part of the
partition because the worker already keys offsets by connector (``["{c}", partition]``).

Values are deterministic so that a consumer can check for gaps and duplicates:

- ``format=string``: ``f"{task}-{seq:012d}-"`` padded with ``x`` to ``message.size`` bytes
  (truncated if ``message.size`` is smaller than that prefix); schema STRING;
- ``format=json``: a schemaless dict ``{"task", "seq", "ts", "payload"}`` whose compact JSON is
  about ``message.size`` bytes (``payload`` is the padding, ``ts`` the poll time in ms).

The key is the task number as a string (schema STRING) in both formats, so with the
default partitioner all records of one task land in one partition, in sequence order.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Mapping
from typing import Any

from worker.api import (
    NO_DEFAULT,
    ConfigDef,
    ConnectException,
    Importance,
    SourceConnector,
    SourceRecord,
    SourceTask,
    Task,
    Type,
)
from worker.api.config_def import at_least, non_empty_string, one_of
from worker.api.data import STRING_SCHEMA

log = logging.getLogger(__name__)

TOPIC_CONFIG = "topic"
COUNT_CONFIG = "count"
MESSAGE_SIZE_CONFIG = "message.size"
RATE_CONFIG = "rate"
BATCH_SIZE_CONFIG = "batch.size"
FORMAT_CONFIG = "format"
TASK_ID_CONFIG = "task.id"
"""Added by the connector to each task config: the task's number (0-based)."""

TASK_FIELD = "task"
SEQ_FIELD = "seq"

IDLE_WAIT_S = 1.0
"""How long poll() waits at most when it may not emit (count reached, rate limit); stop()
cuts it. A rate-limited poll waits for the next record due and returns it: an idle task
wakes once per record (or second), not several times a second."""

CONFIG_DEF = (
    ConfigDef()
    .define(TOPIC_CONFIG, Type.STRING, NO_DEFAULT, Importance.HIGH,
            "The topic to publish data to", validator=non_empty_string())
    .define(COUNT_CONFIG, Type.LONG, -1, Importance.MEDIUM,
            "Records per task; -1 means unlimited", validator=at_least(-1))
    .define(MESSAGE_SIZE_CONFIG, Type.INT, 100, Importance.MEDIUM,
            "Size of each value in bytes (approximate for the json format)",
            validator=at_least(1))
    .define(RATE_CONFIG, Type.DOUBLE, 0.0, Importance.MEDIUM,
            "Records per second per task; 0 means as fast as possible", validator=at_least(0))
    .define(BATCH_SIZE_CONFIG, Type.INT, 1000, Importance.LOW,
            "The maximum number of records returned by one poll", validator=at_least(1))
    .define(FORMAT_CONFIG, Type.STRING, "string", Importance.LOW,
            "Value format: 'string' (a padded string) or 'json' (a schemaless dict)",
            validator=one_of("string", "json"))
)


def _check_seq(offset: Mapping[str, Any]) -> int:
    seq = offset.get(SEQ_FIELD)
    if not isinstance(seq, int) or isinstance(seq, bool) or seq < -1:
        raise ConnectException(f"The value for the '{SEQ_FIELD}' key in the offset is expected "
                               "to be an integer of at least -1")
    return seq


class SequenceGeneratorConnector(SourceConnector):
    """Generates sequence-numbered records; ``tasks.max`` tasks each run their own sequence."""

    def __init__(self) -> None:
        self._props: dict[str, str] = {}

    def config(self) -> ConfigDef:
        return CONFIG_DEF

    def start(self, props: Mapping[str, str]) -> None:
        CONFIG_DEF.parse(props)
        self._props = dict(props)

    def task_class(self) -> type[Task]:
        return SequenceGeneratorTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [{**self._props, TASK_ID_CONFIG: str(n)} for n in range(max_tasks)]

    def stop(self) -> None:
        """Nothing to release: the connector has no background work."""

    def alter_offsets(self, connector_config: Mapping[str, str],
                      offsets: Mapping[str, Mapping[str, Any] | None]) -> bool:
        """KIP-875: accept ``{"task": n}`` → ``{"seq": s}`` (or a reset) for any task."""
        for partition_text, offset in offsets.items():
            partition = json.loads(partition_text)
            if not isinstance(partition, dict) or not isinstance(partition.get(TASK_FIELD), int):
                raise ConnectException(f"Partition objects should contain the integer key "
                                       f"'{TASK_FIELD}'")
            if offset is not None:
                _check_seq(offset)
        return True


class SequenceGeneratorTask(SourceTask):
    """Emits up to ``batch.size`` records per poll, throttled to ``rate`` if set."""

    def __init__(self) -> None:
        self._stopping = threading.Event()
        self._task = 0
        self._topic = ""
        self._count = -1
        self._rate = 0.0
        self._batch_size = 1000
        self._json = False
        self._next_seq = 0
        self._partition: dict[str, Any] = {}
        self._prefix = ""
        self._padding = ""
        self._size = 0
        self._fits = True
        # Rate limiting: records emitted since _rate_start (monotonic seconds).
        self._rate_start: float | None = None
        self._rate_sent = 0

    def start(self, props: Mapping[str, str]) -> None:
        parsed = CONFIG_DEF.parse(props)
        self._task = int(props.get(TASK_ID_CONFIG, "0"))
        self._topic = parsed[TOPIC_CONFIG]
        self._count = parsed[COUNT_CONFIG]
        self._rate = parsed[RATE_CONFIG]
        self._batch_size = parsed[BATCH_SIZE_CONFIG]
        self._json = parsed[FORMAT_CONFIG].lower() == "json"
        self._size = parsed[MESSAGE_SIZE_CONFIG]
        self._partition = {TASK_FIELD: self._task}
        self._prefix = f"{self._task}-"
        if self._json:
            sample = {"task": self._task, "seq": 0, "ts": int(time.time() * 1000), "payload": ""}
            overhead = len(json.dumps(sample, separators=(",", ":"))) + 5  # ~6-digit seqs
            self._padding = "x" * max(self._size - overhead, 0)
        else:
            # Precomputed once: the prefix has a fixed width while seq < 10**12.
            fixed = len(self._prefix) + 13
            self._fits = fixed <= self._size
            self._padding = "x" * max(self._size - fixed, 0)
        self._key = str(self._task)
        offset = self.context.offset_storage_reader.offset(self._partition)
        self._next_seq = 0 if offset is None else _check_seq(offset) + 1
        log.info("Generator task %d starts at sequence number %d", self._task, self._next_seq)

    def poll(self) -> list[SourceRecord] | None:
        if self._stopping.is_set():
            return None
        n = self._batch_size
        start = self._next_seq
        if self._count >= 0:
            n = min(n, self._count - start)
            if n <= 0:
                self._stopping.wait(IDLE_WAIT_S)
                return None
        if self._rate > 0:
            n = self._throttle(n)
            if n <= 0:
                return None
        end = start + n
        self._next_seq = end
        if self._json:
            return self._json_records(start, end)
        if not self._fits:
            return self._truncated_records(start, end)
        # The hot loop: positional args, shared partition dict, precomputed padding.
        partition, topic, prefix, pad, schema, key = (self._partition, self._topic,
                                                      self._prefix, self._padding,
                                                      STRING_SCHEMA, self._key)
        record = SourceRecord
        return [record(partition, {"seq": seq}, topic, None, schema, key, schema,
                       f"{prefix}{seq:012d}-{pad}") for seq in range(start, end)]

    def _throttle(self, wanted: int) -> int:
        """How many records may go now; when none is due, waits for the next one (up to
        IDLE_WAIT_S) and returns 0 if it is still not due (or the task stops)."""
        now = time.monotonic()
        if self._rate_start is None:
            self._rate_start = now
        due = self._due(now)
        if due <= 0:
            next_due = self._rate_start + self._rate_sent / self._rate
            if self._stopping.wait(min(IDLE_WAIT_S, max(next_due - now, 0.001))):
                return 0
            due = self._due(time.monotonic())
            if due <= 0:
                return 0
        allowed = min(wanted, due)
        self._rate_sent += allowed
        return allowed

    def _due(self, now: float) -> int:
        # One record is due at once, then one every 1/rate seconds since the first poll.
        assert self._rate_start is not None
        return int((now - self._rate_start) * self._rate) + 1 - self._rate_sent

    def _json_records(self, start: int, end: int) -> list[SourceRecord]:
        partition, topic, task, pad, schema = (self._partition, self._topic, self._task,
                                               self._padding, STRING_SCHEMA)
        ts = int(time.time() * 1000)
        record = SourceRecord
        return [record(partition, {"seq": seq}, topic, None, schema, self._key, None,
                       {"task": task, "seq": seq, "ts": ts, "payload": pad})
                for seq in range(start, end)]

    def _truncated_records(self, start: int, end: int) -> list[SourceRecord]:
        partition, topic, prefix, size = self._partition, self._topic, self._prefix, self._size
        return [SourceRecord(partition, {"seq": seq}, topic, None, STRING_SCHEMA, self._key,
                             STRING_SCHEMA, f"{prefix}{seq:012d}-"[:size])
                for seq in range(start, end)]

    def stop(self) -> None:
        self._stopping.set()
