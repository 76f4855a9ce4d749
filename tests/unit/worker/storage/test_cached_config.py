"""The standalone worker's config cache applies each successful write to its snapshot
instead of reloading every connector from SQL (issue #19: a create cost a reload of all 500
connectors), and the result is always what a reload would give; a failed write drops the
cache."""

from __future__ import annotations

import random
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from worker.storage.base import ClusterConfigState, StorageError, TargetState
from worker.storage.cached import CachedConfigBackingStore
from worker.storage.sql import SqlConfigBackingStore, SqlDatabase


class CountingStore(SqlConfigBackingStore):
    def __init__(self, database: SqlDatabase) -> None:
        super().__init__(database)
        self.loads = 0
        self.fail_next = False

    def snapshot(self) -> ClusterConfigState:
        self.loads += 1
        return super().snapshot()

    def put_connector_config(self, connector: str, config: Mapping[str, str],
                             target_state: TargetState | None = None) -> None:
        if self.fail_next:
            self.fail_next = False
            super().put_connector_config(connector, config, target_state)
            raise StorageError("the database went away after the write")
        super().put_connector_config(connector, config, target_state)


@pytest.fixture
def stores(tmp_path: Path) -> tuple[CachedConfigBackingStore, CountingStore]:
    database = SqlDatabase(f"sqlite:///{tmp_path / 'connect.db'}")
    inner = CountingStore(database)
    cached = CachedConfigBackingStore(inner)
    cached.start()
    return cached, inner


def _as_loaded(inner: CountingStore) -> ClusterConfigState:
    return SqlConfigBackingStore.snapshot(inner)  # without counting


def test_writes_update_the_cached_snapshot_without_reloading(
        stores: tuple[CachedConfigBackingStore, CountingStore]) -> None:
    cached, inner = stores
    rng = random.Random(19)
    names = [f"c{i}" for i in range(6)]
    cached.view()
    assert inner.loads == 1
    writes: list[tuple[str, Any]] = []
    for step in range(300):
        name = rng.choice(names)
        kind = rng.choice(["config", "config+state", "tasks", "no-tasks", "state", "remove"])
        if kind == "config":
            cached.put_connector_config(name, {"step": str(step)})
        elif kind == "config+state":
            cached.put_connector_config(name, {"step": str(step)},
                                        rng.choice(list(TargetState)))
        elif kind == "tasks":
            cached.put_task_configs(name, [{"task": str(t), "step": str(step)}
                                           for t in range(rng.randint(1, 3))])
        elif kind == "no-tasks":
            cached.put_task_configs(name, [])
        elif kind == "state":
            cached.put_target_state(name, rng.choice(list(TargetState)))
        else:
            cached.remove_connector_config(name)
        writes.append((kind, name))
        assert cached.view() == _as_loaded(inner), writes[-5:]
    assert inner.loads == 1  # every write was applied to the cache, none reloaded it


def test_a_reader_keeps_the_snapshot_it_holds(
        stores: tuple[CachedConfigBackingStore, CountingStore]) -> None:
    cached, _ = stores
    cached.put_connector_config("a", {"k": "1"}, TargetState.STARTED)
    held = cached.view()
    cached.put_connector_config("a", {"k": "2"})
    cached.put_task_configs("a", [{"t": "0"}])
    cached.put_target_state("a", TargetState.PAUSED)
    cached.put_connector_config("b", {"k": "3"})
    assert held == ClusterConfigState({"a": {"k": "1"}}, {"a": TargetState.STARTED}, {})
    assert cached.view().connector_configs == {"a": {"k": "2"}, "b": {"k": "3"}}


def test_a_failed_write_drops_the_cache(
        stores: tuple[CachedConfigBackingStore, CountingStore]) -> None:
    cached, inner = stores
    cached.put_connector_config("a", {"k": "1"})
    cached.view()
    loads = inner.loads
    inner.fail_next = True
    with pytest.raises(StorageError):
        cached.put_connector_config("a", {"k": "2"})
    # What the store holds after a failure is not known: the next read loads it.
    assert cached.view().connector_configs == {"a": {"k": "2"}}
    assert inner.loads == loads + 1


def test_a_caller_changing_its_input_after_the_write_changes_nothing(
        stores: tuple[CachedConfigBackingStore, CountingStore]) -> None:
    cached, inner = stores
    cached.view()
    config = {"k": "1"}
    tasks = [{"t": "0"}]
    cached.put_connector_config("a", config)
    cached.put_task_configs("a", tasks)
    config["k"] = "changed"
    tasks[0]["t"] = "changed"
    assert cached.view() == _as_loaded(inner)
