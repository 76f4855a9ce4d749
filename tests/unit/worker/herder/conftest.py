"""What the StandaloneHerder tests share: a herder over memory stores."""

from __future__ import annotations

from worker.config.worker_config import WorkerConfig
from worker.herder.standalone import StandaloneHerder
from worker.plugins.registry import builtin_registry
from worker.runtime.worker import Worker
from worker.storage.memory import (
    MemoryConfigBackingStore,
    MemoryOffsetBackingStore,
    MemoryStatusBackingStore,
)


def new_standalone_herder() -> StandaloneHerder:
    """A StandaloneHerder over memory stores, not started. Its worker reaches no Kafka:
    create connectors STOPPED or PAUSED (KIP-980 ``initial_state``) so no task starts."""
    config = WorkerConfig({"bootstrap.servers": "127.0.0.1:1"})
    offset_store = MemoryOffsetBackingStore()
    status_store = MemoryStatusBackingStore()
    registry = builtin_registry()
    worker = Worker("w:8083", config, registry, offset_store, status_store)
    return StandaloneHerder(config, registry, worker, MemoryConfigBackingStore(),
                            offset_store, status_store)
