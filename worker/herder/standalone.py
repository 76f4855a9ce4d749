"""StandaloneHerder: one worker; state in the SQL (or memory) stores.

The write operations are ``ThreadedHerder``'s; this herder carries each out on the herder
thread (a dynamic worker-config change is applied there too, at once) and then
*reconciles* (``Reconciler``): it compares the stored configs and target states with what
the worker runs and starts, stops, pauses or restarts exactly what differs. A restart
marks what it restarts RESTARTING and reconciles at once.

As in Kafka's StandaloneHerder, a config write answers once the connector has generated its
task configs, so the returned ``ConnectorInfo`` lists the tasks. The connector computes them
on its own thread; if it takes longer than ``TASK_CONFIGS_WAIT_S`` (e.g. a ``start()`` that
hangs) the write answers anyway with the tasks stored so far, rather than hang the request.

At start the stored connectors are started on the herder thread while the REST API already
answers, as Kafka's REST server answers during startup: ``/health`` says ``starting``
(503) until they all started (``mark_ready`` runs after them), and requests that need the
herder thread wait for them.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import TypeVar

from worker.config.worker_config import WorkerConfig
from worker.herder.models import ConnectorInfo, ConnectorStateInfo, Created
from worker.herder.reconcile import Reconciler
from worker.herder.threaded import REQUEST_TIMEOUT_S, ThreadedHerder
from worker.plugins.registry import PluginRegistry
from worker.runtime.loggers import Loggers
from worker.runtime.worker import Worker
from worker.storage.base import ConfigBackingStore, OffsetBackingStore, StatusBackingStore

log = logging.getLogger(__name__)

T = TypeVar("T")

TASK_CONFIGS_WAIT_S = 5.0


class StandaloneHerder(ThreadedHerder):
    def __init__(self, config: WorkerConfig, registry: PluginRegistry, worker: Worker,
                 config_store: ConfigBackingStore, offset_store: OffsetBackingStore,
                 status_store: StatusBackingStore, kafka_cluster_id: str | None = None,
                 loggers: Loggers | None = None, *, url: str | None = None) -> None:
        super().__init__(config, registry, worker, config_store, offset_store, status_store,
                         kafka_cluster_id, loggers)
        self.url = url or f"http://{worker.worker_id}"
        self._reconciler = Reconciler(worker, config_store, status_store,
                                      submit=self._submit, schedule=self._timers.schedule,
                                      publish_task_configs=config_store.put_task_configs)
        self._running = False

    # --- lifecycle ---------------------------------------------------------------------

    def start(self) -> None:
        for store in (self.config_store, self.offset_store, self.status_store):
            store.start()
        self._load_worker_config()  # before REST serves: it may hold the TLS settings
        self._thread.start()
        self._running = True
        # The stored connectors start on the herder thread while REST already answers, as
        # Kafka's REST server does during startup: /health says "starting" (503) until
        # mark_ready(), which runs after them; requests for the herder thread wait.
        self._submit(self._start_stored_connectors)

    def _start_stored_connectors(self) -> None:
        self._reconciler.reconcile()
        log.info("Standalone herder started with %d connector(s)", len(self.connectors()))

    def mark_ready(self) -> None:
        """Ready once the stored connectors were started: queued behind them."""
        self._submit(super().mark_ready)

    def stop(self) -> None:
        if not self._running:
            return
        self._running = False
        try:
            self._call(self._reconciler.stop_all)
        finally:
            self._requests.put(None)
            self._thread.join(REQUEST_TIMEOUT_S)
            for store in (self.config_store, self.offset_store, self.status_store):
                store.stop()

    # --- how a write is carried out --------------------------------------------------------

    def _write(self, fn: Callable[[], T], connector: str | None = None) -> T:
        return self._call(lambda: self._reconciled(fn, connector))

    def _reconciled(self, fn: Callable[[], T], connector: str | None = None) -> T:
        """Herder thread: ``fn``, then reconcile (``connector`` alone, if the write was to
        that one only), so that what runs follows the write."""
        result = fn()
        self._reconciler.reconcile(connector)
        return result

    def _config_write(self, name: str, store: Callable[[], bool]) -> Created:
        # The answer waits for the task configs (see the module docstring): the future that
        # tells is taken on the herder thread, right after the reconcile that created it.
        def write() -> tuple[bool, Future[None] | None]:
            created = self._reconciled(store, name)
            return created, self._reconciler.task_configs_applied.get(name)
        created, applied = self._call(write)
        return Created(created, self._info_after_task_configs(name, applied))

    def _info_after_task_configs(self, name: str, applied: Future[None] | None
                                 ) -> ConnectorInfo:
        """The connector's info once ``applied`` resolved (bounded by TASK_CONFIGS_WAIT_S)."""
        # On the herder thread (no caller does that today) waiting would only block apply().
        if applied is not None and threading.current_thread() is not self._thread:
            try:
                applied.result(TASK_CONFIGS_WAIT_S)
            except TimeoutError:
                log.warning("Connector %s did not generate task configs within %.0f s; "
                            "answering with the tasks stored so far", name,
                            TASK_CONFIGS_WAIT_S)
        return self._call(lambda: self.connector_info(name))

    def _restart_connector_and_tasks(self, name: str, include_tasks: bool,
                                     only_failed: bool) -> ConnectorStateInfo:
        tasks = ({t.id: t for t in self.status_store.get_tasks(name)} if include_tasks
                 else {})
        self._queue_restarts(name, True, tasks, only_failed)
        return self.connector_status(name)  # showing RESTARTING; the reconcile follows
