"""A Spark standalone cluster (one master, one worker) on loopback, from the pyspark wheel.

The tests and the demo run ``SparkSubmitOperator`` in local mode by default; this harness
lets them run the same job against a real ``spark://`` master instead, to show that the
pipeline's output does not depend on where Spark runs. No Spark distribution can be
downloaded here, so ``SPARK_HOME`` is the installed ``pyspark`` package (it ships
``bin/spark-class`` and ``jars/``). Both daemons are plain subprocesses with their logs
in the given directory, so a failure can always be explained from a file.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import IO, Any

# Light JVMs: the machines running this are small and shared; C1 only and the serial
# collector start faster and use less memory than the defaults, which is all a test needs.
# (The heap goes in SPARK_DAEMON_MEMORY: the launcher refuses -Xmx in the options.)
DAEMON_JAVA_OPTS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
STOP_TIMEOUT = 15.0
POLL_INTERVAL = 0.5


class SparkStandaloneError(RuntimeError):
    """The cluster did not start (or answer) in time; the message names the log file."""


def spark_home() -> Path:
    """The pyspark package directory, which serves as ``SPARK_HOME``."""
    import pyspark

    return Path(pyspark.__file__).parent


def free_port() -> int:
    """A free loopback port (the OS picks it; a tiny race until the daemon binds it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def log_tail(path: Path, lines: int = 30) -> str:
    """The last ``lines`` lines of a log file, for error messages."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        return f"(cannot read {path}: {exc})"
    return "\n".join(text.splitlines()[-lines:])


class SparkStandalone:
    """A master and one worker (1 core, 1 GiB) started from ``spark-class``.

    ``start()`` returns the master URL once the master reports the worker ALIVE;
    ``applications()`` lists the applications the master knows with their state.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self._master_port = 0
        self._ui_port = 0
        self._processes: list[tuple[subprocess.Popen[bytes], Path]] = []
        self._logs: list[IO[bytes]] = []

    @property
    def master_url(self) -> str:
        """``spark://127.0.0.1:P`` — what ``spark-submit --master`` takes."""
        self._require_started()
        return f"spark://127.0.0.1:{self._master_port}"

    @property
    def ui_url(self) -> str:
        """The master's web UI, ``http://127.0.0.1:Q`` (its ``/json/`` is the cluster state)."""
        self._require_started()
        return f"http://127.0.0.1:{self._ui_port}"

    def start(self, timeout: float = 120) -> str:
        """Start master and worker; wait until the master lists one ALIVE worker."""
        if self._processes:
            raise SparkStandaloneError("already started")
        self.directory.mkdir(parents=True, exist_ok=True)
        self._master_port, self._ui_port = free_port(), free_port()
        try:
            self._spawn("master", ["org.apache.spark.deploy.master.Master",
                                   "--host", "127.0.0.1", "--port", str(self._master_port),
                                   "--webui-port", str(self._ui_port)])
            work_dir = self.directory / "work"
            work_dir.mkdir(exist_ok=True)
            self._spawn("worker", ["org.apache.spark.deploy.worker.Worker", self.master_url,
                                   "--host", "127.0.0.1", "--cores", "1", "--memory", "1g",
                                   "--work-dir", str(work_dir),
                                   "--webui-port", str(free_port())])
            self._wait_for_worker(timeout)
        except BaseException:
            self.stop()
            raise
        return self.master_url

    def applications(self) -> list[dict[str, Any]]:
        """Active and completed applications from the master's ``/json/`` (each with its
        ``state``, e.g. RUNNING or FINISHED; ``section`` says which list it came from)."""
        state = self._cluster_state()
        return ([{**app, "section": "activeapps"} for app in state.get("activeapps", [])]
                + [{**app, "section": "completedapps"}
                   for app in state.get("completedapps", [])])

    def stop(self) -> None:
        """Stop both daemons, bounded: terminate (worker first), then kill what lingers."""
        for process, _ in reversed(self._processes):
            if process.poll() is None:
                process.terminate()
        for process, _ in reversed(self._processes):
            try:
                process.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=STOP_TIMEOUT)
        for handle in self._logs:
            handle.close()
        self._processes.clear()
        self._logs.clear()

    def __enter__(self) -> SparkStandalone:
        if not self._processes:
            self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    # --- internals ---------------------------------------------------------------------

    def _require_started(self) -> None:
        if not self._master_port:
            raise SparkStandaloneError("the cluster has not been started")

    def _environment(self) -> dict[str, str]:
        """SPARK_HOME is the pyspark package; everything binds to loopback; light JVMs.
        ``SPARK_NO_DAEMONIZE`` keeps launch scripts in the foreground, so each
        ``Popen`` is the JVM we stop."""
        home = str(spark_home())
        env = dict(os.environ)
        env.update({"SPARK_HOME": home, "SPARK_LOCAL_IP": "127.0.0.1",
                    "SPARK_NO_DAEMONIZE": "1",
                    "SPARK_LOG_DIR": str(self.directory),
                    "SPARK_DAEMON_JAVA_OPTS": DAEMON_JAVA_OPTS,
                    "SPARK_DAEMON_MEMORY": "256m"})
        env.pop("SPARK_CONF_DIR", None)
        return env

    def _spawn(self, name: str, args: list[str]) -> None:
        log = self.directory / f"{name}.log"
        handle = log.open("wb")
        self._logs.append(handle)
        command = [str(spark_home() / "bin" / "spark-class"), *args]
        process = subprocess.Popen(command, stdout=handle, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, env=self._environment(),
                                   cwd=self.directory)
        self._processes.append((process, log))

    def _cluster_state(self, timeout: float = 10) -> dict[str, Any]:
        with urllib.request.urlopen(f"{self.ui_url}/json/", timeout=timeout) as response:
            state: dict[str, Any] = json.load(response)
        return state

    def _alive_workers(self) -> int:
        """ALIVE workers per the master, 0 while its UI does not answer yet."""
        try:
            workers = self._cluster_state(timeout=5).get("workers", [])
        except (urllib.error.URLError, OSError, ValueError):
            return 0
        return sum(1 for worker in workers if worker.get("state") == "ALIVE")

    def _wait_for_worker(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._raise_if_exited()
            if self._alive_workers() >= 1:
                return
            time.sleep(POLL_INTERVAL)  # poll interval of a bounded wait on a condition
        _, log = self._processes[-1]
        raise SparkStandaloneError(
            f"no ALIVE worker at {self.ui_url}/json/ within {timeout:.0f} s; "
            f"{log} ends with:\n{log_tail(log)}")

    def _raise_if_exited(self) -> None:
        for process, log in self._processes:
            code = process.poll()
            if code is not None:
                raise SparkStandaloneError(
                    f"{log.stem} exited with {code}; {log} ends with:\n{log_tail(log)}")
