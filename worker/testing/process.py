"""Run a connect-plane worker as a real subprocess, the way users run it.

``WorkerProcess`` starts ``python -m worker.cli.standalone worker.properties
[connector files...]`` (the ``connect-standalone`` console script), sends its output to
a log file, and waits until the REST API answers ``GET /`` with 200. It can stop the
worker gracefully (SIGTERM), crash it (SIGKILL) and restart it on the same port with the
same properties, which is what durability tests need.

Properties files are written by :func:`write_properties`; the ``standalone_worker``
fixture in ``tests/conftest.py`` and the demos build their worker properties with it.
"""

from __future__ import annotations

import os
import resource
import ssl
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO

import httpx

from worker.testing.processes import log_tail, terminate_process

__all__ = ["DISTRIBUTED_MODULE", "STANDALONE_MODULE", "WorkerProcess", "WorkerStartError",
           "write_properties"]

#: The modules behind the ``connect-standalone`` / ``connect-distributed`` console scripts.
STANDALONE_MODULE = "worker.cli.standalone"
DISTRIBUTED_MODULE = "worker.cli.distributed"


class WorkerStartError(RuntimeError):
    """The worker process exited or its REST API did not answer in time."""


def write_properties(path: Path, props: Mapping[str, object]) -> Path:
    """Write ``props`` as a Java ``.properties`` file (``key=value`` lines) to ``path``.

    Values are written with ``str()``; backslashes, newlines and leading spaces are
    escaped as ``java.util.Properties`` expects, so Windows-style paths and the like
    survive the round trip.
    """

    def escape(text: str, *, is_key: bool) -> str:
        out = text.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")
        out = out.replace("\t", "\\t")
        if is_key:
            for ch in "=: ":
                out = out.replace(ch, "\\" + ch)
        elif out.startswith(" "):
            out = "\\" + out
        return out

    lines = [
        f"{escape(str(key), is_key=True)}={escape(str(value), is_key=False)}"
        for key, value in props.items()
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


class WorkerProcess:
    """One ``connect-standalone`` worker subprocess.

    :param props_file: the worker properties file.
    :param connector_files: connector ``.properties``/``.json`` files passed after it.
    :param url: base URL of the REST listener configured in ``props_file``
        (e.g. ``http://127.0.0.1:8083``); used for readiness and :attr:`client`.
    :param log_path: file receiving the worker's stdout and stderr; appended to across
        restarts, with a marker line per start.
    :param startup_timeout: default bound for :meth:`start`.
    :param stop_timeout: how long :meth:`stop` waits after SIGTERM before SIGKILL.
    :param env: extra environment variables for the worker.
    :param cwd: working directory of the worker (default: the caller's).
    :param module: ``STANDALONE_MODULE`` or ``DISTRIBUTED_MODULE``.
    :param new_session: start the worker in its own session, so a Ctrl-C in the terminal
        reaches only the caller, which then stops the worker itself (the demos).
    :param ssl_context: TLS client context for an ``https`` URL (trust, and a client
        certificate if the worker requires one); used by :attr:`client` and readiness.
    :param nofile: run the worker with this ``RLIMIT_NOFILE`` (soft = hard), e.g. to see
        how it behaves when short of file descriptors.
    """

    def __init__(
        self,
        props_file: Path,
        connector_files: Sequence[Path] = (),
        *,
        url: str,
        log_path: Path,
        startup_timeout: float = 60.0,
        stop_timeout: float = 30.0,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        request_timeout: float = 30.0,
        module: str = STANDALONE_MODULE,
        new_session: bool = False,
        ssl_context: ssl.SSLContext | None = None,
        nofile: int | None = None,
    ) -> None:
        self.props_file = Path(props_file)
        self.connector_files = [Path(p) for p in connector_files]
        self.url = url.rstrip("/")
        self.log_path = Path(log_path)
        self.startup_timeout = startup_timeout
        self.stop_timeout = stop_timeout
        self.env = dict(env or {})
        self.cwd = cwd
        self.request_timeout = request_timeout
        self.module = module
        self.new_session = new_session
        self.ssl_context = ssl_context
        self.nofile = nofile
        self._proc: subprocess.Popen[bytes] | None = None
        self._log_file: IO[bytes] | None = None
        self._log_start = 0
        self._client: httpx.Client | None = None
        self.starts = 0

    # ------------------------------------------------------------------ properties

    @property
    def command(self) -> list[str]:
        """The command line used to start the worker."""
        return [
            sys.executable,
            "-m",
            self.module,
            str(self.props_file),
            *(str(p) for p in self.connector_files),
        ]

    @property
    def client(self) -> httpx.Client:
        """An ``httpx.Client`` with ``base_url=url``; it survives restarts."""
        if self._client is None:
            self._client = httpx.Client(base_url=self.url, timeout=self.request_timeout,
                                        verify=self._verify)
        return self._client

    @property
    def pid(self) -> int | None:
        """Process id while the worker runs, else ``None``."""
        return self._proc.pid if self._proc is not None and self.is_running else None

    @property
    def is_running(self) -> bool:
        """True while the worker process exists."""
        return self._proc is not None and self._proc.poll() is None

    @property
    def returncode(self) -> int | None:
        """Exit code of the last run (``None`` while running or before the first start)."""
        return None if self._proc is None else self._proc.poll()

    def log_tail(self, lines: int = 60) -> str:
        """The last ``lines`` lines the worker logged since its latest start."""
        if self._log_file is not None:
            self._log_file.flush()
        return log_tail(self.log_path, lines, start=self._log_start)

    # ------------------------------------------------------------------ lifecycle

    def start(self, timeout: float | None = None, *, healthy: bool = True) -> WorkerProcess:
        """Spawn the worker and wait until it is ready: ``GET /health`` answers 200 (KIP-1017:
        started, and the command-line connectors created). With ``healthy=False``, until
        the REST API answers at all (``/health`` may still say 503 "starting").

        Raises :class:`WorkerStartError` with the log tail if the process exits first or
        ``timeout`` (default ``startup_timeout``) passes; the process is stopped then.
        """
        self.launch()
        return self.wait_started(timeout, healthy=healthy)

    def launch(self) -> WorkerProcess:
        """Spawn the worker without waiting (several workers can then start together)."""
        if self.is_running:
            raise RuntimeError(f"worker {self.url} is already running (pid {self.pid})")
        self._close_log()
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log_file = open(self.log_path, "ab")  # noqa: SIM115 - closed in _close_log
        self._log_start = self._log_file.tell()
        self.starts += 1
        self._log_file.write(f"=== start #{self.starts}: {' '.join(self.command)}\n".encode())
        self._log_file.flush()
        env = {**os.environ, "PYTHONUNBUFFERED": "1", **self.env}
        self._proc = subprocess.Popen(
            self.command,
            stdin=subprocess.DEVNULL,
            stdout=self._log_file,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=self.cwd,
            start_new_session=self.new_session,
            preexec_fn=None if self.nofile is None else self._limit_nofile,
        )
        return self

    def _limit_nofile(self) -> None:
        # In the child, between fork and exec.
        assert self.nofile is not None
        resource.setrlimit(resource.RLIMIT_NOFILE, (self.nofile, self.nofile))

    def wait_started(self, timeout: float | None = None, *, healthy: bool = True
                     ) -> WorkerProcess:
        """Wait until a :meth:`launch`-ed worker is ready (see :meth:`start`)."""
        try:
            self._wait_ready(self.startup_timeout if timeout is None else timeout, healthy)
        except BaseException:
            self.kill()
            raise
        return self

    def stop(self, timeout: float | None = None) -> int | None:
        """Stop gracefully: SIGTERM, wait ``timeout`` (default ``stop_timeout``), SIGKILL.

        Idempotent. Returns the exit code (``None`` if it was never started).
        """
        if self._proc is None:
            return None
        code = terminate_process(self._proc, self.stop_timeout if timeout is None else timeout)
        self._close_log()
        return code

    def kill(self) -> int | None:
        """Crash the worker with SIGKILL (no shutdown hooks run) and reap it."""
        if self._proc is None:
            return None
        if self._proc.poll() is None:
            try:
                self._proc.kill()
            except ProcessLookupError:
                pass
        try:
            code: int | None = self._proc.wait(timeout=self.stop_timeout)
        except subprocess.TimeoutExpired:
            code = None
        self._close_log()
        return code

    def restart(self, timeout: float | None = None, *, graceful: bool = True) -> WorkerProcess:
        """Stop (SIGTERM, or SIGKILL if ``graceful`` is false) and start again.

        Same properties, connector files and port.
        """
        if graceful:
            self.stop()
        else:
            self.kill()
        return self.start(timeout)

    def close(self) -> None:
        """Stop the worker and close :attr:`client`. Used by fixture finalizers."""
        try:
            self.stop()
        finally:
            if self._client is not None:
                self._client.close()
                self._client = None

    def __enter__(self) -> WorkerProcess:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "running" if self.is_running else f"exited({self.returncode})"
        return f"<WorkerProcess {self.url} {state}>"

    # ------------------------------------------------------------------ internals

    @property
    def _verify(self) -> ssl.SSLContext | bool:
        return self.ssl_context if self.ssl_context is not None else True

    def _wait_ready(self, timeout: float, healthy: bool) -> None:
        deadline = time.monotonic() + timeout
        last: str = "no answer yet"
        # A separate short-timeout client: the readiness probe must not hang on a
        # half-started server for the whole request timeout.
        with httpx.Client(base_url=self.url, timeout=2.0, verify=self._verify) as probe:
            while True:
                assert self._proc is not None
                code = self._proc.poll()
                if code is not None:
                    raise WorkerStartError(
                        f"worker exited with code {code} before {self.url} answered; "
                        f"log {self.log_path}:\n{self.log_tail()}"
                    )
                try:
                    response = probe.get("/health")
                    if response.status_code == 200 or (not healthy
                                                       and response.status_code == 503):
                        return
                    last = f"HTTP {response.status_code}: {response.text[:200]}"
                except httpx.HTTPError as exc:
                    last = f"{type(exc).__name__}: {exc}"
                if time.monotonic() >= deadline:
                    raise WorkerStartError(
                        f"worker REST API {self.url} not ready after {timeout:.0f}s "
                        f"(last: {last}); log {self.log_path}:\n{self.log_tail()}"
                    )
                time.sleep(0.2)

    def _close_log(self) -> None:
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None
