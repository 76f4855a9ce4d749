"""What ``connect-standalone`` and ``connect-distributed`` share: logging, signals,
start-up and stop (``run``).

Signals first. ``run`` installs the SIGINT/SIGTERM handlers before anything else happens —
the command lines import the worker (FastAPI, the Kafka clients, the plugins) only after
it — so that a signal at any moment of start-up stops the process cleanly: no
``KeyboardInterrupt`` traceback, nothing left running. The handlers only note the signal
and wake the main thread (through a pipe: a handler that takes a lock, as logging or
``threading.Event.set`` do, can deadlock against the code it interrupted).

Start-up runs on a thread of its own (``startup``) while the main thread waits for it to
end or for a signal:

* a signal during start-up: one INFO line; the start-up stops at the end of its current
  step (the wait for Kafka checks every second), whatever it started is stopped, and the
  process exits with 128 + the signal's number (130 for SIGINT, 143 for SIGTERM), as
  Kafka's scripts do (the JVM exits so on these signals);
* a signal once the worker has started: it stops (bounded by its own timeouts) and the
  process exits with 0, as it always has (Kafka's scripts: 130/143 here too);
* a second signal while stopping: one WARNING line and the process exits at once with
  128 + its number, without waiting for the stop to finish;
* start-up fails: one ERROR line and exit code 1.

``kill -USR1 <pid>`` prints every thread's stack to stderr (the jstack of the worker).
"""

from __future__ import annotations

import faulthandler
import logging
import os
import select
import signal
import sys
import threading
from collections.abc import Callable
from types import FrameType
from typing import TYPE_CHECKING, Any, TypeVar

from worker.util.logs import LOG_FORMAT, configure_logging

if TYPE_CHECKING:
    from worker.compose import Connect

T = TypeVar("T")

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
EXIT_OK = 0
EXIT_FAILED = 1
#: How long an interrupted start-up may take to end its current step before the process
#: exits without it: the longest steps wait for Kafka with bounds of their own (30 s).
STARTUP_STOP_WAIT_S = 60.0


def signal_exit_code(signum: int) -> int:
    """The exit code of a process ended by ``signum``: 128 + its number (the shell's,
    and the JVM's on SIGINT/SIGTERM)."""
    return 128 + signum


class Interrupted(Exception):
    """Start-up was asked to stop: raised at the end of a start-up step."""


class StartupError(Exception):
    """A start-up failure whose message says everything (logged as is at ERROR)."""


class Startup:
    """What a command line's start-up function is given: ``cancelled`` (set by a signal),
    ``checkpoint()`` to call between steps, and ``built()`` to hand over the worker as soon
    as it exists, so that an interrupted or failed start-up stops it."""

    def __init__(self) -> None:
        self.cancelled = threading.Event()
        self.process: Connect | None = None

    def checkpoint(self) -> None:
        """Raise Interrupted if a signal asked start-up to stop."""
        if self.cancelled.is_set():
            raise Interrupted

    def built(self, process: Connect) -> Connect:
        self.process = process
        self.checkpoint()
        return process


class Signals:
    """SIGINT/SIGTERM noted in ``received``; the main thread sleeps in ``wait()`` until
    one arrives or another thread calls ``wake()``."""

    def __init__(self, log: logging.Logger) -> None:
        self._log = log
        self.received: list[int] = []
        #: Set once stopping: a further signal ends the process at once.
        self.exit_on_next = False
        self._previous: dict[int, Any] = {}
        self._read, self._write = os.pipe()
        os.set_blocking(self._read, False)
        os.set_blocking(self._write, False)

    def install(self) -> None:
        for signum in STOP_SIGNALS:
            self._previous[signum] = signal.signal(signum, self._on_signal)
        faulthandler.register(signal.SIGUSR1, all_threads=True)

    def restore(self) -> None:
        """Put the previous handlers back and close the pipe (a command run in process)."""
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous = {}
        read, write = self._read, self._write
        self._read = self._write = -1  # a late wake() must not write to a reused number
        for fd in (read, write):
            os.close(fd)

    def _on_signal(self, signum: int, _frame: FrameType | None) -> None:
        self.received.append(signum)
        if self.exit_on_next and len(self.received) > 1:
            self._exit_now(signum)
        self.wake()

    def wake(self) -> None:
        """Any thread (or a signal handler): end the main thread's ``wait()``."""
        if self._write < 0:
            return  # restored: nobody waits any more
        try:
            os.write(self._write, b"\0")
        except BlockingIOError:
            pass  # the pipe is full: a wake-up is pending anyway

    def wait(self, timeout_s: float | None = None) -> None:
        select.select([self._read], [], [], timeout_s)
        try:
            while os.read(self._read, 512):
                pass
        except BlockingIOError:
            pass

    def first(self) -> int:
        return self.received[0]

    def _exit_now(self, signum: int) -> None:
        # In the signal handler: no logging call (its locks may be held by the code this
        # interrupted); the line is formatted here and written with one system call.
        record = self._log.makeRecord(
            self._log.name, logging.WARNING, __file__, 0,
            "Received %s again while stopping; exiting at once", (name(signum),), None)
        line = logging.Formatter(LOG_FORMAT).format(record) + "\n"
        try:
            os.write(sys.stderr.fileno(), line.encode("utf-8", "replace"))
        except (OSError, ValueError):
            pass
        os._exit(signal_exit_code(signum))


def name(signum: int) -> str:
    return signal.Signals(signum).name


def run(log: logging.Logger, start: Callable[[Startup], Connect]) -> int:
    """Run a worker: signals first, then logging and ``start`` on the ``startup`` thread;
    serve until a signal; stop. Returns the exit code (see the module docstring)."""
    signals = Signals(log)
    signals.install()
    configure_logging()
    try:
        raise_fd_limit(log)
        startup = Startup()
        thread, outcome = run_watched(signals, lambda: start(startup), "startup")
        if signals.received:
            return _interrupted(log, signals, startup, thread, outcome)
        result = outcome[0]
        if isinstance(result, BaseException):
            return _failed(log, startup, result)
        return serve(log, signals, result)
    except KeyboardInterrupt:  # SIGINT's default handler, restored by some library
        log.info("Interrupted; exiting")
        return signal_exit_code(signal.SIGINT)


def run_watched(signals: Signals, target: Callable[[], T], thread_name: str
                ) -> tuple[threading.Thread, list[T | BaseException]]:
    """Run ``target`` on a daemon thread of its own and wait until it returns or raises or
    a signal arrives. The list holds what it returned or raised once it ended (empty when
    the signal came first; it may still end later)."""
    outcome: list[T | BaseException] = []

    def run() -> None:
        try:
            outcome.append(target())
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread
            outcome.append(exc)
        finally:
            signals.wake()

    thread = threading.Thread(target=run, name=thread_name, daemon=True)
    thread.start()
    while not signals.received and not outcome:
        signals.wait()
    return thread, outcome


def raise_fd_limit(log: logging.Logger) -> None:
    """Before anything opens a client: the soft RLIMIT_NOFILE up to the hard limit, and
    one line saying what that allows (worker.runtime.fd_budget)."""
    from worker.runtime import fd_budget
    log.info("%s", fd_budget.describe(*fd_budget.raise_nofile_limit()))


def _interrupted(log: logging.Logger, signals: Signals, startup: Startup,
                 thread: threading.Thread, outcome: list[Connect | BaseException]) -> int:
    signum = signals.first()
    signals.exit_on_next = True
    log.info("Received %s during start-up; stopping (a second signal exits at once)",
             name(signum))
    startup.cancelled.set()
    thread.join(STARTUP_STOP_WAIT_S)
    if thread.is_alive():
        log.warning("Start-up did not reach the end of its current step within %.0f s; "
                    "exiting without stopping what it started", STARTUP_STOP_WAIT_S)
        logging.shutdown()
        os._exit(signal_exit_code(signum))
    result = outcome[0] if outcome else None
    if isinstance(result, BaseException) and not isinstance(result, Interrupted):
        log.debug("Start-up ended with an error after %s", name(signum), exc_info=result)
    process = startup.process
    if process is None and result is not None and not isinstance(result, BaseException):
        process = result
    if process is not None:
        process.stop()
    log.info("Worker stopped before it finished starting")
    return signal_exit_code(signum)


def _failed(log: logging.Logger, startup: Startup, exc: BaseException) -> int:
    from worker.errors import WorkerError
    if isinstance(exc, StartupError):
        log.error("%s", exc)
    elif isinstance(exc, WorkerError):
        log.error("Failed to start the worker: %s", exc)
    else:
        log.error("Failed to start the worker", exc_info=exc)
    if startup.process is not None:
        startup.process.stop()
    return EXIT_FAILED


def serve(log: logging.Logger, signals: Signals, process: Connect) -> int:
    """Serve until a signal, then stop ``process``; 0."""
    from worker.util.collector import settle_collector
    # Everything built so far lives as long as the process; records come in batches.
    settle_collector()
    log.info("Worker started; REST API at %s", process.server.url)
    while not signals.received:
        signals.wait()
    signals.exit_on_next = True
    log.info("Received %s; stopping", name(signals.first()))
    process.stop()
    log.info("Worker stopped")
    return EXIT_OK
