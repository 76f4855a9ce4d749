"""worker.cli.base: signals first, start-up on its own thread, exit codes, one line each.

Each case runs ``base.run`` in a child interpreter (signal handlers, logging and exit codes
are process-wide) with a start-up function that stands in for the worker's; the test
sends the signals and reads what the child logged.
"""

from __future__ import annotations

import queue
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from worker.cli.base import signal_exit_code

PROBE = """
import logging, sys, threading
from worker.cli import base
from worker.errors import WorkerError

log = logging.getLogger("worker.cli.probe")
mode = sys.argv[1]
base.STARTUP_STOP_WAIT_S = 1.0
NEVER = threading.Event()  # never set: what waits on it is stuck

class Server:
    url = "http://probe"

class Process:
    server = Server()
    def stop(self):
        log.info("probe: stop called")
        if mode == "slow-stop":
            NEVER.wait(30)  # a stop that does not end in time

def start(startup):
    if mode == "connect-error":
        raise WorkerError("no broker answered")
    if mode == "startup-error":
        raise base.StartupError("Failed to create a connector from the command line: bad")
    if mode == "crash":
        raise RuntimeError("boom")
    if mode == "built":
        startup.built(Process())
        log.info("probe: waiting")
        startup.cancelled.wait(30)
        startup.checkpoint()
    if mode == "stubborn":
        log.info("probe: waiting")
        NEVER.wait(30)  # a start-up step that does not look at the signal
    return Process()

sys.exit(base.run(log, start))
"""

#: A line as the worker writes it (worker.util.logs.LOG_FORMAT).
LINE = re.compile(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\] (DEBUG|INFO|WARNING|ERROR|CRITICAL) "
                  r".* \([\w.]+\) \[[\w-]+\]$")


class Child:
    """The probe in a child interpreter; its stderr read line by line on a thread."""

    def __init__(self, mode: str) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", PROBE, mode],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True)
        self.lines: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self._queue.put(line.rstrip("\n"))
        self._queue.put(None)

    def wait_for(self, text: str, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while not any(text in line for line in self.lines):
            try:
                line = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no {text!r} within {timeout} s:\n" +
                                     "\n".join(self.lines)) from None
            if line is None:
                raise AssertionError(f"the probe ended before {text!r}:\n" +
                                     "\n".join(self.lines))
            self.lines.append(line)

    def send(self, signum: int) -> None:
        self.proc.send_signal(signum)

    def finish(self, timeout: float = 30.0) -> tuple[int, str]:
        code = self.proc.wait(timeout)
        deadline = time.monotonic() + timeout
        while True:
            line = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
            if line is None:
                return code, "\n".join(self.lines)
            self.lines.append(line)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


Spawn = Callable[[str], Child]


@pytest.fixture
def child() -> Iterator[Spawn]:
    children: list[Child] = []

    def make(mode: str) -> Child:
        children.append(Child(mode))
        return children[-1]

    yield make
    for c in children:
        c.kill()


def assert_worker_lines(output: str) -> None:
    assert "Traceback" not in output and "KeyboardInterrupt" not in output, output
    for line in output.splitlines():
        assert LINE.match(line), f"not in the worker's format: {line!r}\n{output}"


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_during_start_up_stops_what_it_built_and_exits_with_128_plus_n(
        child: Spawn, signum: int) -> None:
    probe = child("built")
    probe.wait_for("probe: waiting")
    probe.send(signum)
    code, output = probe.finish()
    assert code == signal_exit_code(signum) == 128 + signum
    name = signal.Signals(signum).name
    assert f"INFO Received {name} during start-up; stopping" in output
    assert "probe: stop called" in output
    assert output.splitlines()[-1].split("] ", 1)[1].startswith(
        "INFO Worker stopped before it finished starting (worker.cli.probe)")
    assert_worker_lines(output)


def test_a_signal_once_started_stops_the_worker_and_exits_0(child: Spawn) -> None:
    probe = child("started")
    probe.wait_for("Worker started; REST API at http://probe")
    probe.send(signal.SIGTERM)
    code, output = probe.finish()
    assert code == 0
    assert "INFO Received SIGTERM; stopping (worker.cli.probe)" in output
    assert output.index("probe: stop called") < output.index("INFO Worker stopped")
    assert_worker_lines(output)


def test_a_second_signal_while_stopping_exits_at_once(child: Spawn) -> None:
    probe = child("slow-stop")
    probe.wait_for("Worker started")
    probe.send(signal.SIGINT)
    probe.wait_for("probe: stop called")  # now stuck in stop() for 30 s
    started = time.monotonic()
    probe.send(signal.SIGINT)
    code, output = probe.finish()
    assert code == 130 and time.monotonic() - started < 10
    assert "WARNING Received SIGINT again while stopping; exiting at once" in output
    assert "Worker stopped" not in output
    assert_worker_lines(output)


@pytest.mark.parametrize(("mode", "logged"), [
    ("connect-error", "ERROR Failed to start the worker: no broker answered (worker.cli.probe)"),
    ("startup-error", "ERROR Failed to create a connector from the command line: bad "
                      "(worker.cli.probe)"),
])
def test_a_failed_start_up_logs_one_error_and_exits_1(child: Spawn, mode: str,
                                                        logged: str) -> None:
    code, output = child(mode).finish()
    assert code == 1
    assert [line for line in output.splitlines() if " ERROR " in line][0].endswith(
        logged + " [MainThread]")
    assert_worker_lines(output)


def test_an_unexpected_start_up_error_is_logged_with_its_traceback(child: Spawn) -> None:
    code, output = child("crash").finish()
    assert code == 1
    assert "ERROR Failed to start the worker (worker.cli.probe)" in output
    assert "RuntimeError: boom" in output  # the traceback, inside the log record


def test_a_start_up_step_that_does_not_end_is_left_behind(child: Spawn) -> None:
    probe = child("stubborn")  # STARTUP_STOP_WAIT_S is 1 s in the probe
    probe.wait_for("probe: waiting")
    started = time.monotonic()
    probe.send(signal.SIGINT)
    code, output = probe.finish()
    assert code == 130 and time.monotonic() - started < 10
    assert "WARNING Start-up did not reach the end of its current step within 1 s" in output
    assert_worker_lines(output)


@pytest.mark.parametrize("module", ["worker.cli.standalone", "worker.cli.distributed"])
def test_the_command_lines_import_nothing_of_the_worker_before_the_handlers(
        module: str) -> None:
    # What runs before main() installs the handlers is the window in which a signal would
    # still raise KeyboardInterrupt: the standard library and worker.cli.base only.
    probe = (f"import sys, {module}; print(sorted(m for m in sys.modules if m.split('.')[0] "
             "in ('worker', 'confluent_kafka', 'kafka', 'fastapi', 'uvicorn', 'sqlalchemy')))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         timeout=60, check=True).stdout
    assert out.strip() == str(sorted(["worker", "worker.cli", "worker.cli.base", module,
                                      "worker.util", "worker.util.logs"]))
