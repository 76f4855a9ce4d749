"""What the StandaloneHerder tests share: a herder over memory stores."""

from __future__ import annotations

from collections.abc import Iterable

from worker.config.worker_config import WorkerConfig
from worker.herder.standalone import StandaloneHerder
from worker.plugins.registry import builtin_registry
from worker.runtime.worker import Worker
from worker.storage.base import TargetState
from worker.storage.memory import (
    MemoryConfigBackingStore,
    MemoryOffsetBackingStore,
    MemoryStatusBackingStore,
)

#: A one-task generator connector's config.
GENERATOR = {"connector.class": "SequenceGenerator", "topic": "t", "tasks.max": "1"}


def new_standalone_herder(stored: Iterable[str] = ()) -> StandaloneHerder:
    """A StandaloneHerder over memory stores, not started. Its worker reaches no Kafka:
    create connectors STOPPED or PAUSED (KIP-980 ``initial_state``) so no task starts.
    ``stored``: connectors already in its config store (``GENERATOR``, STOPPED), as a
    restarted worker finds them."""
    config = WorkerConfig({"bootstrap.servers": "127.0.0.1:1"})
    offset_store = MemoryOffsetBackingStore()
    status_store = MemoryStatusBackingStore()
    config_store = MemoryConfigBackingStore()
    for name in stored:
        config_store.put_connector_config(name, GENERATOR)
        config_store.put_target_state(name, TargetState.STOPPED)
    registry = builtin_registry()
    worker = Worker("w:8083", config, registry, offset_store, status_store)
    return StandaloneHerder(config, registry, worker, config_store, offset_store,
                            status_store)
