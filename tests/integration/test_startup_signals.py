"""SIGINT/SIGTERM are honoured at every moment of a worker's start-up (issue #42): sent
just after each start-up step announces itself in the log, the signal stops the worker
cleanly — exit code 130 (128 + SIGINT) while starting, 143 for SIGTERM, 0 once started (a
late step may finish before the signal lands) — with no traceback, every line in the
worker's format, no ERROR, and a last line saying it stopped (worker/cli/base.py)."""

from __future__ import annotations

import os
import re
import signal
from collections.abc import Sequence
from pathlib import Path

import pytest

from tests.conftest import DISTRIBUTED_TEST_PROPS, StandaloneWorkerFactory
from tests.integration._cluster_helpers import generator_config
from tests.support import WorkerProcess, unique_name, wait_until, write_properties
from worker.testing import DISTRIBUTED_MODULE, free_port
from worker.util.logs import STARTUP_CLIENTS

#: A line as the worker writes it (worker.util.logs.LOG_FORMAT).
LINE = re.compile(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\] (DEBUG|INFO|WARNING|ERROR|CRITICAL) "
                  r".* \([\w.]+\) \[[\w-]+\]$")


def worker_lines(worker: WorkerProcess) -> list[str]:
    # WorkerProcess writes one "=== start #n" line of its own before each start.
    return [line for line in worker.log_tail(100_000).splitlines()
            if not line.startswith("=== start #")]


def interrupt_after(worker: WorkerProcess, marker: str, signum: int = signal.SIGINT
                    ) -> tuple[int, list[str]]:
    """Launch the worker, send ``signum`` as soon as ``marker`` is in its log, and wait
    for it to exit; its exit code and log lines."""
    worker.launch()
    wait_until(lambda: any(marker in line for line in worker_lines(worker)) or
               not worker.is_running, timeout=60, interval=0.02,
               message=lambda: f"{marker!r} in the log:\n{worker.log_tail()}")
    assert worker.is_running, f"exited before {marker!r}:\n{worker.log_tail()}"
    pid = worker.pid
    assert pid is not None
    os.kill(pid, signum)
    wait_until(lambda: not worker.is_running, timeout=60, interval=0.05,
               message=lambda: f"the worker to exit after {signum}:\n{worker.log_tail()}")
    code = worker.returncode
    assert code is not None
    return code, worker_lines(worker)


def assert_clean(code: int, lines: Sequence[str], allowed: Sequence[int], *,
                 unreachable_kafka: bool = False) -> None:
    text = "\n".join(lines)
    assert code in allowed, text
    assert "Traceback" not in text and "KeyboardInterrupt" not in text, text
    assert [line for line in lines if not LINE.match(line)] == [], text
    # Only librdkafka's own lines about a broker that is not there may be errors.
    errors = [line for line in lines if " ERROR " in line and not (
        unreachable_kafka and line.endswith(f"({STARTUP_CLIENTS}) [startup]"))]
    assert errors == [], text
    assert "Worker stopped" in lines[-1], text


def connector_file(directory: Path, topic: str) -> Path:
    return write_properties(directory / "generator.properties",
                            {"name": unique_name("gen"), **generator_config(topic, 1)})


# The steps of a standalone start-up, each with the line that announces it; a signal sent
# right after that line arrives while the next step runs.
STANDALONE_POINTS = [
    "File descriptor limit",  # the worker's modules are being imported
    "Loading plugin from",  # plugin discovery
    "This worker holds the state database",  # the Kafka cluster id, the stores, the REST app
    "Standalone herder started",  # the REST server starting
    "REST server listening",  # the command-line connector being created
    "Worker started",  # running: a plain stop
]


@pytest.mark.integration
@pytest.mark.parametrize("marker", STANDALONE_POINTS)
def test_sigint_at_each_standalone_start_up_step_stops_cleanly(
        standalone_worker: StandaloneWorkerFactory, tmp_path: Path, marker: str) -> None:
    worker = standalone_worker(connector_files=[connector_file(tmp_path, unique_name("sig"))],
                               start=False)
    code, lines = interrupt_after(worker, marker)
    # A late step may end before the signal arrives: the worker then has started (0).
    assert_clean(code, lines, (130, 0) if marker != "Worker started" else (0,))
    text = "\n".join(lines)
    if code == 130:
        assert "INFO Received SIGINT during start-up; stopping" in text
        assert "Worker stopped before it finished starting" in lines[-1]
    else:
        assert "INFO Received SIGINT; stopping (worker.cli.standalone)" in text


@pytest.mark.integration
@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_while_waiting_for_kafka_ends_the_wait_at_once(
        standalone_worker: StandaloneWorkerFactory, signum: int, code: int) -> None:
    # Nothing listens there: without the signal the worker would wait 30 s for Kafka.
    worker = standalone_worker({"bootstrap.servers": f"127.0.0.1:{free_port()}"}, start=False)
    exit_code, lines = interrupt_after(worker, "Waiting up to", signum)
    assert_clean(exit_code, lines, (code,), unreachable_kafka=True)
    stopping = next(i for i, line in enumerate(lines) if "during start-up; stopping" in line)
    # Within a step of the wait (1 s), not at the end of its 30 s.
    assert timestamp(lines[-1]) - timestamp(lines[stopping]) < 3.0


def timestamp(line: str) -> float:
    hms = line[12:24]  # "[YYYY-MM-DD HH:MM:SS,mmm]"
    hours, minutes, seconds = hms.replace(",", ".").split(":")
    return int(hours) * 3600 + int(minutes) * 60 + float(seconds)


DISTRIBUTED_POINTS = [
    "Loading plugin from",  # plugin discovery
    "for connector configurations",  # the internal topics being created and read
    "Distributed herder started",  # joining the group, the REST server starting
]


@pytest.mark.integration
@pytest.mark.parametrize("marker", DISTRIBUTED_POINTS)
def test_sigint_at_distributed_start_up_steps_stops_cleanly(
        kafka_bootstrap: str, tmp_path: Path, marker: str) -> None:
    group = unique_name("signals")
    port = free_port()
    props = write_properties(tmp_path / "worker.properties", {
        "bootstrap.servers": kafka_bootstrap, "listeners": f"http://127.0.0.1:{port}",
        "group.id": group, "config.storage.topic": f"{group}-configs",
        "offset.storage.topic": f"{group}-offsets", "status.storage.topic": f"{group}-status",
        **DISTRIBUTED_TEST_PROPS})
    worker = WorkerProcess(props, url=f"http://127.0.0.1:{port}",
                           log_path=tmp_path / "worker.log", module=DISTRIBUTED_MODULE)
    try:
        code, lines = interrupt_after(worker, marker)
    finally:
        worker.close()
    assert_clean(code, lines, (130, 0))
    assert any("INFO Received SIGINT" in line and "(worker.cli.distributed)" in line
               for line in lines)
