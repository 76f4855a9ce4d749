"""``connect-plane broker``: the embedded test broker in the foreground, as a user runs it.

The command runs as a subprocess (``python -m worker.cli.plane``, what the console script
calls) on a free port; a record goes through it with confluent-kafka at the
``bootstrap.servers=`` line it prints; SIGINT (Ctrl-C) and SIGTERM stop it with no
traceback and no Tansu process left behind, with exit code 0 once it serves and 128 + the
signal's number when the signal comes during its start-up.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from tests.support import create_topic, unique_name, wait_until
from worker.testing import free_port

pytestmark = pytest.mark.integration

START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 20.0
REPO = Path(__file__).resolve().parents[2]


@contextlib.contextmanager
def _command(port: int, *args: str) -> Iterator[subprocess.Popen[str]]:
    """The command on ``port`` as a subprocess. A failed test may leave it running: it is
    then stopped, and a Tansu it started is killed (the broker runs in a session of its
    own, so killing the command alone would leave it behind)."""
    proc = subprocess.Popen([sys.executable, "-m", "worker.cli.plane", "broker",
                             "--port", str(port), *args],
                            cwd=REPO, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.communicate(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate(timeout=STOP_TIMEOUT_S)
        for pid in _tansu_pids(port):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def _read_until_bootstrap(proc: subprocess.Popen[str]) -> tuple[str, list[str]]:
    """The lines the command printed up to its ``bootstrap.servers=`` line (bounded).

    Read from the pipe's descriptor: a buffered readline() would take in lines the
    selector then never reports."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    data = b""
    deadline = time.monotonic() + START_TIMEOUT_S
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while time.monotonic() < deadline:
            if not selector.select(timeout=max(0.0, deadline - time.monotonic())):
                break
            chunk = os.read(fd, 65536)
            if not chunk:
                break  # the command exited
            data += chunk
            lines = data.decode().split("\n")
            for line in lines[:-1]:
                if line.startswith("bootstrap.servers="):
                    return line.split("=", 1)[1].strip(), lines[:-1]
    raise AssertionError(f"no bootstrap.servers line within {START_TIMEOUT_S:g} s; "
                         f"stdout {data!r}")


def _tansu_pids(port: int) -> list[int]:
    """Processes whose command line listens on ``port`` (the Tansu the command started)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state != "Z" and f"tcp://127.0.0.1:{port}".encode() in cmdline:
            pids.append(int(entry.name))
    return pids


def _stop(proc: subprocess.Popen[str], signum: int) -> tuple[int, str, str]:
    proc.send_signal(signum)
    try:
        out, err = proc.communicate(timeout=STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"still running {STOP_TIMEOUT_S:g} s after {signum}") from None
    return proc.returncode, out, err


def test_a_record_goes_through_the_printed_bootstrap_and_ctrl_c_stops_it(
        tmp_path: Path) -> None:
    port = free_port()
    with _command(port, "--log-dir", str(tmp_path)) as proc:
        bootstrap, printed = _read_until_bootstrap(proc)
        assert bootstrap == f"127.0.0.1:{port}"
        assert any("memory storage" in line for line in printed), printed
        assert "Put this line in worker.properties:" in printed

        topic = unique_name("broker-command")
        create_topic(AdminClient({"bootstrap.servers": bootstrap}), topic)
        producer = Producer({"bootstrap.servers": bootstrap})
        producer.produce(topic, key=b"k", value=b"through connect-plane broker")
        assert producer.flush(15) == 0
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": topic,
                             "enable.auto.commit": False})
        try:
            consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
            message = wait_until(lambda: consumer.poll(0.5), timeout=20,
                                 message="the record back from the broker")
        finally:
            consumer.close()
        assert message.error() is None
        assert (message.key(), message.value()) == (b"k", b"through connect-plane broker")
        assert _tansu_pids(port), "the broker process should be running"

        code, out, err = _stop(proc, signal.SIGINT)
        # Inside the block: its clean-up kills what a failed test leaves behind.
        assert wait_until(lambda: not _tansu_pids(port), timeout=10,
                          message="no Tansu process left")

    assert code == 0, err
    assert "Traceback" not in err and "Traceback" not in out
    assert out.rstrip().endswith("Broker stopped.")
    assert (tmp_path / "tansu.log").exists(), "--log-dir keeps the broker's log"


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_during_start_up_stops_it_cleanly(signum: int) -> None:
    port = free_port()
    with _command(port) as proc:
        # As soon as Tansu is spawned: the command is then waiting for it to answer (or
        # has just said that it does; either way the stop must be clean).
        wait_until(lambda: _tansu_pids(port) or proc.poll() is not None, timeout=30,
                   interval=0.02, message="the broker process to be spawned")
        code, out, err = _stop(proc, signum)
        assert wait_until(lambda: not _tansu_pids(port), timeout=10,
                          message="no Tansu process left")

    assert "Traceback" not in err and "Traceback" not in out
    if "Broker stopped (the signal came during its start-up)." in out:
        assert code == 128 + signum, err  # as the workers exit on a signal during start-up
        assert "bootstrap.servers=" not in out
    else:  # the broker had answered already: a stop like any other
        assert code == 0 and out.rstrip().endswith("Broker stopped."), (code, out, err)
