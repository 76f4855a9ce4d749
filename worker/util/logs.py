"""The worker's log: one format, the Kafka clients' lines inside it, repeats summarised.

Every command line configures logging here (``worker.cli.base``), and every module that
builds a Kafka client takes its logger's name from here, so the names that
docs/configuration.md#logging documents are defined once:

* ``worker.runtime.librdkafka``: the clients of connectors and tasks (source producers,
  sink consumers, dead letter queues, topic creation, the sink offsets API);
* ``worker.storage.kafka.librdkafka``: the internal topics' clients (distributed mode);
* ``worker.compose.librdkafka``: the admin client that asks Kafka for its cluster id at
  start-up;
* ``kafka``: kafka-python (the distributed workers' group membership), at WARNING unless
  ``/admin/loggers`` says otherwise: its INFO lines report every connection it makes.

librdkafka writes its lines to stderr itself, in its own format, unless a client is given
a ``logger``. It then queues them, and confluent-kafka hands them to that logger from the
client's ``poll()`` (a consumer's ``poll()``/``consume()``): a client that nobody polls keeps
them queued, and they are lost with it. Producers and consumers are polled by their
owners; admin clients mostly by nobody, so ``watch_logs`` has one thread poll them all.

A broker that cannot be reached makes librdkafka retry, and log, up to 20 times a second
per client; kafka-python likewise. ``RepeatFilter`` keeps such lines readable: the first
few of a kind pass, the rest are counted and the count rides on the next one that passes.
"""

from __future__ import annotations

import logging
import re
import sys
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol, TextIO, TypeVar

#: The clients of connectors and tasks (documented in docs/configuration.md).
TASK_CLIENTS = "worker.runtime.librdkafka"
#: The internal topics' producers, consumers and admin clients.
INTERNAL_TOPIC_CLIENTS = "worker.storage.kafka.librdkafka"
#: The start-up's admin client (the Kafka cluster id).
STARTUP_CLIENTS = "worker.compose.librdkafka"
#: kafka-python's loggers (``kafka.conn``, ``kafka.coordinator``, ...).
KAFKA_PYTHON = "kafka"
#: The loggers whose repeats ``RepeatFilter`` summarises, with their descendants.
CLIENT_LOGGERS = (TASK_CLIENTS, INTERNAL_TOPIC_CLIENTS, STARTUP_CLIENTS, KAFKA_PYTHON)

#: Kafka's log4j layout (``[%d] %p %m (%c)%n``) and the thread, as the worker has always
#: written it.
LOG_FORMAT = "[%(asctime)s] %(levelname)s %(message)s (%(name)s) [%(threadName)s]"

#: Records of a kind let through per window, and the window.
REPEAT_BURST = 2
REPEAT_WINDOW_S = 10.0
#: Kinds remembered at once (least recently seen forgotten first): bounded memory.
REPEAT_KINDS = 512

# confluent-kafka logs each librdkafka line as logger.log(level, "%s [%s] %s", facility,
# client name, text).
_LIBRDKAFKA_FORMAT = "%s [%s] %s"
_NUMBERS = re.compile(r"\d+")
# Where a librdkafka line happened: its thread, then the broker (and coordinator) names.
_LIBRDKAFKA_PREFIX = re.compile(r"^(\[thrd:[^\]]*\]: )?(\S+: )*")
_MARK = "_connect_plane_handler"


def configure_logging(level: int = logging.INFO, *, stream: TextIO | None = None
                      ) -> logging.Handler:
    """Log to ``stream`` (stderr) in ``LOG_FORMAT`` at ``level``, the Kafka clients'
    repeats summarised; kafka-python at WARNING; Python's warnings and the uncaught
    exceptions of threads as log records (so they take the format and the secret
    redaction, worker/util/secrets.py). Idempotent: a second call returns the handler."""
    root = logging.getLogger()
    for existing in root.handlers:
        if getattr(existing, _MARK, False):
            return existing
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    handler.addFilter(RepeatFilter(CLIENT_LOGGERS))
    setattr(handler, _MARK, True)
    root.addHandler(handler)
    root.setLevel(level)
    logging.getLogger(KAFKA_PYTHON).setLevel(logging.WARNING)
    logging.captureWarnings(True)
    threading.excepthook = _log_thread_exception
    return handler


def _log_thread_exception(args: threading.ExceptHookArgs) -> None:
    if args.exc_type is SystemExit:
        return
    name = args.thread.name if args.thread is not None else "unknown"
    exc_info = (args.exc_type, args.exc_value or args.exc_type(), args.exc_traceback)
    logging.getLogger(__name__).error("Uncaught exception in thread %s", name,
                                      exc_info=exc_info)


@dataclass
class _Window:
    start: float
    passed: int = 1
    suppressed: int = 0


class RepeatFilter(logging.Filter):
    """At most ``burst`` records of a kind per ``window_s`` from the loggers ``names`` (and
    their descendants), the last of them saying that more will be counted; while the kind
    keeps coming, one record per window, saying how many were suppressed in the last one.
    A kind that stays away for a whole window starts afresh.

    A kind is the logger, the level and the message with its numbers taken out — for
    librdkafka, its facility and text without the client's, thread's and broker's names
    (500 tasks failing to reach one broker are one kind), for a message logged with
    arguments, its format string. Records below INFO always pass: DEBUG is asked for on purpose
    (``/admin/loggers``, librdkafka's ``debug`` setting).
    """

    def __init__(self, names: Iterable[str], *, burst: int = REPEAT_BURST,
                 window_s: float = REPEAT_WINDOW_S, kinds: int = REPEAT_KINDS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self._names = tuple(names)
        self._burst, self._window_s, self._kinds = burst, window_s, kinds
        self._clock = clock
        self._windows: OrderedDict[tuple[str, int, str], _Window] = OrderedDict()
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.INFO or not self._applies(record.name):
            return True
        key = (record.name, record.levelno, _kind(record))
        now = self._clock()
        with self._lock:
            window = self._windows.get(key)
            if window is None or now - window.start >= self._window_s:
                suppressed, since = (0, now) if window is None \
                    else (window.suppressed, window.start)
                # A kind still repeating gets one line per window, with the count.
                self._windows[key] = _Window(now, self._burst if suppressed else 1)
                self._windows.move_to_end(key)
                while len(self._windows) > self._kinds:
                    self._windows.popitem(last=False)
                if suppressed:
                    _append(record, f"({suppressed} more like this in the last "
                                    f"{now - since:.0f} s)")
                return True
            if window.passed < self._burst:
                window.passed += 1
                if window.passed == self._burst:
                    _append(record, f"(more like this within {self._window_s:.0f} s are "
                                    "counted, not logged)")
                return True
            window.suppressed += 1
            return False

    def _applies(self, name: str) -> bool:
        return any(name == n or name.startswith(n + ".") for n in self._names)


def _kind(record: logging.LogRecord) -> str:
    args = record.args
    if record.msg == _LIBRDKAFKA_FORMAT and isinstance(args, tuple) and len(args) == 3:
        # "[thrd:host:port/id]: host:port/id: Connect to ... failed": the same failure on
        # any connection of any client is one kind.
        text = _LIBRDKAFKA_PREFIX.sub("", str(args[2]))
        return f"{args[0]} {_NUMBERS.sub('#', text)}"
    if args:
        return str(record.msg)
    return _NUMBERS.sub("#", str(record.msg))


def _append(record: logging.LogRecord, note: str) -> None:
    try:
        message = record.getMessage()
    except Exception:  # noqa: BLE001 - a bad format is the handler's to report
        return
    record.msg, record.args = f"{message} {note}", ()


class Pollable(Protocol):
    def poll(self, timeout: float = ...) -> object: ...


P = TypeVar("P", bound=Pollable)

#: How often the log pump hands over the log lines of the admin clients it watches.
PUMP_INTERVAL_S = 0.5


class _LogPump:
    """One daemon thread that polls the admin clients it is given, every
    ``PUMP_INTERVAL_S``, for as long as they live (weak references: it keeps none alive);
    it ends when none is left and starts again with the next one."""

    def __init__(self) -> None:
        self._clients: weakref.WeakSet[Any] = weakref.WeakSet()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def watch(self, client: Pollable) -> None:
        with self._lock:
            self._clients.add(client)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="librdkafka-logs",
                                                daemon=True)
                self._thread.start()

    def _run(self) -> None:
        while True:
            time.sleep(PUMP_INTERVAL_S)
            if not self._poll_all():
                return

    def _poll_all(self) -> bool:
        # Its own frame: the references taken here end with it, not at the next round.
        with self._lock:
            clients = list(self._clients)
            if not clients:
                self._thread = None
                return False
        for client in clients:
            try:
                client.poll(0)
            except Exception:  # noqa: BLE001 - closed, or no client at all: forget it
                self._clients.discard(client)
        return True


_PUMP = _LogPump()


def watch_logs(client: P) -> P:
    """Hand ``client``'s log lines to its ``logger`` every ``PUMP_INTERVAL_S`` while it
    lives; returns it. For admin clients, whose ``poll()`` serves only log lines and
    statistics (their results come on librdkafka's own thread) and which nobody else
    polls: one built for a call or two keeps its lines queued otherwise, and loses them.
    Never for producers or consumers: their ``poll()`` also serves delivery reports or
    records, which belong to their owner's thread, and their owners poll them anyway."""
    _PUMP.watch(client)
    return client
