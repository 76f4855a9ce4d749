"""StandaloneHerder: one worker; state in the SQL (or memory) stores.

Every write runs on the single herder thread (a request queue, as in Kafka's herders), so
writes are serialised without locks, and connector code never runs on a REST thread:
connector calls go to the connector's own thread and come back as futures. After each
write the herder *reconciles*: it compares the stored configs and target states with what
the worker runs and starts, stops, pauses or restarts exactly what differs.

As in Kafka's StandaloneHerder, a config write answers once the connector has generated its
task configs, so the returned ``ConnectorInfo`` lists the tasks. The connector computes them
on its own thread; if it takes longer than ``TASK_CONFIGS_WAIT_S`` (e.g. a ``start()`` that
hangs) the write answers anyway with the tasks stored so far, rather than hang the request.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from typing import Any, TypeVar

from worker.config.worker_config import WorkerConfig
from worker.errors import AlreadyExistsError, ConflictError, ConnectError, NotFoundError
from worker.herder import offsets as offsets_api
from worker.herder.abstract import AbstractHerder, not_found
from worker.herder.models import (
    ConnectorInfo,
    ConnectorOffset,
    ConnectorOffsets,
    ConnectorStateInfo,
    ConnectorType,
    Created,
    Message,
    ServerInfo,
)
from worker.herder.reconcile import Reconciler
from worker.plugins.registry import CONNECTOR_TYPES, PluginRegistry
from worker.runtime.loggers import Loggers
from worker.runtime.sink_offsets import SinkGroupOffsets, open_sink_offsets
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

T = TypeVar("T")
REQUEST_TIMEOUT_S = 90.0
TASK_CONFIGS_WAIT_S = 5.0
#: Bound on a connector's KIP-875 ``alter_offsets`` hook (plugin code, on its own thread).
ALTER_OFFSETS_HOOK_TIMEOUT_S = 30.0
VERSION = "0.1.0"


class StandaloneHerder(AbstractHerder):
    def __init__(self, config: WorkerConfig, registry: PluginRegistry, worker: Worker,
                 config_store: ConfigBackingStore, offset_store: OffsetBackingStore,
                 status_store: StatusBackingStore, kafka_cluster_id: str | None = None,
                 loggers: Loggers | None = None) -> None:
        super().__init__(config, registry, config_store, status_store, loggers)
        self.worker = worker
        self.offset_store = offset_store
        self.kafka_cluster_id = kafka_cluster_id
        self._requests: queue.Queue[tuple[Callable[[], Any], Future[Any]] | None] = (
            queue.Queue())
        self._thread = threading.Thread(target=self._loop, name="herder", daemon=True)
        self._reconciler = Reconciler(worker, config_store, status_store,
                                      submit=self._submit,
                                      publish_task_configs=config_store.put_task_configs)
        self._running = False
        #: Opens a sink connector's consumer-group offsets (replaceable in tests).
        self.sink_offsets_factory: Callable[[WorkerConfig, str, Mapping[str, str]],
                                            SinkGroupOffsets] = open_sink_offsets

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
        return ServerInfo(VERSION, "unknown", self.kafka_cluster_id)

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

    # --- KIP-875 offsets -------------------------------------------------------------------

    def connector_offsets(self, name: str) -> ConnectorOffsets:
        config = self.connector_config(name)
        if self._is_sink(config):
            # Admin calls run on the caller's (REST pool) thread: reads need no serialising.
            group = self.sink_offsets_factory(self.worker_config, name, config)
            return offsets_api.sink_offsets_entity(group.offsets())
        return offsets_api.source_offsets_entity(self.offset_store.get_all(name))

    def alter_connector_offsets(self, name: str, offsets: list[ConnectorOffset]) -> Message:
        return self._modify_offsets(name, offsets)

    def reset_connector_offsets(self, name: str) -> Message:
        return self._modify_offsets(name, None)

    def _modify_offsets(self, name: str, requested: list[ConnectorOffset] | None) -> Message:
        """Alter (``requested``) or reset (None) offsets, as Kafka's Worker does: check the
        state, validate everything, ask the connector's hook, then write on the herder
        thread after checking the state again (a resume may have slipped in)."""
        config = self._call(lambda: self._stopped_config(name))
        prepare = self._prepare_sink_write if self._is_sink(config) else \
            self._prepare_source_write
        targets, write = prepare(name, config, requested)
        class_name = config.get("connector.class", "")
        accepted = offsets_api.call_alter_offsets_hook(
            lambda: self.registry.new_instance(class_name, CONNECTOR_TYPES), name, config,
            targets, ALTER_OFFSETS_HOOK_TIMEOUT_S)

        def checked_write() -> None:
            self._stopped_config(name, config)
            write()
        self._call(checked_write)
        reset = requested is None
        log.info("Offsets of connector %s %s (%d partition(s))", name,
                 "reset" if reset else "altered", len(targets))
        return offsets_api.success_message(accepted, reset)

    def _prepare_sink_write(self, name: str, config: dict[str, str],
                            requested: list[ConnectorOffset] | None
                            ) -> tuple[offsets_api.SinkOffsets, Callable[[], None]]:
        """Validate; the offsets the hook sees and the write to run once it agreed."""
        parsed = None if requested is None else offsets_api.parse_sink_offsets(requested)
        group = self.sink_offsets_factory(self.worker_config, name, config)
        group.ensure_no_active_members(parsed is None)  # refuse before the hook sees anything
        if parsed is None:
            return dict.fromkeys(group.offsets()), group.reset
        return parsed, lambda: group.alter(parsed)

    def _prepare_source_write(self, name: str, config: dict[str, str],
                              requested: list[ConnectorOffset] | None
                              ) -> tuple[offsets_api.SourceOffsets, Callable[[], None]]:
        """Validate; the offsets the hook sees and the write to run once it agreed."""
        targets = (offsets_api.parse_source_offsets(requested) if requested is not None
                   else [(p, None) for p, _ in self.offset_store.get_all(name)])

        def write() -> None:
            if targets:  # a reset of a connector without stored offsets writes nothing
                self.offset_store.put(name, targets)
        return targets, write

    def _stopped_config(self, name: str, expected: dict[str, str] | None = None
                        ) -> dict[str, str]:
        """The config of ``name`` if its offsets may change now (herder thread only).

        Raises NotFoundError, BadRequestError (not STOPPED, or task configs remain, as in
        Kafka), ConflictError (reconfigured since ``expected`` was read).
        """
        snapshot = self._snapshot_with(name)
        if snapshot.target_state(name) is not TargetState.STOPPED or snapshot.tasks(name):
            raise offsets_api.not_stopped(name)
        config = dict(snapshot.connector_configs[name])
        if expected is not None and config != expected:
            raise ConflictError(f"Connector {name} was reconfigured while its offsets were "
                                "being modified; retry the request")
        return config

    def _is_sink(self, config: Mapping[str, str]) -> bool:
        kind = self.connector_type(config)
        if kind is ConnectorType.UNKNOWN:
            raise ConnectError(f"Cannot manage offsets of a connector whose class "
                               f"{config.get('connector.class')} is not installed")
        return kind is ConnectorType.SINK

    # --- KIP-558 reset, KIP-1017 health hooks ---------------------------------------------

    def reset_connector_active_topics(self, name: str) -> None:
        super().reset_connector_active_topics(name)
        # Running tasks record each topic again on its next use, as Kafka's do.
        self._call(lambda: self.worker.forget_active_topics(name))

    def _health_probe(self) -> Future[None]:
        """A no-op through the herder thread: answered only if that thread is responsive."""
        future: Future[None] = Future()
        self._requests.put((lambda: None, future))
        return future

    def _health_thread(self) -> threading.Thread | None:
        return self._thread

    # --- the herder thread ---------------------------------------------------------------

    def _call(self, fn: Callable[[], T]) -> T:
        if threading.current_thread() is self._thread:
            return fn()
        future: Future[T] = Future()
        self._requests.put((fn, future))
        try:
            return future.result(REQUEST_TIMEOUT_S)
        except TimeoutError as exc:
            raise ConnectError("Request timed out") from exc

    def _submit(self, fn: Callable[[], Any]) -> None:
        """Queue work for the herder thread without waiting (from any thread)."""
        future: Future[Any] = Future()
        # Nobody waits on this future: log a failure rather than lose it.
        future.add_done_callback(lambda f: f.exception() and log.error(
            "Herder background work failed", exc_info=f.exception()))
        self._requests.put((fn, future))

    def _loop(self) -> None:
        while True:
            item = self._requests.get()
            if item is None:
                return
            fn, future = item
            try:
                future.set_result(fn())
            except BaseException as exc:  # handed to whoever waits on the future
                future.set_exception(exc)
