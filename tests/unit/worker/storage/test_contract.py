"""Contract of the storage ABCs, run against every backend listed in ``conftest.BACKENDS``."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from worker.errors import StorageError
from worker.storage.base import (
    ClusterConfigState,
    ConfigBackingStore,
    ConnectorStatus,
    OffsetBackingStore,
    State,
    StatusBackingStore,
    TargetState,
    TaskId,
    TaskStatus,
    TopicStatus,
    WorkerConfigOverrides,
)
from worker.storage.sql import (
    SqlConfigBackingStore,
    SqlDatabase,
    SqlOffsetBackingStore,
    SqlStatusBackingStore,
)

ODD_NAME = "a b/ç"


# --------------------------------------------------------------------------- config store


def test_empty_config_snapshot(config_store: ConfigBackingStore) -> None:
    snap = config_store.snapshot()
    assert isinstance(snap, ClusterConfigState)
    assert snap.connector_configs == {}
    assert snap.target_states == {}
    assert snap.task_configs == {}


def test_put_connector_config_round_trips(config_store: ConfigBackingStore) -> None:
    config = {"connector.class": "FileStreamSource", "topic": "t", "empty": ""}
    config_store.put_connector_config("c1", config)
    snap = config_store.snapshot()
    assert snap.contains("c1")
    assert snap.connector_configs == {"c1": config}
    assert snap.target_state("c1") is TargetState.STARTED
    assert snap.tasks("c1") == []


def test_put_connector_config_replaces(config_store: ConfigBackingStore) -> None:
    config_store.put_connector_config("c1", {"a": "1", "b": "2"})
    config_store.put_connector_config("c1", {"a": "3"})
    assert config_store.snapshot().connector_configs == {"c1": {"a": "3"}}


def test_target_state_given_on_create(config_store: ConfigBackingStore) -> None:
    config_store.put_connector_config("c1", {"a": "1"}, TargetState.STOPPED)
    assert config_store.snapshot().target_state("c1") is TargetState.STOPPED


def test_update_without_target_state_keeps_it(config_store: ConfigBackingStore) -> None:
    config_store.put_connector_config("c1", {"a": "1"}, TargetState.PAUSED)
    config_store.put_connector_config("c1", {"a": "2"})
    snap = config_store.snapshot()
    assert snap.target_state("c1") is TargetState.PAUSED
    assert snap.connector_configs["c1"] == {"a": "2"}


@pytest.mark.parametrize("state", list(TargetState))
def test_put_target_state(config_store: ConfigBackingStore, state: TargetState) -> None:
    config_store.put_connector_config("c1", {"a": "1"})
    config_store.put_target_state("c1", state)
    assert config_store.snapshot().target_states == {"c1": state}


def test_task_configs_keep_order(config_store: ConfigBackingStore) -> None:
    config_store.put_connector_config("c1", {"a": "1"})
    tasks = [{"task.id": str(n), "file": f"f{n}"} for n in (3, 0, 11, 2)]
    config_store.put_task_configs("c1", tasks)
    assert config_store.snapshot().tasks("c1") == tasks


def test_put_task_configs_replaces_all(config_store: ConfigBackingStore) -> None:
    config_store.put_task_configs("c1", [{"n": "0"}, {"n": "1"}, {"n": "2"}])
    config_store.put_task_configs("c1", [{"n": "new"}])
    assert config_store.snapshot().tasks("c1") == [{"n": "new"}]
    config_store.put_task_configs("c1", [])
    assert config_store.snapshot().tasks("c1") == []


def test_task_configs_are_per_connector(config_store: ConfigBackingStore) -> None:
    config_store.put_task_configs("a", [{"n": "a0"}])
    config_store.put_task_configs("ab", [{"n": "ab0"}, {"n": "ab1"}])
    config_store.put_task_configs("a", [])
    snap = config_store.snapshot()
    assert snap.tasks("a") == []
    assert snap.tasks("ab") == [{"n": "ab0"}, {"n": "ab1"}]


def test_remove_connector_config_removes_everything(config_store: ConfigBackingStore) -> None:
    config_store.put_connector_config("c1", {"a": "1"}, TargetState.STOPPED)
    config_store.put_task_configs("c1", [{"n": "0"}])
    config_store.put_connector_config("c2", {"b": "2"}, TargetState.PAUSED)
    config_store.put_task_configs("c2", [{"n": "x"}])
    config_store.remove_connector_config("c1")
    snap = config_store.snapshot()
    assert not snap.contains("c1")
    assert "c1" not in snap.target_states
    assert snap.tasks("c1") == []
    # The other connector is untouched.
    assert snap.connector_configs == {"c2": {"b": "2"}}
    assert snap.target_states == {"c2": TargetState.PAUSED}
    assert snap.task_configs == {"c2": [{"n": "x"}]}
    # Re-creating starts from scratch: no leftover target state or tasks.
    config_store.put_connector_config("c1", {"a": "new"})
    snap = config_store.snapshot()
    assert snap.target_state("c1") is TargetState.STARTED
    assert snap.tasks("c1") == []


def test_remove_unknown_connector_is_a_no_op(config_store: ConfigBackingStore) -> None:
    config_store.put_connector_config("c1", {"a": "1"})
    config_store.remove_connector_config("nope")
    assert config_store.snapshot().connector_configs == {"c1": {"a": "1"}}


def test_snapshot_is_isolated_from_later_writes(config_store: ConfigBackingStore) -> None:
    config_store.put_connector_config("c1", {"a": "1"}, TargetState.STARTED)
    config_store.put_task_configs("c1", [{"n": "0"}])
    snap = config_store.snapshot()
    config_store.put_connector_config("c1", {"a": "2"})
    config_store.put_target_state("c1", TargetState.STOPPED)
    config_store.put_task_configs("c1", [])
    config_store.put_connector_config("c2", {"b": "1"})
    assert snap.connector_configs == {"c1": {"a": "1"}}
    assert snap.target_states == {"c1": TargetState.STARTED}
    assert snap.task_configs == {"c1": [{"n": "0"}]}


def test_mutating_a_snapshot_or_input_does_not_change_the_store(
        config_store: ConfigBackingStore) -> None:
    config = {"a": "1"}
    tasks = [{"n": "0"}]
    config_store.put_connector_config("c1", config)
    config_store.put_task_configs("c1", tasks)
    config["a"] = "changed by caller"
    tasks[0]["n"] = "changed by caller"
    tasks.append({"n": "1"})
    snap = config_store.snapshot()
    snap.connector_configs["c1"]["a"] = "mutated"
    snap.connector_configs["c9"] = {}
    snap.task_configs["c1"][0]["n"] = "mutated"
    snap.task_configs["c1"].append({"n": "extra"})
    snap.target_states["c1"] = TargetState.STOPPED
    fresh = config_store.snapshot()
    assert fresh.connector_configs == {"c1": {"a": "1"}}
    assert fresh.task_configs == {"c1": [{"n": "0"}]}
    assert fresh.target_states == {}


def test_view_follows_writes_and_later_writes_leave_an_old_view_alone(
        config_store: ConfigBackingStore) -> None:
    config_store.put_connector_config("c1", {"a": "1"}, TargetState.STARTED)
    config_store.put_task_configs("c1", [{"n": "0"}])
    view = config_store.view()
    assert view == config_store.snapshot()
    config_store.put_connector_config("c1", {"a": "2"})
    config_store.put_task_configs("c1", [])
    assert view.connector_configs == {"c1": {"a": "1"}}  # a write builds a new view
    assert view.task_configs == {"c1": [{"n": "0"}]}
    assert config_store.view().connector_configs == {"c1": {"a": "2"}}
    assert config_store.view().tasks("c1") == []


def test_odd_connector_names_round_trip(config_store: ConfigBackingStore) -> None:
    config = {"name": ODD_NAME, "pässwörd": "ünïcödé ✓ \"quoted\" \\ \n"}
    config_store.put_connector_config(ODD_NAME, config, TargetState.PAUSED)
    config_store.put_task_configs(ODD_NAME, [config])
    snap = config_store.snapshot()
    assert snap.connector_configs == {ODD_NAME: config}
    assert snap.target_states == {ODD_NAME: TargetState.PAUSED}
    assert snap.tasks(ODD_NAME) == [config]
    config_store.remove_connector_config(ODD_NAME)
    assert not config_store.snapshot().contains(ODD_NAME)


# --------------------------------------------------------------------------- offset store


def test_offsets_round_trip(offset_store: OffsetBackingStore) -> None:
    p1, p2 = {"file": "/tmp/a"}, {"file": "/tmp/b"}
    offset = {"position": 42, "nested": {"list": [1, 2.5, None, "x"]}, "flag": True}
    offset_store.put("c1", [(p1, offset), (p2, {"position": 7})])
    got = offset_store.get("c1", [p1, p2, {"file": "unknown"}])
    assert got == {
        '{"file":"/tmp/a"}': offset,
        '{"file":"/tmp/b"}': {"position": 7},
    }
    assert sorted(offset_store.get_all("c1"), key=repr) == sorted(
        [(p1, offset), (p2, {"position": 7})], key=repr)


def test_offsets_of_unknown_connector_are_empty(offset_store: OffsetBackingStore) -> None:
    assert offset_store.get("nope", [{"p": 1}]) == {}
    assert offset_store.get_all("nope") == []
    assert offset_store.get("nope", []) == {}


def test_offset_put_overwrites(offset_store: OffsetBackingStore) -> None:
    offset_store.put("c1", [({"p": 1}, {"o": 1})])
    offset_store.put("c1", [({"p": 1}, {"o": 2})])
    assert offset_store.get_all("c1") == [({"p": 1}, {"o": 2})]


def test_offset_none_deletes_partition(offset_store: OffsetBackingStore) -> None:
    offset_store.put("c1", [({"p": 1}, {"o": 1}), ({"p": 2}, {"o": 2})])
    offset_store.put("c1", [({"p": 1}, None), ({"p": "never stored"}, None)])
    assert offset_store.get("c1", [{"p": 1}, {"p": 2}]) == {'{"p":2}': {"o": 2}}
    assert offset_store.get_all("c1") == [({"p": 2}, {"o": 2})]


def test_last_write_of_a_partition_in_one_put_wins(offset_store: OffsetBackingStore) -> None:
    offset_store.put("c1", [({"p": 1}, {"o": 1}), ({"p": 1}, None)])
    offset_store.put("c1", [({"p": 2}, None), ({"p": 2}, {"o": 2})])
    assert offset_store.get_all("c1") == [({"p": 2}, {"o": 2})]


def test_offsets_are_namespaced_by_connector(offset_store: OffsetBackingStore) -> None:
    offset_store.put("a", [({"p": 1}, {"o": "a"})])
    offset_store.put("ab", [({"p": 1}, {"o": "ab"})])
    offset_store.put("a", [({"p": 1}, None)])
    assert offset_store.get_all("a") == []
    assert offset_store.get("ab", [{"p": 1}]) == {'{"p":1}': {"o": "ab"}}


def test_partition_key_order_does_not_matter(offset_store: OffsetBackingStore) -> None:
    offset_store.put("c1", [({"b": 1, "a": "x"}, {"o": 1})])
    offset_store.put("c1", [({"a": "x", "b": 1}, {"o": 2})])
    assert offset_store.get("c1", [{"a": "x", "b": 1}]) == {'{"a":"x","b":1}': {"o": 2}}
    assert offset_store.get_all("c1") == [({"a": "x", "b": 1}, {"o": 2})]
    offset_store.put("c1", [({"b": 1, "a": "x"}, None)])
    assert offset_store.get_all("c1") == []


def test_many_partitions_in_one_put(offset_store: OffsetBackingStore) -> None:
    partitions = [{"file": f"f{n}", "shard": n} for n in range(1200)]
    offset_store.put("c1", [(p, {"pos": p["shard"] * 10}) for p in partitions])
    got = offset_store.get("c1", partitions)
    assert len(got) == 1200
    assert got['{"file":"f1199","shard":1199}'] == {"pos": 11990}
    assert len(offset_store.get_all("c1")) == 1200
    offset_store.put("c1", [(p, None) for p in partitions[:1000]])
    assert len(offset_store.get_all("c1")) == 200


def test_bad_offset_put_writes_nothing(offset_store: OffsetBackingStore) -> None:
    offset_store.put("c1", [({"p": 0}, {"o": 0})])
    with pytest.raises(StorageError):
        offset_store.put("c1", [({"p": 0}, None), ({"p": 1}, {"o": 1}),
                                ({"p": 2}, {"o": object()})])
    assert offset_store.get_all("c1") == [({"p": 0}, {"o": 0})]


def test_offsets_are_copies(offset_store: OffsetBackingStore) -> None:
    partition = {"p": 1}
    offset: dict[str, Any] = {"o": [1]}
    offset_store.put("c1", [(partition, offset)])
    offset["o"].append(2)
    partition["p"] = 2
    got = offset_store.get("c1", [{"p": 1}])
    got['{"p":1}']["o"].append(3)
    pairs = offset_store.get_all("c1")
    pairs[0][0]["p"] = 9
    pairs[0][1]["o"] = "mutated"
    assert offset_store.get_all("c1") == [({"p": 1}, {"o": [1]})]


def test_unicode_connector_and_partition(offset_store: OffsetBackingStore) -> None:
    partition = {"fichier": "/données/ç ✓.txt"}
    offset_store.put(ODD_NAME, [(partition, {"ligne": "é"})])
    assert offset_store.get(ODD_NAME, [partition]) == {
        '{"fichier":"/donn\\u00e9es/\\u00e7 \\u2713.txt"}': {"ligne": "é"}}
    assert offset_store.get_all(ODD_NAME) == [(partition, {"ligne": "é"})]


# --------------------------------------------------------------------------- status store


def test_connector_status_round_trips(status_store: StatusBackingStore) -> None:
    assert status_store.get_connector("c1") is None
    status = ConnectorStatus("c1", State.FAILED, "w1:8083", generation=7,
                             trace="Traceback ...\n  ✗ boom")
    status_store.put_connector(status)
    assert status_store.get_connector("c1") == status
    newer = ConnectorStatus("c1", State.RUNNING, "w2:8083", generation=8)
    status_store.put_connector(newer)
    assert status_store.get_connector("c1") == newer


def test_task_status_round_trips(status_store: StatusBackingStore) -> None:
    task = TaskId("c1", 0)
    assert status_store.get_task(task) is None
    status = TaskStatus(task, State.RUNNING, "w1", generation=3)
    status_store.put_task(status)
    assert status_store.get_task(task) == status
    failed = TaskStatus(task, State.FAILED, "w2", generation=2**40, trace="trace")
    status_store.put_task(failed)
    assert status_store.get_task(task) == failed
    assert status_store.get_task(TaskId("c1", 1)) is None


@pytest.mark.parametrize("state", list(State))
def test_every_state_round_trips(status_store: StatusBackingStore, state: State) -> None:
    status_store.put_connector(ConnectorStatus("c1", state, "w"))
    status_store.put_task(TaskStatus(TaskId("c1", 0), state, "w"))
    connector = status_store.get_connector("c1")
    task = status_store.get_task(TaskId("c1", 0))
    assert connector is not None and connector.state is state
    assert task is not None and task.state is state


def test_get_tasks_ordered_by_number(status_store: StatusBackingStore) -> None:
    for n in (10, 2, 0, 1):
        status_store.put_task(TaskStatus(TaskId("c1", n), State.RUNNING, f"w{n}"))
    status_store.put_task(TaskStatus(TaskId("c10", 5), State.RUNNING, "other"))
    tasks = status_store.get_tasks("c1")
    assert [t.id for t in tasks] == [TaskId("c1", n) for n in (0, 1, 2, 10)]
    assert [t.worker_id for t in tasks] == ["w0", "w1", "w2", "w10"]
    assert status_store.get_tasks("nope") == []


def test_delete_connector_removes_its_tasks_not_topics(status_store: StatusBackingStore) -> None:
    status_store.put_connector(ConnectorStatus("a", State.RUNNING, "w"))
    status_store.put_task(TaskStatus(TaskId("a", 0), State.RUNNING, "w"))
    status_store.put_task(TaskStatus(TaskId("a", 1), State.RUNNING, "w"))
    status_store.put_topic(TopicStatus("t", "a", 0, 1))
    other = ConnectorStatus("ab", State.PAUSED, "w")
    other_task = TaskStatus(TaskId("ab", 0), State.PAUSED, "w")
    status_store.put_connector(other)
    status_store.put_task(other_task)
    status_store.delete_connector("a")
    assert status_store.get_connector("a") is None
    assert status_store.get_tasks("a") == []
    assert status_store.get_task(TaskId("a", 1)) is None
    assert status_store.get_topics("a") == [TopicStatus("t", "a", 0, 1)]
    assert status_store.get_connector("ab") == other
    assert status_store.get_tasks("ab") == [other_task]


def test_delete_task(status_store: StatusBackingStore) -> None:
    for n in range(3):
        status_store.put_task(TaskStatus(TaskId("c1", n), State.RUNNING, "w"))
    status_store.delete_task(TaskId("c1", 1))
    assert status_store.get_task(TaskId("c1", 1)) is None
    assert [t.id.task for t in status_store.get_tasks("c1")] == [0, 2]


def test_deleting_unknown_statuses_is_a_no_op(status_store: StatusBackingStore) -> None:
    status_store.put_connector(ConnectorStatus("c1", State.RUNNING, "w"))
    status_store.delete_connector("nope")
    status_store.delete_task(TaskId("nope", 0))
    status_store.delete_task(TaskId("c1", 99))
    status_store.delete_topics("nope")
    assert status_store.get_connector("c1") == ConnectorStatus("c1", State.RUNNING, "w")


def test_put_topic_keeps_first_discovery(status_store: StatusBackingStore) -> None:
    first = TopicStatus("orders", "c1", task=0, discover_timestamp=1_000)
    status_store.put_topic(first)
    status_store.put_topic(TopicStatus("orders", "c1", task=3, discover_timestamp=9_000))
    assert status_store.get_topics("c1") == [first]


def test_topics_ordered_by_name_and_per_connector(status_store: StatusBackingStore) -> None:
    for name in ("zeta", "Alpha", "alpha", "beta"):
        status_store.put_topic(TopicStatus(name, "c1", 0, 5))
    status_store.put_topic(TopicStatus("zeta", "c2", 1, 6))
    assert [t.topic for t in status_store.get_topics("c1")] == ["Alpha", "alpha", "beta", "zeta"]
    assert status_store.get_topics("c2") == [TopicStatus("zeta", "c2", 1, 6)]
    status_store.delete_topics("c1")
    assert status_store.get_topics("c1") == []
    assert status_store.get_topics("c2") == [TopicStatus("zeta", "c2", 1, 6)]
    # After a reset the topic is discovered anew, with a new timestamp.
    status_store.put_topic(TopicStatus("zeta", "c1", 2, 7))
    assert status_store.get_topics("c1") == [TopicStatus("zeta", "c1", 2, 7)]


def test_odd_names_in_statuses(status_store: StatusBackingStore) -> None:
    status_store.put_connector(ConnectorStatus(ODD_NAME, State.RUNNING, "wörker"))
    status_store.put_task(TaskStatus(TaskId(ODD_NAME, 0), State.RUNNING, "wörker"))
    status_store.put_topic(TopicStatus("tópic.ç", ODD_NAME, 0, 1))
    assert status_store.get_connector(ODD_NAME) == ConnectorStatus(
        ODD_NAME, State.RUNNING, "wörker")
    assert [t.id for t in status_store.get_tasks(ODD_NAME)] == [TaskId(ODD_NAME, 0)]
    assert status_store.get_topics(ODD_NAME) == [TopicStatus("tópic.ç", ODD_NAME, 0, 1)]


# --------------------------------------------------------------------------- worker config

#: Raw overrides, as the API stores them: placeholders unresolved, any Unicode.
OVERRIDES = {"listeners.https.ssl.keystore.location": "/etc/tls/wörker.p12",
             "listeners.https.ssl.keystore.password": "${file:/etc/tls/pw.properties:ks}"}


def test_no_worker_config_at_first(config_store: ConfigBackingStore) -> None:
    stored = config_store.worker_config()
    assert stored.properties == {}
    # Kafka: no worker-config record read (-1); SQL and memory: no revision yet (0).
    assert stored.version in (-1, 0)


def test_worker_config_round_trips_and_every_write_is_a_new_version(
        config_store: ConfigBackingStore) -> None:
    versions = [config_store.worker_config().version]
    config_store.put_worker_config(OVERRIDES)
    stored = config_store.worker_config()
    assert stored.properties == OVERRIDES
    versions.append(stored.version)
    # A write replaces the whole set; writing the same set again is still a new version
    # (a worker re-reads a keystore replaced in place at the same path).
    config_store.put_worker_config({"listeners.https.ssl.client.auth": "required"})
    assert config_store.worker_config().properties == {
        "listeners.https.ssl.client.auth": "required"}
    versions.append(config_store.worker_config().version)
    config_store.put_worker_config({"listeners.https.ssl.client.auth": "required"})
    versions.append(config_store.worker_config().version)
    config_store.clear_worker_config()
    cleared = config_store.worker_config()
    assert cleared.properties == {}
    versions.append(cleared.version)
    assert versions == sorted(set(versions)), versions  # strictly increasing


def test_worker_config_is_separate_from_connector_configs(
        config_store: ConfigBackingStore) -> None:
    config_store.put_connector_config("c1", {"a": "1"})
    config_store.put_worker_config(OVERRIDES)
    config_store.remove_connector_config("c1")
    assert config_store.snapshot().connector_configs == {}
    assert config_store.worker_config().properties == OVERRIDES
    config_store.clear_worker_config()
    config_store.put_connector_config("c2", {"b": "2"})
    assert config_store.snapshot().connector_configs == {"c2": {"b": "2"}}
    assert config_store.worker_config().properties == {}


def test_worker_config_reads_are_copies(config_store: ConfigBackingStore) -> None:
    given = dict(OVERRIDES)
    config_store.put_worker_config(given)
    given["listeners.https.ssl.keystore.type"] = "PEM"
    read = config_store.worker_config()
    read.properties["listeners.https.ssl.cipher.suites"] = "mutated"
    assert config_store.worker_config() == WorkerConfigOverrides(read.version, OVERRIDES)


def test_bad_worker_config_writes_nothing(config_store: ConfigBackingStore) -> None:
    config_store.put_worker_config(OVERRIDES)
    before = config_store.worker_config()
    bad: Any = {"listeners.https.ssl.keystore.password": 1234}
    with pytest.raises(StorageError, match="worker config") as caught:
        config_store.put_worker_config(bad)
    assert "1234" not in str(caught.value)
    assert config_store.worker_config() == before


# --------------------------------------------------------------------------- concurrency


def test_concurrent_writers(backend: Any) -> None:
    threads_n, rounds = 8, 200
    barrier = threading.Barrier(threads_n + 1)
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        try:
            barrier.wait(timeout=30)
            for i in range(rounds):
                backend.offsets.put("c1", [({"thread": n}, {"i": i}), ({"shared": 1}, {"i": i})])
                backend.status.put_task(TaskStatus(TaskId("c1", n), State.RUNNING, f"w{n}", i))
                backend.status.put_topic(TopicStatus(f"t{i % 5}", f"c{n}", n, i))
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    def reader() -> None:
        try:
            barrier.wait(timeout=30)
            for _ in range(rounds):
                backend.offsets.get_all("c1")
                backend.status.get_tasks("c1")
                backend.config.snapshot()
        except BaseException as exc:
            errors.append(exc)

    workers = [threading.Thread(target=writer, args=(n,)) for n in range(threads_n)]
    workers.append(threading.Thread(target=reader))
    for t in workers:
        t.start()
    for t in workers:
        t.join(timeout=120)
    assert not [t for t in workers if t.is_alive()], "writers did not finish"
    assert errors == []
    final = backend.offsets.get("c1", [{"thread": n} for n in range(threads_n)])
    assert final == {f'{{"thread":{n}}}': {"i": rounds - 1} for n in range(threads_n)}
    assert backend.offsets.get("c1", [{"shared": 1}]) == {'{"shared":1}': {"i": rounds - 1}}
    assert len(backend.offsets.get_all("c1")) == threads_n + 1
    tasks = backend.status.get_tasks("c1")
    assert [(t.id.task, t.worker_id, t.generation) for t in tasks] == [
        (n, f"w{n}", rounds - 1) for n in range(threads_n)]
    for n in range(threads_n):
        assert backend.status.get_topics(f"c{n}") == [
            TopicStatus(f"t{i}", f"c{n}", n, i) for i in range(5)]


# --------------------------------------------------------------------------- persistence


def test_state_survives_reopening(persistent_factory: Any, tmp_path: Path) -> None:
    first = persistent_factory.build(tmp_path)
    first.start()
    first.config.put_connector_config(ODD_NAME, {"k": "v"}, TargetState.STOPPED)
    first.config.put_task_configs(ODD_NAME, [{"t": "0"}, {"t": "1"}])
    first.offsets.put(ODD_NAME, [({"p": 1}, {"o": 1})])
    first.status.put_connector(ConnectorStatus(ODD_NAME, State.STOPPED, "w", 4, "tr"))
    first.status.put_task(TaskStatus(TaskId(ODD_NAME, 1), State.FAILED, "w", 4, "tr"))
    first.status.put_topic(TopicStatus("t", ODD_NAME, 1, 123))
    first.config.put_worker_config(OVERRIDES)
    worker_config = first.config.worker_config()
    first.stop()

    second = persistent_factory.build(tmp_path)
    second.start()
    try:
        snap = second.config.snapshot()
        assert snap.connector_configs == {ODD_NAME: {"k": "v"}}
        assert snap.target_states == {ODD_NAME: TargetState.STOPPED}
        assert snap.tasks(ODD_NAME) == [{"t": "0"}, {"t": "1"}]
        assert second.offsets.get_all(ODD_NAME) == [({"p": 1}, {"o": 1})]
        assert second.status.get_connector(ODD_NAME) == ConnectorStatus(
            ODD_NAME, State.STOPPED, "w", 4, "tr")
        assert second.status.get_tasks(ODD_NAME) == [
            TaskStatus(TaskId(ODD_NAME, 1), State.FAILED, "w", 4, "tr")]
        assert second.status.get_topics(ODD_NAME) == [TopicStatus("t", ODD_NAME, 1, 123)]
        assert second.config.worker_config() == worker_config
        # The version keeps growing from where it was: workers compare versions.
        second.config.clear_worker_config()
        assert second.config.worker_config().version > worker_config.version
    finally:
        second.stop()


# --------------------------------------------------------------------------- SQL specifics


@pytest.fixture
def sql_database(tmp_path: Path) -> SqlDatabase:
    return SqlDatabase(f"sqlite:///{tmp_path / 'nested' / 'dir' / 'connect.db'}")


def test_sql_stores_share_one_engine_until_the_last_stop(sql_database: SqlDatabase) -> None:
    config, offsets = SqlConfigBackingStore(sql_database), SqlOffsetBackingStore(sql_database)
    config.start()
    offsets.start()
    with sql_database.engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == 10_000
    config.stop()
    offsets.put("c", [({"p": 1}, {"o": 1})])  # still open: the offset store uses it
    offsets.stop()
    offsets.stop()  # an extra stop is harmless
    with pytest.raises(StorageError, match="not started"):
        offsets.get_all("c")


def test_sql_use_before_start_raises_storage_error(sql_database: SqlDatabase) -> None:
    with pytest.raises(StorageError, match="not started"):
        SqlStatusBackingStore(sql_database).get_connector("c")


def test_sql_errors_become_storage_errors_without_values(sql_database: SqlDatabase) -> None:
    store = SqlConfigBackingStore(sql_database)
    store.start()
    try:
        with sql_database.engine.begin() as conn:
            conn.execute(text("DROP TABLE connect_connector_configs"))
        with pytest.raises(StorageError) as caught:
            store.put_connector_config("c", {"database.password": "hunter2-secret"})
        assert caught.value.__cause__ is not None
        chain = f"{caught.value} {caught.value.__cause__}"
        assert "hunter2-secret" not in chain
        assert "connector config" in str(caught.value)
    finally:
        store.stop()


def test_sql_invalid_url_raises_storage_error() -> None:
    with pytest.raises(StorageError):
        SqlDatabase("not a url")


def test_sql_in_memory_database_is_usable_across_threads() -> None:
    database = SqlDatabase("sqlite://")
    store = SqlOffsetBackingStore(database)
    store.start()
    try:
        def put(n: int) -> None:
            store.put("c", [({"p": n}, {"o": n})])

        workers = [threading.Thread(target=put, args=(n,)) for n in range(4)]
        for t in workers:
            t.start()
        for t in workers:
            t.join(timeout=30)
        assert sorted(p["p"] for p, _ in store.get_all("c")) == [0, 1, 2, 3]
    finally:
        store.stop()
