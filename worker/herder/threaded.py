"""What the standalone and distributed herders share: a herder thread and a worker.

Every write runs on the single herder thread (a request queue, as in Kafka's herders), so
writes are serialised without locks, and connector code never runs on a REST thread:
connector calls go to the connector's own thread and come back as futures. The KIP-875
offset operations live here too: both herders validate, ask the connector's hook and write
the same way; the distributed herder adds its leader check in ``_check_offsets_write``.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from typing import Any, TypeVar

from worker.config.worker_config import WorkerConfig
from worker.errors import ConflictError, ConnectError
from worker.herder import offsets as offsets_api
from worker.herder.abstract import AbstractHerder
from worker.herder.models import ConnectorOffset, ConnectorOffsets, ConnectorType, Message
from worker.plugins.registry import CONNECTOR_TYPES, PluginRegistry
from worker.runtime.loggers import Loggers
from worker.runtime.sink_offsets import SinkGroupOffsets, open_sink_offsets
from worker.runtime.worker import Worker
from worker.storage.base import (
    ConfigBackingStore,
    OffsetBackingStore,
    StatusBackingStore,
    TargetState,
)

log = logging.getLogger(__name__)

T = TypeVar("T")
REQUEST_TIMEOUT_S = 90.0
#: Bound on a connector's KIP-875 ``alter_offsets`` hook (plugin code, on its own thread).
ALTER_OFFSETS_HOOK_TIMEOUT_S = 30.0

_Request = tuple[Callable[[], Any], Future[Any]] | None


class ThreadedHerder(AbstractHerder):
    def __init__(self, config: WorkerConfig, registry: PluginRegistry, worker: Worker,
                 config_store: ConfigBackingStore, offset_store: OffsetBackingStore,
                 status_store: StatusBackingStore, kafka_cluster_id: str | None = None,
                 loggers: Loggers | None = None) -> None:
        super().__init__(config, registry, config_store, status_store, loggers)
        self.worker = worker
        self.offset_store = offset_store
        self.kafka_cluster_id = kafka_cluster_id
        self._requests: queue.Queue[_Request] = queue.Queue()
        self._thread = threading.Thread(target=self._loop, name="herder", daemon=True)
        #: Opens a sink connector's consumer-group offsets (replaceable in tests).
        self.sink_offsets_factory: Callable[[WorkerConfig, str, Mapping[str, str]],
                                            SinkGroupOffsets] = open_sink_offsets

    def _loop(self) -> None:
        """The herder thread's body: run requests until the stop sentinel."""
        while self._run_requests(None):
            pass

    def _check_offsets_write(self) -> None:
        """Raise if this worker may not modify offsets now (herder thread)."""

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

    def _run_requests(self, timeout_s: float | None) -> bool:
        """Run queued requests: block for the first up to ``timeout_s`` (None: forever),
        then drain what is queued. False once the stop sentinel was taken."""
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
