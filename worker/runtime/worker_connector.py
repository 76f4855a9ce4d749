"""WorkerConnector: one connector instance, driven from its own thread.

All calls into connector code (start, stop, task_configs) run on this thread, so connector
code that hangs blocks only its own thread: callers get futures and wait a bounded time.

The thread exists only while there is something to do: a command starts it, and it ends
once the queue is empty. A connector that is idle — RUNNING with nothing asked of it,
PAUSED, STOPPED — holds no thread, so a worker with hundreds of connectors does not keep
hundreds of threads waiting; commands still run one at a time, in order.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from typing import Any

from worker.api.connector import Connector, ConnectorContext, SourceConnectorContext
from worker.api.task import OffsetStorageReader
from worker.runtime.status import StatusReporter
from worker.storage.base import State, TargetState
from worker.util.secrets import KNOWN_SECRETS
from worker.util.threads import name_native_thread

log = logging.getLogger(__name__)


class _Context(SourceConnectorContext):
    def __init__(self, owner: WorkerConnector, reader: OffsetStorageReader | None) -> None:
        self._owner = owner
        self._reader = reader

    def request_task_reconfiguration(self) -> None:
        self._owner.on_reconfiguration_request(self._owner.name)

    def raise_error(self, error: BaseException) -> None:
        self._owner.fail(error)

    @property
    def offset_storage_reader(self) -> OffsetStorageReader:
        if self._reader is None:
            raise AttributeError("Sink connectors have no offset storage reader")
        return self._reader


def _as_written(config: Mapping[str, str]) -> dict[str, str]:
    return dict(config)


def _remember_secrets(connector: Connector, config: Mapping[str, str]) -> None:
    """The values of the connector's PASSWORD-typed keys, so that logs and status traces
    never show them (keys secret by name were remembered as the config resolved)."""
    try:
        definition = connector.config()
    except Exception:  # noqa: BLE001 - plugin code; validation reports a broken config()
        return
    KNOWN_SECRETS.add_config(config, {k.name: k.type for k in definition.keys.values()})


class WorkerConnector:
    """States: created → RUNNING | PAUSED | STOPPED | FAILED; ``shutdown`` ends the thread.

    ``config`` is the connector config as stored (``${provider:...}`` placeholders as
    written); ``resolve`` turns it into what ``Connector.start`` gets, on the connector's
    thread at each start, so a start (also after a resume) sees the providers' current
    values. A placeholder that does not resolve fails the connector with an error naming it.
    """

    def __init__(self, name: str, factory: Callable[[], Connector], config: dict[str, str],
                 target_state: TargetState, status: StatusReporter,
                 offset_reader: Callable[[Connector], OffsetStorageReader | None],
                 on_reconfiguration_request: Callable[[str], None],
                 resolve: Callable[[Mapping[str, str]], dict[str, str]] = _as_written,
                 on_startup: Callable[[bool], None] | None = None) -> None:
        self.name = name
        self._resolve = resolve
        self.connector: Connector | None = None  # created on the connector's own thread
        self._factory = factory
        self._offset_reader = offset_reader
        self.config = config
        self.target_state = target_state
        self.status = status
        self.on_reconfiguration_request = on_reconfiguration_request
        self.state = State.UNASSIGNED
        # /metrics: told once whether the connector started (RUNNING) or failed first
        # (connector-startup-*), and the version the connector reports.
        self._on_startup = on_startup
        self._startup_reported = False
        self.version = "unknown"
        self._started = False  # connector.start() returned and stop() not yet called
        self._commands: deque[tuple[str, Any, Future[Any] | None]] = deque()
        self._lock = threading.Lock()  # guards _commands and _thread
        self._thread: threading.Thread | None = None  # while commands run
        self._shut_down = threading.Event()
        self._context: ConnectorContext | None = None

    # --- called from the herder ----------------------------------------------------------

    def start(self) -> None:
        self._submit("init", None, None)

    def transition_to(self, target: TargetState) -> None:
        self.target_state = target
        self._submit("transition", target, None)

    def task_configs(self, max_tasks: int) -> Future[list[dict[str, str]]]:
        future: Future[list[dict[str, str]]] = Future()
        self._submit("task_configs", max_tasks, future)
        return future

    def shutdown(self) -> None:
        self._submit("shutdown", None, None)

    def await_shutdown(self, timeout_s: float) -> bool:
        if not self._shut_down.wait(timeout_s):
            log.error("Connector %s did not stop within %.1f s; abandoning its thread",
                      self.name, timeout_s)
            return False
        return True

    @property
    def has_thread(self) -> bool:
        """True while the connector's thread runs (commands are queued or running)."""
        with self._lock:
            return self._thread is not None

    @property
    def is_running(self) -> bool:
        return self.state is State.RUNNING

    def fail(self, error: BaseException) -> None:
        self._submit("fail", error, None)

    def _submit(self, command: str, arg: Any, future: Future[Any] | None) -> None:
        """Queue a command; start the thread if none runs."""
        with self._lock:
            self._commands.append((command, arg, future))
            if self._thread is None:
                self._thread = threading.Thread(target=self._drain,
                                                name=f"connector-{self.name}", daemon=True)
                self._thread.start()

    # --- connector thread ----------------------------------------------------------------

    def _drain(self) -> None:
        """Run the queued commands in order; the thread ends when none is left."""
        name_native_thread(f"conn-{self.name}")
        while True:
            with self._lock:
                if not self._commands:
                    self._thread = None
                    return
                command, arg, future = self._commands.popleft()
            try:
                self._handle(command, arg, future)
            except Exception as exc:  # noqa: BLE001 - never leave the queue without a thread
                log.exception("Connector %s: %s failed", self.name, command)
                if future is not None and not future.done():
                    future.set_exception(exc)  # its caller waits on it

    def _handle(self, command: str, arg: Any, future: Future[Any] | None) -> None:
        if self._shut_down.is_set():
            if future is not None:
                future.set_exception(RuntimeError(f"Connector {self.name} was shut down"))
            return
        if command == "init":
            self._init()
        elif command == "shutdown":
            self._stop_connector()
            if self.state is not State.FAILED:
                self.status.connector(self.name, State.UNASSIGNED)
            self._shut_down.set()
        elif command == "transition":
            if self.connector is None and self.state is not State.FAILED:
                return  # not created yet: "init" applies the latest target state
            self._transition(arg)
        elif command == "fail":
            self._stop_connector()
            self._set_failed(arg)
        elif command == "task_configs" and future is not None:
            self._task_configs(arg, future)

    def _init(self) -> None:
        try:
            # Instantiation is plugin code too: a failure (or hang) here stays on this thread,
            # and the connector stays FAILED until restarted instead of being retried.
            connector = self._factory()
            self._context = _Context(self, self._offset_reader(connector))
            connector.initialize(self._context)
            self.version = _version(connector)
            self.connector = connector
        except Exception as exc:
            self._set_failed(exc)
        else:
            self._transition(self.target_state)

    def _transition(self, target: TargetState) -> None:
        if target is TargetState.STOPPED:
            # KIP-875: STOPPED wins over FAILED, and a failure while stopping still stops.
            self._stop_connector()
            self._set_state(State.STOPPED)
            return
        if self.state is State.FAILED:
            return  # only a restart (a new WorkerConnector) leaves FAILED
        if target is TargetState.STARTED:
            if not self._started:
                assert self.connector is not None
                try:
                    # Provider code: on this thread, and a failure is this connector's.
                    resolved = self._resolve(self.config)
                except Exception as exc:
                    self._set_failed(exc)
                    return
                _remember_secrets(self.connector, resolved)
                try:
                    self.connector.start(resolved)
                    self._started = True
                except Exception as exc:
                    self._stop_connector(force=True)
                    self._set_failed(exc)
                    return
            self._set_state(State.RUNNING)
        else:
            # A paused connector instance is stopped (its tasks are only paused); resuming
            # starts it again and regenerates task configs.
            self._stop_connector()
            self._set_state(State.PAUSED)

    def _task_configs(self, max_tasks: int, future: Future[list[dict[str, str]]]) -> None:
        if not self._started or self.connector is None:
            future.set_exception(RuntimeError(f"Connector {self.name} is not running"))
            return
        try:
            configs = self.connector.task_configs(max_tasks)
            future.set_result([{str(k): str(v) for k, v in c.items()} for c in configs])
        except Exception as exc:
            # As in Kafka, the connector keeps running: the herder logs the failure and asks
            # again with backoff (a transient error, e.g. an unreachable source, heals).
            future.set_exception(exc)

    def _stop_connector(self, force: bool = False) -> None:
        if self.connector is None or not (self._started or force):
            return
        self._started = False
        try:
            self.connector.stop()
        except Exception:
            log.exception("Connector %s raised from stop()", self.name)

    def _set_state(self, state: State) -> None:
        self.state = state
        if state is State.RUNNING:
            self._report_startup(True)
        self.status.connector(self.name, state)

    def _set_failed(self, error: BaseException) -> None:
        log.error("Connector %s failed", self.name, exc_info=error)
        self.state = State.FAILED
        self._report_startup(False)
        self.status.connector(self.name, State.FAILED, error)

    def _report_startup(self, ok: bool) -> None:
        # As Kafka's WorkerMetricsGroup: the first RUNNING is a success, a failure before
        # it a failure; later transitions count for nothing.
        if not self._startup_reported:
            self._startup_reported = True
            if self._on_startup is not None:
                self._on_startup(ok)


def _version(connector: Connector) -> str:
    """The version the connector reports (plugin code: never fails the connector)."""
    try:
        return str(connector.version())
    except Exception:  # noqa: BLE001 - a broken version() only costs the metric's label
        log.warning("Connector %s: version() raised", type(connector).__name__, exc_info=True)
        return "unknown"
