"""What the herder tests share: a StandaloneHerder over memory stores, a DistributedHerder
over (unstarted) Kafka stores, and a herder with only AbstractHerder's own behaviour
(``MinimalHerder``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NoReturn

from worker.config.worker_config import DistributedConfig, WorkerConfig
from worker.herder.abstract import AbstractHerder
from worker.herder.distributed.herder import DistributedHerder
from worker.herder.standalone import StandaloneHerder
from worker.plugins.registry import builtin_registry
from worker.runtime.worker import Worker
from worker.storage.base import TargetState
from worker.storage.kafka import (
    KafkaConfigBackingStore,
    KafkaOffsetBackingStore,
    KafkaStatusBackingStore,
)
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


class MinimalHerder(AbstractHerder):
    """Only what AbstractHerder leaves abstract, none of which these tests call."""

    def _unused(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise NotImplementedError

    start = stop = server_info = put_connector_config = patch_connector_config = _unused
    delete_connector = restart_connector = restart_task = pause_connector = _unused
    resume_connector = stop_connector = _unused
    connector_offsets = alter_connector_offsets = reset_connector_offsets = _unused
    worker_config_overrides = validate_worker_config = patch_worker_config = _unused
    delete_worker_config = worker_info = cluster_info = _unused


def new_distributed_herder(url: str = "http://w1:8083", **props: str) -> DistributedHerder:
    """A DistributedHerder advertising ``url`` (its worker id: the URL's host:port), over
    Kafka stores that nothing starts (no broker: bootstrap 127.0.0.1:1); ``props`` add or
    replace worker properties."""
    config = DistributedConfig({
        "bootstrap.servers": "127.0.0.1:1", "group.id": "g", "config.storage.topic": "c",
        "offset.storage.topic": "o", "status.storage.topic": "s", **props})
    offsets, statuses = KafkaOffsetBackingStore(config), KafkaStatusBackingStore(config)
    registry = builtin_registry()
    worker = Worker(url.split("://", 1)[1], config, registry, offsets, statuses)
    return DistributedHerder(config, registry, worker, KafkaConfigBackingStore(config),
                             offsets, statuses, url=url)
