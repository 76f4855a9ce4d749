"""What the standalone and distributed herders share: a herder thread, a worker, and
every write operation.

Every write runs on the single herder thread (a request queue, as in Kafka's herders), so
writes are serialised without locks, and connector code never runs on a REST thread:
connector calls go to the connector's own thread and come back as futures.

Each write operation (config put and patch, delete, pause/resume/stop, restarts, KIP-875
offsets, the dynamic worker configuration) is defined once here, as Kafka's AbstractHerder
defines pause and resume once and patches through the put path. A herder supplies only
*how* a write is carried out (``_write``, ``_config_write``: standalone runs it on the
herder thread and reconciles, distributed runs it on the leader of a stable group) and the
few genuine differences as hooks (``_store_target_state``,
``_restart_connector_and_tasks``, ``_check_assigned``, ``_check_offsets_write``).
"""

from __future__ import annotations

import logging
import queue
import threading
from abc import abstractmethod
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from typing import Any, TypeVar

from worker import __version__
from worker.config.dynamic import DynamicConfigManager, merge
from worker.config.reconfigurable import Reconfigurable
from worker.config.worker_config import WorkerConfig
from worker.errors import AlreadyExistsError, ConflictError, NotFoundError, WorkerError
from worker.herder import offset_requests as offsets_api
from worker.herder.abstract import AbstractHerder, not_found
from worker.herder.auto_restart import (
    AutoRestartConfig,
    Timers,
    task_with_auto_restart,
    with_auto_restart,
)
from worker.herder.models import (
    ClusterInfo,
    ClusterMemberInfo,
    ConnectorInfo,
    ConnectorOffset,
    ConnectorOffsets,
    ConnectorStateInfo,
    ConnectorType,
    Created,
    Message,
    ServerInfo,
    TaskState,
    WorkerConfigValidation,
    WorkerInfo,
)
from worker.herder.reconcile import Reconciler
from worker.plugins.registry import CONNECTOR_TYPES, PluginRegistry
from worker.runtime.loggers import Loggers
from worker.runtime.sink_offsets import SinkGroupOffsets, open_sink_offsets
from worker.runtime.worker import Worker
from worker.storage.base import (
    ConfigBackingStore,
    ConnectorStatus,
    OffsetBackingStore,
    State,
    StatusBackingStore,
    TargetState,
    TaskId,
    TaskStatus,
)

log = logging.getLogger(__name__)

T = TypeVar("T")
REQUEST_TIMEOUT_S = 90.0
#: Bound on a connector's KIP-875 ``alter_offsets`` hook (plugin code, on its own thread).
ALTER_OFFSETS_HOOK_TIMEOUT_S = 30.0

_Request = tuple[Callable[[], Any], Future[Any]] | None


class ThreadedHerder(AbstractHerder):
    #: Starts, stops and restarts what this worker runs; built by the subclass, which says
    #: what this worker owns and how task configs are published.
    _reconciler: Reconciler
    #: The URL this worker advertises (``GET /admin/worker``); set by the subclass.
    url: str

    def __init__(self, config: WorkerConfig, registry: PluginRegistry, worker: Worker,
                 config_store: ConfigBackingStore, offset_store: OffsetBackingStore,
                 status_store: StatusBackingStore, kafka_cluster_id: str | None = None,
                 loggers: Loggers | None = None) -> None:
        super().__init__(config, registry, config_store, status_store, loggers)
        self.worker = worker
        self.offset_store = offset_store
        self.kafka_cluster_id = kafka_cluster_id
        self._requests: queue.Queue[_Request] = queue.Queue()
        #: Work due later on the herder thread (retries, automatic restarts): run between
        #: requests by ``_run_requests``.
        self._timers = Timers()
        self._thread = threading.Thread(target=self._loop, name="herder", daemon=True)
        #: Opens a sink connector's consumer-group offsets (replaceable in tests).
        self.sink_offsets_factory: Callable[[WorkerConfig, str, Mapping[str, str]],
                                            SinkGroupOffsets] = open_sink_offsets
        #: The parts of this worker that take worker-config changes at run time.
        self.dynamic_config = DynamicConfigManager.for_worker(config)

    def _loop(self) -> None:
        """The herder thread's body: run requests until the stop sentinel."""
        while self._run_requests(None):
            pass

    def server_info(self) -> ServerInfo:
        return ServerInfo(__version__, "unknown", self.kafka_cluster_id)

    # --- statuses with our auto_restart extension (read without the herder thread) ---------

    def connector_status(self, name: str) -> ConnectorStateInfo:
        status = super().connector_status(name)
        return with_auto_restart(status, self._reconciler.auto_restart,
                                 self._auto_restart_settings(name), self.worker.worker_id)

    def task_status(self, task: TaskId) -> TaskState:
        status = super().task_status(task)
        return task_with_auto_restart(status, task.connector, self._reconciler.auto_restart,
                                      self._auto_restart_settings(task.connector),
                                      self.worker.worker_id)

    def _auto_restart_settings(self, name: str) -> AutoRestartConfig:
        # As the reconciler last saw the connector's config (parsed once per change, not
        # per status request).
        return self._reconciler.auto_restart.settings(name)

    # --- how a write is carried out: the subclass's part ------------------------------------

    @abstractmethod
    def _write(self, fn: Callable[[], T], connector: str | None = None) -> T:
        """Carry out ``fn``, which checks and writes the config store, as this herder's
        writes are: on the herder thread, where the store may be written (standalone: then
        reconcile, only ``connector`` when the write is to that connector alone;
        distributed: only as the leader of a stable group, else NotLeaderError or, after
        ``REBALANCE_WAIT_S``, RebalanceNeededError). Returns what ``fn`` returns; raises
        what it raises."""

    def _config_write(self, name: str, store: Callable[[], bool]) -> Created:
        """Carry out ``store``, which writes the connector config of ``name`` and says
        whether that created the connector, as a write; answer with the connector as the
        write left it. A herder whose answer must wait for the task configs overrides this.
        """
        return self._write(lambda: Created(store(), self.connector_info(name)), name)

    def _store_target_state(self, name: str, target: TargetState) -> None:
        """Herder thread, inside a write: store the target state of ``name``."""
        self.config_store.put_target_state(name, target)

    @abstractmethod
    def _restart_connector_and_tasks(self, name: str, include_tasks: bool,
                                     only_failed: bool) -> ConnectorStateInfo:
        """Herder thread, inside a write, ``name`` exists: have the connector and (per the
        flags) its tasks restarted; return the state as REST answers it (202)."""

    def _check_assigned(self, name: str, task: TaskId | None) -> None:
        """Herder thread: raise if connector ``name`` (``task`` None) or ``task`` does not
        run on this worker, so that it cannot be restarted here. By default everything
        runs here (one worker is the whole cluster)."""

    def _check_offsets_write(self) -> None:
        """Raise if this worker may not modify offsets now (herder thread)."""

    # --- writes: each defined once --------------------------------------------------------

    def put_connector_config(self, name: str, config: Mapping[str, str], *,
                             allow_replace: bool,
                             initial_state: TargetState | None = None) -> Created:
        return self._put_config(name, config, allow_replace=allow_replace,
                                initial_state=initial_state)

    def patch_connector_config(self, name: str, patch: Mapping[str, str | None]
                               ) -> ConnectorInfo:
        current = self.connector_config(name)
        patched = {k: v for k, v in {**current, **patch}.items() if v is not None}
        # Through the put path (Kafka: ConnectUtils.patchConfig, then putConnectorConfig),
        # but a patch never creates: a connector deleted meanwhile stays NotFound.
        return self._put_config(name, patched, allow_replace=True, allow_create=False).info

    def _put_config(self, name: str, config: Mapping[str, str], *, allow_replace: bool,
                    allow_create: bool = True, initial_state: TargetState | None = None
                    ) -> Created:
        """Validate, then write ``config`` as the config of ``name``. The existence rule is
        checked before validating (fail fast) and again in the write (the store may have
        changed while the connector's ``validate`` ran)."""
        config = {**config, "name": name}
        self._check_exists(name, allow_replace, allow_create)
        self.validate_or_raise(config)

        def store() -> bool:
            created = self._check_exists(name, allow_replace, allow_create)
            self.config_store.put_connector_config(
                name, config, (initial_state or TargetState.STARTED) if created else None)
            return created
        return self._config_write(name, store)

    def _check_exists(self, name: str, allow_replace: bool, allow_create: bool) -> bool:
        """Whether writing ``name`` creates it. Raises AlreadyExistsError (exists, no
        ``allow_replace``) or NotFoundError (absent, no ``allow_create``)."""
        exists = self.config_store.view().contains(name)
        if exists and not allow_replace:
            raise AlreadyExistsError(f"Connector {name} already exists")
        if not exists and not allow_create:
            raise not_found(name)
        return not exists

    def delete_connector(self, name: str) -> None:
        def delete() -> None:
            self._snapshot_with(name)
            self.config_store.remove_connector_config(name)
        self._write(delete, name)

    def pause_connector(self, name: str) -> None:
        self._set_target(name, TargetState.PAUSED)

    def resume_connector(self, name: str) -> None:
        self._set_target(name, TargetState.STARTED)

    def stop_connector(self, name: str) -> None:
        self._set_target(name, TargetState.STOPPED)

    def _set_target(self, name: str, target: TargetState) -> None:
        def set_target() -> None:
            self._snapshot_with(name)
            self._store_target_state(name, target)
        self._write(set_target, name)

    # --- restarts ---------------------------------------------------------------------------

    def restart_connector(self, name: str, *, include_tasks: bool = False,
                          only_failed: bool = False) -> ConnectorStateInfo | None:
        if not include_tasks and not only_failed:
            # A plain restart is no config write: the worker running the connector does it.
            self._call(lambda: self._restart_here(name, None))
            return None

        def restart() -> ConnectorStateInfo:
            self._snapshot_with(name)
            return self._restart_connector_and_tasks(name, include_tasks, only_failed)
        return self._write(restart, name)

    def restart_task(self, task: TaskId) -> None:
        self._call(lambda: self._restart_here(task.connector, task))

    def _restart_here(self, name: str, task: TaskId | None) -> None:
        """Herder thread: restart connector ``name`` (``task`` None) or ``task`` now.
        Raises NotFoundError, or what ``_check_assigned`` raises."""
        snapshot = self._snapshot_with(name)
        if task is not None and not 0 <= task.task < len(snapshot.tasks(name)):
            raise NotFoundError(f"Task {name}-{task.task} not found")
        self._check_assigned(name, task)
        self._reconciler.auto_restart.reset(task if task is not None else name)
        if task is not None:
            self._reconciler.restart_tasks.add(task)
        else:
            self._reconciler.restart_connectors.add(name)
        self._reconciler.reconcile(name)

    def _queue_restarts(self, name: str, connector: bool,
                        tasks: Mapping[TaskId, TaskStatus | None], only_failed: bool) -> None:
        """Herder thread: have the next reconcile restart the connector ``name`` (if
        ``connector``) and ``tasks`` (given with their statuses), with ``only_failed`` only
        those that FAILED; they show RESTARTING until they run again (Kafka's RestartPlan).
        """
        if connector and _restarts(self.status_store.get_connector(name), only_failed):
            self._reconciler.restart_connectors.add(name)
            self._reconciler.auto_restart.reset(name)
            self.worker.status.connector(name, State.RESTARTING)
        for task, status in tasks.items():
            if _restarts(status, only_failed):
                self._reconciler.restart_tasks.add(task)
                self._reconciler.auto_restart.reset(task)
                self.worker.status.task(task, State.RESTARTING)

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
        targets: offsets_api.SourceOffsets = (
            offsets_api.parse_source_offsets(requested) if requested is not None
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
        self._check_offsets_write()
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
            raise WorkerError(f"Cannot manage offsets of a connector whose class "
                               f"{config.get('connector.class')} is not installed")
        return kind is ConnectorType.SINK

    # --- the dynamic worker configuration (our /admin/ extension) --------------------------

    def register_reconfigurable(self, component: Reconfigurable) -> None:
        """Composition root: ``component`` takes worker-config changes from now on (and the
        overrides in force at once)."""
        self.dynamic_config.register(component)

    def worker_config_overrides(self) -> dict[str, str]:
        return self.config_store.worker_config().properties

    def validate_worker_config(self, patch: Mapping[str, str | None]
                               ) -> WorkerConfigValidation:
        stored = self.config_store.worker_config().properties
        self.dynamic_config.check_request(patch, stored)
        errors = self.dynamic_config.validate(merge(stored, patch))
        return WorkerConfigValidation(sum(len(e) for e in errors.values()), errors)

    def patch_worker_config(self, patch: Mapping[str, str | None]) -> dict[str, str]:
        # Fail fast on keys (any worker can tell); the merge and the full validation run in
        # the write, against the overrides stored at that moment.
        self.dynamic_config.check_request(patch, self.config_store.worker_config().properties)

        def write() -> dict[str, str]:
            stored = self.config_store.worker_config().properties
            self.dynamic_config.check_request(patch, stored)
            merged = merge(stored, patch)
            self._store_worker_config(merged)
            return merged
        return self._write(write)

    def delete_worker_config(self, name: str) -> None:
        def write() -> None:
            stored = self.config_store.worker_config().properties
            if name not in stored:
                raise NotFoundError(f"No dynamic worker configuration override named {name}")
            self._store_worker_config({k: v for k, v in stored.items() if k != name})
        self._write(write)

    def _store_worker_config(self, overrides: dict[str, str]) -> None:
        """Herder thread, inside a write: validate, store, and apply here before the write
        answers (so ``/admin/worker`` of the answering worker shows it at once)."""
        self.dynamic_config.validate_or_raise(overrides)
        self.config_store.put_worker_config(overrides)
        self._apply_worker_config()

    def _apply_worker_config(self) -> None:
        """Herder thread: apply the stored overrides if they are newer than those applied
        (a worker that cannot apply them logs it, keeps its config and reports it)."""
        stored = self.config_store.worker_config()
        self.dynamic_config.apply(stored.version, stored.properties)

    def _load_worker_config(self) -> None:
        """At start, once the config store was read: apply the stored overrides."""
        stored = self.config_store.worker_config()
        self.dynamic_config.load(stored.version, stored.properties)

    def worker_info(self) -> WorkerInfo:
        return WorkerInfo(self.worker.worker_id, self.url, self.dynamic_config.state())

    def cluster_info(self) -> ClusterInfo:
        # One worker is the whole cluster (standalone); a cluster overrides this.
        return ClusterInfo(self.url, [ClusterMemberInfo(self.worker.worker_id, self.url)])

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

    def _health_problem(self) -> str | None:
        return self.worker.fd_budget.shortage()

    # --- the herder thread ---------------------------------------------------------------

    def _call(self, fn: Callable[[], T]) -> T:
        if threading.current_thread() is self._thread:
            return fn()
        future: Future[T] = Future()
        self._requests.put((fn, future))
        try:
            return future.result(REQUEST_TIMEOUT_S)
        except TimeoutError as exc:
            raise WorkerError("Request timed out") from exc

    def _submit(self, fn: Callable[[], Any]) -> None:
        """Queue work for the herder thread without waiting (from any thread)."""
        future: Future[Any] = Future()
        future.add_done_callback(_log_failure)
        self._requests.put((fn, future))

    def _run_requests(self, timeout_s: float | None) -> bool:
        """Run due timers, then queued requests: block for the first up to ``timeout_s``
        (None: forever) or until the next timer is due, then drain what is queued. False
        once the stop sentinel was taken."""
        next_timer_s = self._timers.run_due()
        if next_timer_s is not None:
            timeout_s = next_timer_s if timeout_s is None else min(timeout_s, next_timer_s)
        try:
            item = self._requests.get(timeout=timeout_s)
        except queue.Empty:
            return True
        while True:
            if item is None:
                return False
            fn, future = item
            try:
                future.set_result(fn())
            except BaseException as exc:  # handed to whoever waits on the future
                future.set_exception(exc)
            try:
                item = self._requests.get_nowait()
            except queue.Empty:
                return True


def _restarts(status: ConnectorStatus | TaskStatus | None, only_failed: bool) -> bool:
    """Whether a restart request with ``only_failed`` restarts what has ``status``."""
    return not only_failed or (status is not None and status.state is State.FAILED)


def _log_failure(future: Future[Any]) -> None:
    """Done callback of background work: nobody waits on it, so log a failure, not lose it."""
    exc = future.exception()
    if exc is not None:
        log.error("Herder background work failed", exc_info=exc)
