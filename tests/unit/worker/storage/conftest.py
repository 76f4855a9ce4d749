"""Backends the storage contract suite runs against.

Each backend is a ``BackendFactory``: given a directory, it builds a config, offset and
status store over the state kept there (the memory backend ignores it). Calling a
persistent factory twice on the same directory reopens the same state. A new backend
joins the suite by adding one entry to ``BACKENDS``.

A factory that needs fixtures (the Kafka backend needs the session's broker) names them
in ``fixtures``; they are passed to ``build`` as keyword arguments, and its ``marks``
(``integration``) go on every test it parametrizes.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from worker.config.worker_config import DistributedConfig
from worker.storage.base import ConfigBackingStore, OffsetBackingStore, StatusBackingStore
from worker.storage.cached import CachedConfigBackingStore, CachedStatusBackingStore
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
from worker.storage.sql import (
    SqlConfigBackingStore,
    SqlDatabase,
    SqlOffsetBackingStore,
    SqlStatusBackingStore,
)


@dataclass
class Backend:
    """The three stores of one backend, started and stopped together."""

    config: ConfigBackingStore
    offsets: OffsetBackingStore
    status: StatusBackingStore

    def start(self) -> None:
        for store in (self.config, self.offsets, self.status):
            store.start()

    def stop(self) -> None:
        for store in (self.status, self.offsets, self.config):
            store.stop()


@dataclass(frozen=True)
class BackendFactory:
    name: str
    build: Callable[..., Backend]
    persistent: bool
    fixtures: tuple[str, ...] = ()
    marks: tuple[pytest.MarkDecorator, ...] = ()

    def bind(self, request: pytest.FixtureRequest) -> BackendFactory:
        """This factory with its fixtures bound: ``build(directory)`` then suffices."""
        if not self.fixtures:
            return self
        values = {name: request.getfixturevalue(name) for name in self.fixtures}
        return replace(self, build=partial(self.build, **values), fixtures=())


def memory_backend(_directory: Path) -> Backend:
    return Backend(MemoryConfigBackingStore(), MemoryOffsetBackingStore(),
                   MemoryStatusBackingStore())


def sqlite_url(directory: Path) -> str:
    return f"sqlite:///{directory / 'connect.db'}"


def sql_backend(directory: Path) -> Backend:
    database = SqlDatabase(sqlite_url(directory))
    return Backend(SqlConfigBackingStore(database), SqlOffsetBackingStore(database),
                   SqlStatusBackingStore(database))


def cached_sql_backend(directory: Path) -> Backend:
    """What the standalone worker runs: SQL behind the write-through read caches."""
    inner = sql_backend(directory)
    return Backend(CachedConfigBackingStore(inner.config), inner.offsets,
                   CachedStatusBackingStore(inner.status))


def kafka_backend(directory: Path, *, kafka_bootstrap: str) -> Backend:
    """Three internal topics on the session's Kafka; their names are kept in ``directory``,
    so building again on the same directory reopens the same topics."""
    names_file = directory / "kafka-topics.json"
    if names_file.exists():
        names: dict[str, Any] = json.loads(names_file.read_text())
    else:
        run = uuid.uuid4().hex[:12]
        names = {key: f"contract-{run}-{kind}" for key, kind in (
            ("config.storage.topic", "configs"), ("offset.storage.topic", "offsets"),
            ("status.storage.topic", "status"))}
        names_file.write_text(json.dumps(names))
    config = DistributedConfig({
        "bootstrap.servers": kafka_bootstrap, "group.id": names["config.storage.topic"],
        **names, "config.storage.replication.factor": "-1",
        "offset.storage.replication.factor": "-1", "status.storage.replication.factor": "-1",
    })
    return Backend(KafkaConfigBackingStore(config), KafkaOffsetBackingStore(config),
                   KafkaStatusBackingStore(config))


BACKENDS = [
    BackendFactory("memory", memory_backend, persistent=False),
    BackendFactory("sql", sql_backend, persistent=True),
    BackendFactory("cached-sql", cached_sql_backend, persistent=True),
    BackendFactory("kafka", kafka_backend, persistent=True, fixtures=("kafka_bootstrap",),
                   marks=(pytest.mark.integration,)),
]


def _params(factories: list[BackendFactory]) -> list[Any]:
    return [pytest.param(f, id=f.name, marks=f.marks) for f in factories]


@pytest.fixture(params=_params(BACKENDS))
def backend_factory(request: pytest.FixtureRequest) -> BackendFactory:
    return request.param.bind(request)


@pytest.fixture(params=_params([f for f in BACKENDS if f.persistent]))
def persistent_factory(request: pytest.FixtureRequest) -> BackendFactory:
    return request.param.bind(request)


@pytest.fixture
def backend(backend_factory: BackendFactory, tmp_path: Path) -> Iterator[Backend]:
    built = backend_factory.build(tmp_path)
    built.start()
    try:
        yield built
    finally:
        built.stop()


@pytest.fixture
def config_store(backend: Backend) -> ConfigBackingStore:
    return backend.config


@pytest.fixture
def offset_store(backend: Backend) -> OffsetBackingStore:
    return backend.offsets


@pytest.fixture
def status_store(backend: Backend) -> StatusBackingStore:
    return backend.status
