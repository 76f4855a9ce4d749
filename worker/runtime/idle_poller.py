"""One thread watches the consumers of idle sink tasks, so that idle tasks' threads sleep.

A sink task's thread waits for records in ``Consumer.consume()``. confluent-kafka splits
any wait longer than 200 ms into 200 ms slices and takes the GIL between them, and it has no
call that wakes a waiting consumer: an idle sink's thread would wake five times a second,
for nothing. At hundreds of tasks these wake-ups are a large share of an idle worker's CPU,
and they compete for the GIL with the REST API.

So a sink task that found nothing for a while *parks* its consumer here and blocks on its
own event, with no timeout shorter than its next offset commit. One poller thread calls
``consume(max, 0)`` (which does not wait) on every parked consumer, once per
``POLL_INTERVAL_S``. When a consumer returns records, raises, or ran a rebalance callback
(which wakes the task), the poller hands the result to its task and wakes it; the task
takes the consumer back (``unpark``) and puts the records. After a full batch it reads on
its own thread until it is idle again; after a smaller one it parks again at once. A stop,
a pause or a resume wakes the task directly.

While a consumer is parked, what librdkafka serves inside ``consume()`` runs on the
poller's thread: the rebalance callbacks (so the connector's ``open()``/``close()`` and the
commit on revocation), the statistics and log callbacks. The task's own thread is blocked
in ``unpark`` meanwhile, so the task's code never runs on two threads at once. A rebalance
callback may block (a connector's ``close()`` flushing to a slow system), so it calls
``hand_over`` first: a new poller thread serves the other parked consumers from then on,
and the old one ends once that callback's ``consume()`` returned. The poller thread exists
only while some consumer is parked.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Protocol

from worker.util.threads import name_native_thread

log = logging.getLogger(__name__)

#: How often the poller visits each parked consumer: the longest an idle sink's first new
#: record waits in librdkafka's queue before its task wakes (the fetch itself is not delayed).
POLL_INTERVAL_S = 0.1
#: A consume() for a parked consumer that takes longer than this (its rebalance callbacks:
#: the connector's open()/close()) is logged.
SLOW_POLL_S = 1.0


class PolledConsumer(Protocol):
    def consume(self, num_messages: int = ..., timeout: float = ...) -> list[Any]: ...


class Parking:
    """A parked consumer: the poller consumes for it until its task takes it back."""

    __slots__ = ("owner", "consumer", "max_batch", "wake", "lock", "done", "messages",
                 "error")

    def __init__(self, owner: str, consumer: PolledConsumer, max_batch: int,
                 wake: threading.Event) -> None:
        self.owner = owner  # for the log, e.g. "c-0"
        self.consumer = consumer
        self.max_batch = max_batch
        self.wake = wake
        # Held while the poller consumes for this consumer: unpark waits for it, so the
        # consumer (and the task's callbacks) are never used by two threads at once.
        self.lock = threading.Lock()
        self.done = False  # a result was handed over, or the task took the consumer back
        self.messages: list[Any] = []
        self.error: BaseException | None = None


class IdlePoller:
    """Shared by every sink task of a worker; ``park``/``unpark`` from the tasks' threads."""

    def __init__(self, interval_s: float = POLL_INTERVAL_S) -> None:
        self._interval_s = interval_s
        self._lock = threading.Lock()
        self._parked: dict[int, Parking] = {}  # by id(), in parking order
        self._thread: threading.Thread | None = None
        self._pause = threading.Event()  # never set: an interruptible sleep between rounds

    @property
    def parked(self) -> int:
        return len(self._parked)

    @property
    def running(self) -> bool:
        thread = self._thread
        return thread is not None and thread.is_alive()

    def park(self, owner: str, consumer: PolledConsumer, max_batch: int,
             wake: threading.Event) -> Parking:
        """Hand ``consumer`` (of the task ``owner``) to the poller; ``wake`` is set when it
        returns records or raises. The caller must ``unpark`` it before using the consumer
        again."""
        parking = Parking(owner, consumer, max_batch, wake)
        with self._lock:
            self._parked[id(parking)] = parking
            if self._thread is None:
                self._thread = self._start()
        return parking

    def unpark(self, parking: Parking) -> None:
        """Take the consumer back, waiting for a ``consume()`` in progress on it; then
        ``parking.messages``/``parking.error`` hold what the poller got for it, if any."""
        with parking.lock:
            parking.done = True
        with self._lock:
            self._parked.pop(id(parking), None)

    def hand_over(self) -> None:
        """From a rebalance callback, which may block: when it runs on the poller's thread
        (its consumer is parked), a new thread polls the other parked consumers from now
        on, and this one ends after the consume() that runs the callback. Elsewhere (the
        task's own thread) nothing happens."""
        with self._lock:
            if self._thread is not threading.current_thread():
                return
            self._thread = self._start()

    def _start(self) -> threading.Thread:
        thread = threading.Thread(target=self._run, name="sink-idle-poller", daemon=True)
        thread.start()
        return thread

    def _run(self) -> None:
        name_native_thread("sink-poller")
        me = threading.current_thread()
        while True:
            with self._lock:
                if self._thread is not me:
                    return  # handed over while a callback ran here
                members = list(self._parked.values())
                if not members:
                    self._thread = None  # the next park starts a new thread
                    return
            for parking in members:
                self._poll(parking)
                if self._thread is not me:
                    return
            self._pause.wait(self._interval_s)

    @staticmethod
    def _poll(parking: Parking) -> None:
        # Busy: its task is taking it back, or an older poller thread still runs its
        # rebalance callback; either way this round leaves it.
        if not parking.lock.acquire(blocking=False):
            return
        try:
            if parking.done or not IdlePoller._consume(parking):
                return
            parking.done = True
        finally:
            parking.lock.release()
        parking.wake.set()

    @staticmethod
    def _consume(parking: Parking) -> bool:
        """One consume() for ``parking`` (its lock held); True when its task must wake."""
        started = time.monotonic()
        messages: list[Any] = []
        try:
            messages = parking.consumer.consume(parking.max_batch, 0)
        except BaseException as exc:  # the task raises it on its own thread
            parking.error = exc
        took = time.monotonic() - started
        if took > SLOW_POLL_S:
            log.warning("Task %s: its consumer's rebalance callbacks (the connector's "
                        "open() or close()) took %.1f s", parking.owner, took)
        # Records, an error, or a rebalance callback that woke the task: it applies what
        # the connector's open() asked for (a rewind, a pause) before more is read.
        if not messages and parking.error is None and not parking.wake.is_set():
            return False
        parking.messages = messages
        return True
