"""StandaloneHerder: one worker; state in the SQL (or memory) stores.

Every write runs on the herder thread (``ThreadedHerder``). After each write the herder
*reconciles* (``Reconciler``): it compares the stored configs and target states with what
the worker runs and starts, stops, pauses or restarts exactly what differs.

As in Kafka's StandaloneHerder, a config write answers once the connector has generated its
task configs, so the returned ``ConnectorInfo`` lists the tasks. The connector computes them
on its own thread; if it takes longer than ``TASK_CONFIGS_WAIT_S`` (e.g. a ``start()`` that
hangs) the write answers anyway with the tasks stored so far, rather than hang the request.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from concurrent.futures import Future

from worker import __version__
from worker.config.worker_config import WorkerConfig
from worker.errors import AlreadyExistsError, NotFoundError
from worker.herder.abstract import not_found
from worker.herder.models import ConnectorInfo, ConnectorStateInfo, Created, ServerInfo
from worker.herder.reconcile import Reconciler
from worker.herder.threaded import REQUEST_TIMEOUT_S, ThreadedHerder
from worker.plugins.registry import PluginRegistry
from worker.runtime.loggers import Loggers
from worker.runtime.worker import Worker
from worker.storage.base import (
    ConfigBackingStore,
    OffsetBackingStore,
    State,
    StatusBackingStore,
    TargetState,
    TaskId,
)

log = logging.getLogger(__name__)

TASK_CONFIGS_WAIT_S = 5.0


class StandaloneHerder(ThreadedHerder):
    def __init__(self, config: WorkerConfig, registry: PluginRegistry, worker: Worker,
                 config_store: ConfigBackingStore, offset_store: OffsetBackingStore,
                 status_store: StatusBackingStore, kafka_cluster_id: str | None = None,
                 loggers: Loggers | None = None) -> None:
        super().__init__(config, registry, worker, config_store, offset_store, status_store,
                         kafka_cluster_id, loggers)
        self._reconciler = Reconciler(worker, config_store, status_store,
                                      submit=self._submit,
                                      publish_task_configs=config_store.put_task_configs)
        self._running = False

    # --- lifecycle ---------------------------------------------------------------------

    def start(self) -> None:
        for store in (self.config_store, self.offset_store, self.status_store):
            store.start()
        self._thread.start()
        self._running = True
        self._call(self._reconciler.reconcile)
        log.info("Standalone herder started with %d connector(s)", len(self.connectors()))

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

    def server_info(self) -> ServerInfo:
        return ServerInfo(__version__, "unknown", self.kafka_cluster_id)

    # --- writes --------------------------------------------------------------------------

    def put_connector_config(self, name: str, config: Mapping[str, str], *,
                             allow_replace: bool,
                             initial_state: TargetState | None = None) -> Created:
        config = {**config, "name": name}
        exists = self.config_store.snapshot().contains(name)
        if exists and not allow_replace:
            raise AlreadyExistsError(f"Connector {name} already exists")
        self.validate_or_raise(config)

        def write() -> tuple[bool, Future[None] | None]:
            created = not self.config_store.snapshot().contains(name)
            if not created and not allow_replace:
                raise AlreadyExistsError(f"Connector {name} already exists")
            self.config_store.put_connector_config(
                name, config, (initial_state or TargetState.STARTED) if created else None)
            self._reconciler.reconcile()
            return created, self._reconciler.task_configs_applied.get(name)
        created, applied = self._call(write)
        return Created(created, self._info_after_task_configs(name, applied))

    def patch_connector_config(self, name: str, patch: Mapping[str, str | None]
                               ) -> ConnectorInfo:
        current = self.connector_config(name)
        merged = {k: v for k, v in {**current, **patch}.items() if v is not None}
        merged["name"] = name
        self.validate_or_raise(merged)

        def write() -> Future[None] | None:
            if not self.config_store.snapshot().contains(name):
                raise not_found(name)
            self.config_store.put_connector_config(name, merged)
            self._reconciler.reconcile()
            return self._reconciler.task_configs_applied.get(name)
        return self._info_after_task_configs(name, self._call(write))

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

    def delete_connector(self, name: str) -> None:
        def write() -> None:
            self._snapshot_with(name)
            self.config_store.remove_connector_config(name)
            self._reconciler.reconcile()
        self._call(write)

    def restart_connector(self, name: str, *, include_tasks: bool = False,
                          only_failed: bool = False) -> ConnectorStateInfo | None:
        def write() -> ConnectorStateInfo | None:
            self._snapshot_with(name)
            plain = not include_tasks and not only_failed
            status = self.status_store.get_connector(name)
            if plain or not only_failed or (status and status.state is State.FAILED):
                self._reconciler.restart_connectors.add(name)
                if not plain:
                    self.worker.status.connector(name, State.RESTARTING)
            if include_tasks:
                for task in self.status_store.get_tasks(name):
                    if not only_failed or task.state is State.FAILED:
                        self._reconciler.restart_tasks.add(task.id)
                        self.worker.status.task(task.id, State.RESTARTING)
            result = None if plain else self.connector_status(name)
            self._reconciler.reconcile()
            return result
        return self._call(write)

    def restart_task(self, task: TaskId) -> None:
        def write() -> None:
            snapshot = self._snapshot_with(task.connector)
            if not 0 <= task.task < len(snapshot.tasks(task.connector)):
                raise NotFoundError(f"Task {task.connector}-{task.task} not found")
            self._reconciler.restart_tasks.add(task)
            self._reconciler.reconcile()
        self._call(write)

    def pause_connector(self, name: str) -> None:
        self._set_target(name, TargetState.PAUSED)

    def resume_connector(self, name: str) -> None:
        self._set_target(name, TargetState.STARTED)

    def stop_connector(self, name: str) -> None:
        self._set_target(name, TargetState.STOPPED)

    def _set_target(self, name: str, target: TargetState) -> None:
        def write() -> None:
            self._snapshot_with(name)
            self.config_store.put_target_state(name, target)
            self._reconciler.reconcile()
        self._call(write)
