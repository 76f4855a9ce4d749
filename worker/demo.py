"""``python -m worker.demo``: a broker, a worker and a FileStream pipeline you can watch
(the worker-only demo; ``make demo`` tells the whole story with Airflow and Spark:
``dags/demo``).

Starts the embedded Tansu broker, a ``connect-standalone`` worker subprocess with its state
in SQLite, and two connectors created over the REST API::

    input.txt --FileStreamSource--> topic demo-lines --FileStreamSink--> output.txt

then appends a numbered line to ``input.txt`` every second and prints each line as it
arrives in ``output.txt``, with the connector states. Ctrl-C (or ``--duration``) stops the
worker (SIGTERM), then the broker. Everything lives in ``.demo-worker/`` (``--dir``), whose
files of this demo are wiped at start: the broker keeps its data in memory, so state from a
previous run would point at topics that no longer exist. Not ``.demo/``: that is
``make demo``'s, which wipes it whole, and whose worker state this demo's would replace.

Usage: ``python -m worker.demo [--duration SECONDS] [--dir DIR] [--interval SECONDS]``.
"""

from __future__ import annotations

import argparse
import shutil
import signal
import sys
import time
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from types import FrameType
from typing import Any

import httpx

from worker.testing import (
    EmbeddedBroker,
    WorkerProcess,
    WorkerStartError,
    free_port,
    write_properties,
)

TOPIC = "demo-lines"
SOURCE = "demo-source"
SINK = "demo-sink"
STRING_CONVERTER = "org.apache.kafka.connect.storage.StringConverter"
#: Not make demo's ``.demo``: each demo wipes its own directory's state at start.
DEFAULT_DIR = Path(".demo-worker")

WORKER_START_TIMEOUT_S = 60.0
CONNECTOR_START_TIMEOUT_S = 60.0
WORKER_STOP_TIMEOUT_S = 30.0
#: After --duration, how long to wait for the last written lines to reach output.txt.
DRAIN_TIMEOUT_S = 30.0
#: Connector states are fetched at most this often while lines stream by.
STATUS_REFRESH_S = 1.0


class DemoError(RuntimeError):
    """The demo could not set itself up; the message says what to look at."""


def _say(text: str = "") -> None:
    print(text, flush=True)


def _raise_interrupt(signum: int, frame: FrameType | None) -> None:
    # SIGTERM (e.g. from a test harness) stops the demo as cleanly as Ctrl-C does.
    raise KeyboardInterrupt


class Demo:
    """One run of the demo; :meth:`run` returns the process exit code."""

    def __init__(self, directory: Path, interval: float = 1.0) -> None:
        self.dir = directory.resolve()
        self.interval = interval
        self.input = self.dir / "input.txt"
        self.output = self.dir / "output.txt"
        self.logs = self.dir / "logs"
        self.props = self.dir / "worker.properties"
        self.worker_log = self.logs / "worker.log"
        self.broker: EmbeddedBroker | None = None
        self.worker: WorkerProcess | None = None
        self.url = ""
        self.written: list[str] = []
        self.arrived: list[str] = []
        self._read_pos = 0
        self._partial = b""
        self._status_text = ""
        self._status_at = 0.0

    # ------------------------------------------------------------------ main flow

    def run(self, duration: float | None) -> int:
        """Set up, stream lines until Ctrl-C/SIGTERM or ``duration``, tear down."""
        previous = signal.signal(signal.SIGTERM, _raise_interrupt)
        code = 0
        try:
            self._prepare_dir()
            self._start_broker()
            self._start_worker()
            with httpx.Client(base_url=self.url, timeout=10.0) as client:
                self._create_connectors(client)
                self._print_instructions(duration)
                self._stream(client, duration)
                if duration is not None:
                    code = self._drain(client)
        except KeyboardInterrupt:
            _say("\nInterrupted.")
        except DemoError as exc:
            _say(f"\nDemo failed: {exc}")
            code = 1
        finally:
            # Shutdown is bounded; a second Ctrl-C must not leave processes behind.
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            try:
                self._shutdown()
            finally:
                signal.signal(signal.SIGINT, signal.default_int_handler)
                signal.signal(signal.SIGTERM, previous)
        return code

    def _prepare_dir(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        for path in (self.input, self.output, self.props, self.dir / "connect.db"):
            path.unlink(missing_ok=True)
        shutil.rmtree(self.logs, ignore_errors=True)
        self.logs.mkdir()
        self.input.touch()
        self.output.touch()
        _say(f"Demo directory: {self.dir} (wiped)")

    def _start_broker(self) -> None:
        _say("Starting the embedded Kafka-compatible broker (Tansu, memory storage)...")
        self.broker = EmbeddedBroker(log_dir=self.logs)
        try:
            self.broker.start()
        except Exception as exc:
            raise DemoError(f"the broker did not start: {exc}") from exc
        _say(f"  broker at {self.broker.bootstrap_servers}")
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": self.broker.bootstrap_servers})
        futures = admin.create_topics([NewTopic(TOPIC, 1, 1)], request_timeout=15)
        try:
            futures[TOPIC].result(timeout=20)
        except Exception as exc:
            raise DemoError(f"could not create topic {TOPIC!r}: {exc}") from exc
        _say(f"  created topic {TOPIC!r}")

    def _start_worker(self) -> None:
        assert self.broker is not None
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        write_properties(self.props, {
            "bootstrap.servers": self.broker.bootstrap_servers,
            "listeners": self.url,
            "storage.sql.url": f"sqlite:///{self.dir / 'connect.db'}",
            "key.converter": STRING_CONVERTER,
            "value.converter": STRING_CONVERTER,
            "offset.flush.interval.ms": 1000,
            # A group join on Tansu waits half the session timeout.
            "consumer.session.timeout.ms": 6000,
        })
        # Own session: Ctrl-C reaches only the demo, which then stops the worker first.
        self.worker = WorkerProcess(self.props, url=self.url, log_path=self.worker_log,
                                    startup_timeout=WORKER_START_TIMEOUT_S,
                                    stop_timeout=WORKER_STOP_TIMEOUT_S, new_session=True)
        _say(f"Starting the worker: {' '.join(self.worker.command)}")
        try:
            self.worker.start()
        except WorkerStartError as exc:
            raise DemoError(str(exc)) from exc
        _say(f"  worker REST API at {self.url}")

    def _create_connectors(self, client: httpx.Client) -> None:
        connectors = {
            SOURCE: {
                "connector.class": "FileStreamSource",
                "tasks.max": "1",
                "file": str(self.input),
                "topic": TOPIC,
            },
            SINK: {
                "connector.class": "FileStreamSink",
                "tasks.max": "1",
                "file": str(self.output),
                "topics": TOPIC,
            },
        }
        for name, config in connectors.items():
            _say(f"POST {self.url}/connectors  {name}: {config}")
            response = client.post("/connectors", json={"name": name, "config": config})
            if response.status_code != 201:
                raise DemoError(
                    f"creating {name} returned HTTP {response.status_code}: {response.text}"
                )
        deadline = time.monotonic() + CONNECTOR_START_TIMEOUT_S
        while True:
            statuses = self._statuses(client)
            states = [self._states(statuses.get(name)) for name in (SOURCE, SINK)]
            if all(s == ("RUNNING", ["RUNNING"]) for s in states):
                break
            failed = [
                name
                for name, (conn, tasks) in zip((SOURCE, SINK), states, strict=True)
                if conn == "FAILED" or "FAILED" in tasks
            ]
            if failed or time.monotonic() >= deadline:
                raise DemoError(
                    f"connectors not RUNNING ({', '.join(failed) or 'timed out'}): {statuses}; "
                    f"see {self.worker_log}"
                )
            time.sleep(0.5)
        _say(f"  both connectors RUNNING: {self._status_line(client, force=True)}")

    def _print_instructions(self, duration: float | None) -> None:
        until = f"for {duration:g}s" if duration is not None else "until you press Ctrl-C"
        _say()
        _say(f"Appending a numbered line to {self.input} every {self.interval:g}s {until}.")
        _say(f"Each line travels: input.txt -> {SOURCE} -> topic {TOPIC} -> {SINK} -> output.txt")
        _say("Meanwhile, in another terminal, try:")
        _say(f"  echo 'hello from me' >> {self.input}")
        _say(f"  curl -s '{self.url}/connectors?expand=status'")
        _say(f"  curl -s -X PUT {self.url}/connectors/{SINK}/pause   (and .../resume)")
        _say(f"  tail -f {self.output}")
        _say("Press Ctrl-C to stop.")
        _say()

    def _stream(self, client: httpx.Client, duration: float | None) -> None:
        start = time.monotonic()
        end = None if duration is None else start + duration
        next_write = start
        while end is None or time.monotonic() < end:
            now = time.monotonic()
            if now >= next_write:
                line = f"line {len(self.written) + 1} written at {datetime.now():%H:%M:%S}"
                with open(self.input, "a", encoding="utf-8") as fh:
                    fh.write(line + "\n")
                self.written.append(line)
                _say(f"  wrote   > {line}")
                next_write += self.interval
            self._report_arrivals(client)
            time.sleep(max(0.0, min(0.2, next_write - time.monotonic())))

    def _drain(self, client: httpx.Client) -> int:
        """Wait (bounded) for every written line to arrive; 0 if they all did."""
        _say(f"\nStopped writing; waiting up to {DRAIN_TIMEOUT_S:.0f}s for the last lines...")
        deadline = time.monotonic() + DRAIN_TIMEOUT_S
        missing = self._missing()
        while missing and time.monotonic() < deadline:
            time.sleep(0.2)
            self._report_arrivals(client)
            missing = self._missing()
        _say(f"{len(self.written)} lines written, {len(self.arrived)} arrived in output.txt.")
        if missing:
            _say(f"Missing {len(missing)} lines, e.g. {missing[:3]}")
            return 1
        return 0

    def _shutdown(self) -> None:
        _say("\nStopping the worker (SIGTERM) and the broker...")
        if self.worker is not None:
            _say(f"  worker exited with code {self.worker.stop()}")
        if self.broker is not None:
            self.broker.stop()
            _say("  broker stopped")
        _say()
        _say("Files of this run:")
        _say(f"  input:             {self.input}")
        _say(f"  output:            {self.output}")
        _say(f"  worker properties: {self.props}")
        _say(f"  worker state:      {self.dir / 'connect.db'}")
        _say(f"  logs:              {self.logs}/ (worker.log, tansu.log)")

    # ------------------------------------------------------------------ helpers

    def _missing(self) -> list[str]:
        arrived = set(self.arrived)
        return [line for line in self.written if line not in arrived]

    def _report_arrivals(self, client: httpx.Client) -> None:
        for line in self._new_output_lines():
            self.arrived.append(line)
            _say(f"  arrived < {line}   [{self._status_line(client)}]")

    def _new_output_lines(self) -> list[str]:
        """Complete lines appended to output.txt since the last call."""
        try:
            with open(self.output, "rb") as fh:
                fh.seek(self._read_pos)
                chunk = fh.read()
        except FileNotFoundError:
            return []
        self._read_pos += len(chunk)
        data = self._partial + chunk
        *lines, self._partial = data.split(b"\n")
        return [raw.decode("utf-8", errors="replace").rstrip("\r") for raw in lines]

    def _statuses(self, client: httpx.Client) -> dict[str, Any]:
        response = client.get("/connectors", params={"expand": "status"})
        response.raise_for_status()
        return {name: info.get("status", {}) for name, info in response.json().items()}

    @staticmethod
    def _states(status: dict[str, Any] | None) -> tuple[str, list[str]]:
        if not status:
            return "MISSING", []
        tasks = [t.get("state", "?") for t in status.get("tasks", [])]
        return status.get("connector", {}).get("state", "?"), tasks

    def _status_line(self, client: httpx.Client, force: bool = False) -> str:
        now = time.monotonic()
        if force or now - self._status_at >= STATUS_REFRESH_S:
            self._status_at = now
            try:
                statuses = self._statuses(client)
            except (httpx.HTTPError, ValueError) as exc:
                self._status_text = f"status unavailable: {type(exc).__name__}"
            else:
                parts = []
                for name in (SOURCE, SINK):
                    conn, tasks = self._states(statuses.get(name))
                    parts.append(f"{name} {conn}, tasks {'/'.join(tasks) or '-'}")
                self._status_text = "; ".join(parts)
        return self._status_text


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Command-line arguments of ``python -m worker.demo``."""
    parser = argparse.ArgumentParser(
        prog="python -m worker.demo",
        description="Embedded broker + standalone worker + FileStream source and sink.",
    )
    parser.add_argument(
        "--duration", type=float, default=None,
        help="stop after this many seconds of writing (default: run until Ctrl-C); the exit "
        "code is then 1 if a written line did not reach the output file",
    )
    parser.add_argument("--dir", type=Path, default=DEFAULT_DIR,
                        help=f"directory for files, state and logs (default: {DEFAULT_DIR}; "
                        "make demo's .demo is its own)")
    parser.add_argument("--interval", type=float, default=1.0,
                        help="seconds between two written lines (default: 1)")
    args = parser.parse_args(argv)
    if args.duration is not None and args.duration <= 0:
        parser.error("--duration must be positive")
    if args.interval <= 0:
        parser.error("--interval must be positive")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m worker.demo``."""
    args = parse_args(argv)
    return Demo(args.dir, interval=args.interval).run(args.duration)


if __name__ == "__main__":
    sys.exit(main())
