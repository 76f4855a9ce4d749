"""worker.util.logs: the worker's format, repeats of the Kafka clients' lines summarised,
admin clients' log lines handed over without anyone polling them."""

from __future__ import annotations

import functools
import io
import logging
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import Any, cast

import pytest
from confluent_kafka.admin import AdminClient

from tests.support import wait_until
from worker.testing import free_port
from worker.util import logs
from worker.util.logs import (
    CLIENT_LOGGERS,
    KAFKA_PYTHON,
    LOG_FORMAT,
    STARTUP_CLIENTS,
    TASK_CLIENTS,
    RepeatFilter,
    configure_logging,
    watch_logs,
)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def record(name: str, msg: str, *args: Any, level: int = logging.ERROR) -> logging.LogRecord:
    return logging.LogRecord(name, level, __file__, 1, msg, args or None, None)


def librdkafka(text: str, client: str = "rdkafka#producer-1", facility: str = "FAIL",
               name: str = TASK_CLIENTS) -> logging.LogRecord:
    """A record as confluent-kafka logs a librdkafka line."""
    return record(name, "%s [%s] %s", facility, client, text)


REFUSED = ("[thrd:localhost:9092/bootstrap]: localhost:9092/bootstrap: Connect to "
           "ipv4#127.0.0.1:9092 failed: Connection refused (after {}ms in state CONNECT)")


def passed(flt: RepeatFilter, records: list[logging.LogRecord]) -> list[str]:
    return [r.getMessage() for r in records if flt.filter(r)]


def test_a_repeated_line_passes_a_burst_then_once_a_window_with_the_count() -> None:
    clock = Clock()
    flt = RepeatFilter(CLIENT_LOGGERS, burst=3, window_s=10.0, clock=clock)
    first = passed(flt, [librdkafka(REFUSED.format(i)) for i in range(200)])
    assert len(first) == 3
    assert first[2].endswith("(more like this within 10 s are counted, not logged)")
    assert "more like this" not in first[0] + first[1]
    clock.now += 10.0
    second = passed(flt, [librdkafka(REFUSED.format(0)) for _ in range(50)])
    # Still repeating: one line per window, saying how many the last window held back.
    assert second == [f"FAIL [rdkafka#producer-1] {REFUSED.format(0)} "
                      "(197 more like this in the last 10 s)"]
    clock.now += 10.0
    assert passed(flt, [librdkafka(REFUSED.format(0))])[0].endswith(
        "(49 more like this in the last 10 s)")
    clock.now += 25.0  # a whole window without any suppressed: a fresh burst
    assert len(passed(flt, [librdkafka(REFUSED.format(0)) for _ in range(5)])) == 3


def test_clients_and_numbers_do_not_make_new_kinds_but_facilities_and_levels_do() -> None:
    flt = RepeatFilter(CLIENT_LOGGERS, burst=1, clock=Clock())
    same = [librdkafka(REFUSED.format(i), client=f"connector-producer-s-{i}#producer-{i}")
            for i in range(10)]
    assert len(passed(flt, same)) == 1
    elsewhere = REFUSED.format(0).replace("localhost:9092/bootstrap", "broker-2:9093/2")
    coordinator = "[thrd:GroupCoordinator]: GroupCoordinator: broker-2:9093: " + \
        REFUSED.format(0).split(": ", 2)[2]
    assert passed(flt, [librdkafka(elsewhere), librdkafka(coordinator)]) == []
    assert len(passed(flt, [librdkafka(REFUSED.format(0), facility="REQTMOUT")])) == 1
    warning = librdkafka(REFUSED.format(0))
    warning.levelno, warning.levelname = logging.WARNING, "WARNING"
    assert len(passed(flt, [warning])) == 1
    other_logger = librdkafka(REFUSED.format(0), name=STARTUP_CLIENTS)
    assert len(passed(flt, [other_logger])) == 1


def test_a_message_with_arguments_is_one_kind_per_format_string() -> None:
    flt = RepeatFilter(CLIENT_LOGGERS, burst=2, clock=Clock())
    lines = [record("kafka.conn", "%s: Connection error: %s", f"<conn {i}>", "refused",
                    level=logging.WARNING) for i in range(10)]
    assert len(passed(flt, lines)) == 2


def test_other_loggers_and_debug_lines_are_never_held_back() -> None:
    flt = RepeatFilter(CLIENT_LOGGERS, burst=1, clock=Clock())
    assert len(passed(flt, [record("worker.runtime.worker", "same") for _ in range(5)])) == 5
    assert len(passed(flt, [record("kafkaesque", "same") for _ in range(5)])) == 5
    debug = [librdkafka("x", facility="BROKER") for _ in range(5)]
    for r in debug:
        r.levelno = logging.DEBUG
    assert len(passed(flt, debug)) == 5
    assert len(passed(flt, [record("kafka.coordinator.heartbeat", "same")
                            for _ in range(5)])) == 1


def test_the_kinds_remembered_are_bounded() -> None:
    flt = RepeatFilter(CLIENT_LOGGERS, burst=1, kinds=4, clock=Clock())
    passed(flt, [record(TASK_CLIENTS, f"line {letter}") for letter in "abcdef"])
    assert len(flt._windows) == 4
    # The oldest kinds were forgotten: they pass again.
    assert passed(flt, [record(TASK_CLIENTS, "line a")]) == ["line a"]


@pytest.fixture
def logging_state() -> Iterator[None]:
    """configure_logging changes process-wide state: put it back afterwards."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    kafka_level = logging.getLogger(KAFKA_PYTHON).level
    hook = threading.excepthook
    try:
        yield
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
        logging.getLogger(KAFKA_PYTHON).setLevel(kafka_level)
        threading.excepthook = hook
        logging.captureWarnings(False)


@pytest.mark.usefixtures("logging_state")
def test_configure_logging_writes_the_worker_format_once_and_quiets_kafka_python() -> None:
    stream = io.StringIO()
    handler = configure_logging(stream=stream)
    assert configure_logging(stream=io.StringIO()) is handler  # idempotent
    assert sum(h is handler for h in logging.getLogger().handlers) == 1
    assert logging.getLogger().level == logging.INFO
    logging.getLogger("kafka.conn").info("Connected")  # kafka-python's chatter: WARNING up
    logging.getLogger("kafka.conn").warning("Connection refused")
    for _ in range(10):
        logging.getLogger(TASK_CLIENTS).error("%s [%s] %s", "FAIL", "rdkafka#consumer-2",
                                              "down")
    lines = stream.getvalue().splitlines()
    assert not any("Connected" in line for line in lines)
    assert any(line.endswith("WARNING Connection refused (kafka.conn) [MainThread]")
               and line.startswith("[") for line in lines)
    assert sum("FAIL [rdkafka#consumer-2] down" in line for line in lines) == logs.REPEAT_BURST
    assert handler.formatter is not None and handler.formatter._fmt == LOG_FORMAT


# In a child interpreter: pytest captures warnings and thread exceptions itself.
RAW_OUTPUT = """
import threading, warnings
from worker.util.logs import configure_logging
configure_logging()
warnings.warn("old API", UserWarning, stacklevel=1)
failing = threading.Thread(target=lambda: 1 / 0, name="doomed")
failing.start()
failing.join()
"""


def test_warnings_and_thread_crashes_become_log_records() -> None:
    done = subprocess.run([sys.executable, "-c", RAW_OUTPUT], capture_output=True, text=True,
                          timeout=60, check=True)
    lines = done.stderr.splitlines()
    assert any(" WARNING " in line and "UserWarning: old API" in line for line in lines)
    assert any(line.endswith("(py.warnings) [MainThread]") for line in lines)
    crash = [i for i, line in enumerate(lines)
             if " ERROR Uncaught exception in thread doomed" in line]
    assert crash and lines[crash[0]].startswith("[")
    assert "ZeroDivisionError: division by zero" in "\n".join(lines[crash[0]:])


class CountingClient:
    def __init__(self) -> None:
        self.polls = 0

    def poll(self, timeout: float = 0) -> int:
        self.polls += 1
        return 0


class NoPoll:
    pass


def test_the_pump_polls_watched_clients_while_they_live_and_forgets_broken_ones() -> None:
    # The conditions take the clients as arguments: a closure would keep them alive.
    client = watch_logs(CountingClient())
    wait_until(functools.partial(lambda c: c.polls >= 2, client), timeout=10, interval=0.05)
    broken = watch_logs(cast(Any, NoPoll()))  # dropped at its first poll; the pump goes on
    wait_until(functools.partial(lambda b: b not in logs._PUMP._clients, broken), timeout=10,
               interval=0.05)
    polls = client.polls
    wait_until(functools.partial(lambda c: c.polls > polls + 1, client), timeout=10,
               interval=0.05)
    del client, broken
    # With nothing left to poll the pump's thread ends (and starts again when needed).
    wait_until(lambda: logs._PUMP._thread is None, timeout=10, interval=0.05)


def test_an_admin_client_nobody_polls_hands_its_librdkafka_lines_to_its_logger() -> None:
    seen: list[logging.LogRecord] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record)

    logger = logging.getLogger("tests.util.logs.librdkafka")
    handler = Collect()
    logger.addHandler(handler)
    try:
        conf: dict[str, Any] = {"bootstrap.servers": f"127.0.0.1:{free_port()}",
                                "logger": logger}
        admin = watch_logs(AdminClient(conf))
        with pytest.raises(Exception):  # noqa: B017, PT011 - nothing listens there
            admin.list_topics(timeout=0.5)
        wait_until(lambda: any("Connection refused" in r.getMessage() for r in seen))
    finally:
        logger.removeHandler(handler)
    assert seen[0].name == "tests.util.logs.librdkafka"
    assert seen[0].getMessage().startswith("FAIL [rdkafka#producer-")
