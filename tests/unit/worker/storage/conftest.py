"""Backends the storage contract suite runs against.

Each backend is a ``BackendFactory``: given a directory, it builds a config, offset and
status store over the state kept there (the memory backend ignores it). Calling a
persistent factory twice on the same directory reopens the same state. A new backend
(Kafka) joins the suite by adding one entry to ``BACKENDS``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from worker.storage.base import ConfigBackingStore, OffsetBackingStore, StatusBackingStore
from worker.storage.cached import CachedConfigBackingStore, CachedStatusBackingStore
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
    build: Callable[[Path], Backend]
    persistent: bool


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


BACKENDS = [
    BackendFactory("memory", memory_backend, persistent=False),
    BackendFactory("sql", sql_backend, persistent=True),
    BackendFactory("cached-sql", cached_sql_backend, persistent=True),
]


@pytest.fixture(params=BACKENDS, ids=lambda f: f.name)
def backend_factory(request: pytest.FixtureRequest) -> BackendFactory:
    return request.param


@pytest.fixture(params=[f for f in BACKENDS if f.persistent], ids=lambda f: f.name)
def persistent_factory(request: pytest.FixtureRequest) -> BackendFactory:
    return request.param


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
