"""The records of a source task's ``poll()`` batch on their way to librdkafka, in order.

``WorkerSourceTask._send`` hands consecutive records for one topic and partition without
timestamp or headers to librdkafka in one ``produce_batch`` call, and lets one delivery
report stand for a run of keyless records (``worker.runtime.source_task``); this module
keeps what is not sent yet.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from confluent_kafka import KafkaException

from worker.clients.sticky_partitions import UNASSIGNED
from worker.runtime.source_offsets import SubmittedBatch


class PendingRecords:
    """What a source task's ``_send`` has not handed to librdkafka yet, so records stay in
    order: one run of records for a ``produce_batch`` call (one topic, partition and kind),
    or one held keyless record (``produce()`` with its timestamp and headers).

    Keyless records of a topic all go to the batch's partition of that topic
    (``StickyPartitions``) and only the last of them carries the batch's delivery callback:
    with an in-order, gapless producer its acknowledgement covers the ones before it. So
    a keyless record is held until the next one of its topic arrives (then it is sent
    without a callback), and a segment of them ends with a callback whenever something else
    is sent in between and at the end of the batch.

    ``produce`` is the producer's ``produce``; ``produce_waiting`` the same call that waits
    while librdkafka's queue is full; ``produce_batch(topic, messages, partition,
    on_delivery)`` queues a run and returns how many records it queued.
    """

    __slots__ = ("_batch", "_produce", "_produce_waiting", "_produce_batch", "run", "topic",
                 "partition", "acked", "held")

    def __init__(self, batch: SubmittedBatch, produce: Callable[..., None],
                 produce_waiting: Callable[..., Any],
                 produce_batch: Callable[[str, list[dict[str, Any]], int, Any], int]) -> None:
        self._batch = batch
        self._produce = produce
        self._produce_waiting = produce_waiting
        self._produce_batch = produce_batch
        self.run: list[dict[str, Any]] = []
        self.topic = ""
        self.partition = UNASSIGNED
        self.acked = True  # every record of the run carries the callback
        self.held: tuple[Any, ...] | None = None

    def add(self, topic: str, partition: int, acked: bool, message: dict[str, Any]) -> None:
        """Append a record without timestamp and headers to the run."""
        if self.held is not None:
            self._release(covered=not acked and self.held[0] == topic)
        if self.run and (topic != self.topic or partition != self.partition
                         or acked != self.acked):
            self._flush_run(covered=False)
        if not self.run:
            self.topic, self.partition, self.acked = topic, partition, acked
        self.run.append(message)

    def hold(self, topic: str, partition: int, value: Any, timestamp: int,
             headers: Any) -> None:
        """Keep a keyless record (sent by ``produce()``) until the next one arrives."""
        held = self.held
        if held is not None and held[0] == topic:
            # The common case, inline: this record stands for the one held before it.
            try:
                self._produce(*held)
            except (BufferError, KafkaException):
                self._produce_waiting(self._produce, *held)
        elif self.run:
            self._flush_run(covered=not self.acked and self.topic == topic)
        elif held is not None:
            self._release(covered=False)
        # produce()'s positional arguments, the delivery callback left out.
        self.held = (topic, value, None, partition, None, None, timestamp, headers)

    def flush(self) -> None:
        """Send everything pending, ending any keyless segment with a callback."""
        if self.run:
            self._flush_run(covered=False)
        elif self.held is not None:
            self._release(covered=False)

    def _flush_run(self, covered: bool) -> None:
        run, self.run = self.run, []
        batch = self._batch
        if self.acked:
            batch.unacked += self._produce_batch(self.topic, run, self.partition,
                                                 batch.acknowledge)
            return
        if not covered:
            run[-1]["callback"] = batch.acknowledge
            batch.unacked += 1
        self._produce_batch(self.topic, run, self.partition, None)

    def _release(self, covered: bool) -> None:
        assert self.held is not None
        args, self.held = self.held, None
        if not covered:
            args = (*args[:4], self._batch.acknowledge, *args[5:])
            self._batch.unacked += 1
        try:
            self._produce(*args)
        except (BufferError, KafkaException):
            self._produce_waiting(self._produce, *args)
