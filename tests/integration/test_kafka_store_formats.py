"""Compatibility of the Kafka stores with Apache Kafka Connect's internal-topic records.

Records written by hand here are the bytes Java's workers write (JsonConverter with
``schemas.enable=false``; formats checked against ``KafkaConfigBackingStore``,
``KafkaStatusBackingStore`` and ``OffsetUtils``); our stores must read them, and what our
stores write must be exactly those bytes, in the partition Java's partitioner picks.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest
from confluent_kafka.admin import AdminClient

from tests.integration.test_kafka_log import distributed_config, produce, read_raw, started
from tests.support import create_topic
from worker.config.worker_config import DistributedConfig
from worker.storage.base import (
    ConnectorStatus,
    State,
    TargetState,
    TaskId,
    TaskStatus,
    TopicStatus,
    WorkerConfigOverrides,
)
from worker.storage.kafka import (
    ConfigUpdate,
    KafkaConfigBackingStore,
    KafkaOffsetBackingStore,
    KafkaStatusBackingStore,
    LogRecord,
    RestartRequest,
    StatusUpdate,
)

pytestmark = pytest.mark.integration

OFFSET_PARTITIONS, STATUS_PARTITIONS = 5, 3
COMPACT = {"cleanup.policy": "compact"}


def murmur2(data: bytes) -> int:
    """Kafka's ``Utils.murmur2`` (the default partitioner's hash), as an unsigned int."""
    m, length = 0x5BD1E995, len(data)
    h = (0x9747B28C ^ length) & 0xFFFFFFFF
    for i in range(0, length - length % 4, 4):
        k = int.from_bytes(data[i:i + 4], "little")
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> 24
        h = ((h * m) & 0xFFFFFFFF) ^ ((k * m) & 0xFFFFFFFF)
    tail = data[length - length % 4:]
    if len(tail) == 3:
        h ^= tail[2] << 16
    if len(tail) >= 2:
        h ^= tail[1] << 8
    if tail:
        h = ((h ^ tail[0]) * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    return h ^ (h >> 15)


def java_partition(key: bytes, partitions: int) -> int:
    return (murmur2(key) & 0x7FFFFFFF) % partitions


@pytest.fixture
def config(kafka_bootstrap: str, unique_topic: Callable[..., str]) -> DistributedConfig:
    return distributed_config(kafka_bootstrap, unique_topic(), **{
        "offset.storage.partitions": str(OFFSET_PARTITIONS),
        "status.storage.partitions": str(STATUS_PARTITIONS)})


def by_key(records: list[LogRecord]) -> dict[bytes | None, list[bytes | None]]:
    """Values per key, in log order (one key always lives in one partition)."""
    values: dict[bytes | None, list[bytes | None]] = {}
    for record in records:
        values.setdefault(record.key, []).append(record.value)
    return values


def test_murmur2_matches_kafka() -> None:
    cases = {b"21": -973932308, b"foobar": -790332482,
             b"a-little-bit-long-string": -985981536,
             b"a-little-bit-longer-string": -1486304829,
             b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971, b"abc": 479470107}
    for data, signed in cases.items():  # Kafka's UtilsTest
        assert murmur2(data) == signed & 0xFFFFFFFF


# --------------------------------------------------------------------------- reading Java's


def test_config_records_written_by_java_are_read(
        config: DistributedConfig, kafka_bootstrap: str, kafka_admin: AdminClient,
        request: pytest.FixtureRequest, caplog: pytest.LogCaptureFixture) -> None:
    topic = create_topic(kafka_admin, config.get("config.storage.topic"), config=COMPACT)
    before = [
        (b"connector-my-conn", b'{"properties":{"connector.class":"FileStreamSource",'
                               b'"tasks.max":"2","file":"/tmp/\xc3\xbc.txt"}}'),
        (b"task-my-conn-0", b'{"properties":{"task.class":"T","file":"a"}}'),
        (b"task-my-conn-1", b'{"properties":{"task.class":"T","file":"b"}}'),
        (b"commit-my-conn", b'{"tasks":2}'),
        (b"target-state-my-conn", b'{"state":"PAUSED","state.v2":"STOPPED"}'),
        (b"connector-legacy", b'{"properties":{"k":"v"}}'),
        (b"target-state-legacy", b'{"state":"PAUSED"}'),  # written before KIP-875
        (b"session-key", b'{"key":"c2VjcmV0","algorithm":"HmacSHA256",'
                         b'"creation-timestamp":1700000000000}'),
        (b"worker-config", b'{"version":0,"properties":{"offset.flush.interval.ms":"1000"}}'),
        (b"tasks-fencing-my-conn", b'{"task-count":2}'),
        (b"connector-deleted", b'{"properties":{"k":"v"}}'),
        (b"target-state-deleted", b'{"state":"PAUSED","state.v2":"PAUSED"}'),
        (b"connector-deleted", None),
        (b"target-state-deleted", None),
        (b"task-half-0", b'{"properties":{"n":"0"}}'),
        (b"commit-half", b'{"tasks":2}'),  # task 1 missing (compacted away)
        (b"task-my-conn-0", b'{"properties":{"task.class":"T","file":"new"}}'),  # no commit
        (b"restart-connector-my-conn", b'{"include-tasks":true,"only-failed":false}'),
    ]
    produce(kafka_bootstrap, topic, before)
    with caplog.at_level(logging.DEBUG, logger="worker.storage.kafka"):
        store = started(request, KafkaConfigBackingStore(config))
    snap = store.snapshot()
    assert snap.connector_configs == {
        "my-conn": {"connector.class": "FileStreamSource", "tasks.max": "2",
                    "file": "/tmp/ü.txt"},
        "legacy": {"k": "v"}}
    assert snap.target_states == {"my-conn": TargetState.STOPPED, "legacy": TargetState.PAUSED}
    assert snap.task_configs == {"my-conn": [{"task.class": "T", "file": "a"},
                                             {"task.class": "T", "file": "b"}]}
    assert store.offset == len(before)
    # The worker-config record (draft KIP-1185): its offset is the version.
    worker_config_offset = [k for k, _ in before].index(b"worker-config")
    assert store.worker_config() == WorkerConfigOverrides(
        worker_config_offset, {"offset.flush.interval.ms": "1000"})
    # Recognised records are skipped quietly; only the incomplete commit is worth a warning.
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING
                and r.name.startswith("worker.storage.kafka")]
    assert [r.name for r in warnings] == ["worker.storage.kafka.config_store"]
    assert "'half'" in warnings[0].getMessage()

    updates: list[ConfigUpdate] = []
    store.set_listener(updates.append)
    produce(kafka_bootstrap, topic, [
        (b"task-my-conn-1", b'{"properties":{"task.class":"T","file":"new1"}}'),
        (b"task-my-conn-2", b'{"properties":{"task.class":"T","file":"new2"}}'),
        (b"commit-my-conn", b'{"tasks":3}'),
        (b"target-state-my-conn", b'{"state":"STARTED","state.v2":"STARTED"}'),
        (b"restart-connector-my-conn", b'{"include-tasks":true,"only-failed":true}'),
        (b"connector-legacy", None),
        (b"worker-config", b'{"version":0,"properties":{"listeners.https.ssl.client.auth":'
                           b'"required","listeners.https.ssl.cipher.suites":null}}'),
        (b"worker-config", b'{"properties":{}}'),  # no version: skipped, with a warning
        (b"worker-config", None),  # a tombstone clears every override
    ])
    store.refresh(30)
    skipped = [r.getMessage() for r in caplog.records
               if r.name == "worker.storage.kafka.formats"]
    assert any("'worker-config'" in m and "'version'" in m for m in skipped), skipped
    first = len(before) + 6
    assert updates == [
        ConfigUpdate("tasks", "my-conn"), ConfigUpdate("target_state", "my-conn"),
        ConfigUpdate("restart", "my-conn", RestartRequest("my-conn", True, True)),
        ConfigUpdate("connector", "legacy"),
        ConfigUpdate("worker_config", "", version=first),
        ConfigUpdate("worker_config", "", version=first + 2)]
    snap = store.snapshot()
    assert [t["file"] for t in snap.tasks("my-conn")] == ["new", "new1", "new2"]
    assert snap.target_states == {"my-conn": TargetState.STARTED}
    assert list(snap.connector_configs) == ["my-conn"]
    assert store.worker_config() == WorkerConfigOverrides(first + 2, {})
    assert store.offset == len(before) + 9


def test_offset_records_written_by_java_are_read(
        config: DistributedConfig, kafka_bootstrap: str, kafka_admin: AdminClient,
        request: pytest.FixtureRequest) -> None:
    topic = create_topic(kafka_admin, config.get("offset.storage.topic"),
                         partitions=OFFSET_PARTITIONS, config=COMPACT)
    produce(kafka_bootstrap, topic, [
        (b'["file-source",{"filename":"/tmp/\xc3\xbc.txt"}]', b'{"position":42}'),
        (b'["file-source",{"filename":"/tmp/b.txt"}]', b'{"position":7}'),
        (b'["file-source",{"filename":"/tmp/b.txt"}]', None),
        (b'["db",{"shard":1,"db":"x"}]', b'{"lsn":10,"snapshot":false,"ts":1.5}'),
        (b'["db",null]', b'{"x":1}'),  # ignored by Kafka too
        (b"not json", b"{}"),
        (b'["db"]', b"{}"),
    ])
    store = started(request, KafkaOffsetBackingStore(config))
    assert store.get("file-source", [{"filename": "/tmp/ü.txt"}, {"filename": "/tmp/b.txt"}]) == {
        '{"filename":"/tmp/\\u00fc.txt"}': {"position": 42}}
    assert store.get_all("db") == [({"db": "x", "shard": 1},
                                    {"lsn": 10, "snapshot": False, "ts": 1.5})]
    assert store.get("db", [{"db": "x", "shard": 1}]) == {
        '{"db":"x","shard":1}': {"lsn": 10, "snapshot": False, "ts": 1.5}}
    # Written by another worker after start: visible to the next read.
    produce(kafka_bootstrap, topic, [(b'["db",{"shard":1,"db":"x"}]', None)])
    assert store.get_all("db") == []


def test_status_records_written_by_java_are_read(
        config: DistributedConfig, kafka_bootstrap: str, kafka_admin: AdminClient,
        request: pytest.FixtureRequest) -> None:
    topic = create_topic(kafka_admin, config.get("status.storage.topic"),
                         partitions=STATUS_PARTITIONS, config=COMPACT)
    produce(kafka_bootstrap, topic, [
        (b"status-connector-my-conn",
         b'{"state":"RUNNING","trace":null,"worker_id":"10.0.0.1:8083","generation":5}'),
        (b"status-task-my-conn-0", b'{"state":"FAILED","trace":"ConnectException: boom\\n'
                                   b'\\tat X","worker_id":"10.0.0.2:8083","generation":5}'),
        (b"status-task-my-conn-1",
         b'{"state":"RUNNING","trace":null,"worker_id":"10.0.0.1:8083","generation":5}'),
        (b"status-task-my-conn-1", None),
        (b"status-topic-orders:connector-my-conn", b'{"topic":{"name":"orders",'
         b'"connector":"my-conn","task":0,"discoverTimestamp":1700000000000}}'),
        (b"status-topic-gone:connector-my-conn", b'{"topic":{"name":"gone",'
         b'"connector":"my-conn","task":1,"discoverTimestamp":1700000000001}}'),
        (b"status-topic-gone:connector-my-conn", None),
    ])
    # A connector tombstone drops its tasks' statuses too (Kafka's reader); one partition,
    # so that the tombstone is read after the task status.
    produce(kafka_bootstrap, topic, [
        (b"status-connector-old", b'{"state":"RUNNING","trace":null,"worker_id":"w",'
                                  b'"generation":1}'),
        (b"status-task-old-0", b'{"state":"RUNNING","trace":null,"worker_id":"w",'
                               b'"generation":1}'),
        (b"status-connector-old", None)], partition=0)
    store = started(request, KafkaStatusBackingStore(config))
    assert store.get_connector("my-conn") == ConnectorStatus(
        "my-conn", State.RUNNING, "10.0.0.1:8083", 5)
    assert store.get_tasks("my-conn") == [TaskStatus(
        TaskId("my-conn", 0), State.FAILED, "10.0.0.2:8083", 5, "ConnectException: boom\n\tat X")]
    assert store.get_topics("my-conn") == [TopicStatus("orders", "my-conn", 0, 1700000000000)]
    assert store.get_connector("old") is None and store.get_tasks("old") == []

    updates: list[StatusUpdate] = []
    store.set_listener(updates.append)
    produce(kafka_bootstrap, topic, [(b"status-connector-my-conn", b'{"state":"PAUSED",'
                                      b'"trace":null,"worker_id":"10.0.0.3:8083","generation":6}')])
    store.refresh(30)
    assert updates == [StatusUpdate("connector", "my-conn")]
    assert store.get_connector("my-conn") == ConnectorStatus(
        "my-conn", State.PAUSED, "10.0.0.3:8083", 6)


# --------------------------------------------------------------------------- writing Java's


def test_config_store_writes_java_bytes(config: DistributedConfig, kafka_bootstrap: str,
                                        request: pytest.FixtureRequest) -> None:
    store = started(request, KafkaConfigBackingStore(config))
    store.put_connector_config("my-conn", {"connector.class": "FileStreamSource",
                                           "file": "/tmp/ü.txt"}, TargetState.STOPPED)
    store.put_task_configs("my-conn", [{"task": "0"}, {"task": "1"}])
    store.put_target_state("my-conn", TargetState.PAUSED)
    store.put_target_state("my-conn", TargetState.STARTED)
    store.put_restart_request("my-conn", True, False)
    store.put_task_configs("my-conn", [])
    store.remove_connector_config("my-conn")
    store.put_worker_config({"listeners.https.ssl.keystore.location": "/etc/tls/wörker.p12",
                             "listeners.https.ssl.keystore.password": "${env:KS_PASSWORD}"})
    store.put_worker_config({})  # the last override removed: a tombstone
    expected = [
        (b"target-state-my-conn", b'{"state":"PAUSED","state.v2":"STOPPED"}'),
        (b"connector-my-conn",
         b'{"properties":{"connector.class":"FileStreamSource","file":"/tmp/\xc3\xbc.txt"}}'),
        (b"task-my-conn-0", b'{"properties":{"task":"0"}}'),
        (b"task-my-conn-1", b'{"properties":{"task":"1"}}'),
        (b"commit-my-conn", b'{"tasks":2}'),
        (b"target-state-my-conn", b'{"state":"PAUSED","state.v2":"PAUSED"}'),
        (b"target-state-my-conn", b'{"state":"STARTED","state.v2":"STARTED"}'),
        (b"restart-connector-my-conn", b'{"include-tasks":true,"only-failed":false}'),
        (b"commit-my-conn", b'{"tasks":0}'),
        (b"connector-my-conn", None),
        (b"target-state-my-conn", None),
        (b"worker-config", b'{"version":0,"properties":{"listeners.https.ssl.keystore.location":'
                           b'"/etc/tls/w\xc3\xb6rker.p12","listeners.https.ssl.keystore.password":'
                           b'"${env:KS_PASSWORD}"}}'),
        (b"worker-config", None),
    ]
    records = read_raw(kafka_bootstrap, config.get("config.storage.topic"), len(expected))
    assert [(r.key, r.value) for r in records] == expected
    assert {r.partition for r in records} == {0}


def test_offset_store_writes_java_bytes(config: DistributedConfig, kafka_bootstrap: str,
                                        request: pytest.FixtureRequest) -> None:
    store = started(request, KafkaOffsetBackingStore(config))
    store.put("file-source", [
        ({"filename": "/tmp/ü.txt", "a": 1}, {"position": 42, "ok": True, "r": 0.5, "n": None}),
        ({"filename": "/tmp/b.txt"}, None)])
    records = read_raw(kafka_bootstrap, config.get("offset.storage.topic"), 2)
    assert {r.key: r.value for r in records} == {
        b'["file-source",{"a":1,"filename":"/tmp/\xc3\xbc.txt"}]':
            b'{"position":42,"ok":true,"r":0.5,"n":null}',
        b'["file-source",{"filename":"/tmp/b.txt"}]': None}
    for record in records:
        assert record.key is not None
        assert record.partition == java_partition(record.key, OFFSET_PARTITIONS)


def test_status_store_writes_java_bytes(config: DistributedConfig, kafka_bootstrap: str,
                                        request: pytest.FixtureRequest) -> None:
    store = started(request, KafkaStatusBackingStore(config))
    store.put_connector(ConnectorStatus("my-conn", State.RUNNING, "10.0.0.1:8083", 3))
    store.put_task(TaskStatus(TaskId("my-conn", 0), State.FAILED, "10.0.0.1:8083", 3,
                              "Traceback ü\n"))
    store.put_topic(TopicStatus("orders", "my-conn", 0, 1700000000000))
    store.delete_task(TaskId("my-conn", 0))
    store.delete_topics("my-conn")
    store.delete_connector("my-conn")
    records = read_raw(kafka_bootstrap, config.get("status.storage.topic"), 6)
    assert by_key(records) == {
        b"status-connector-my-conn": [
            b'{"state":"RUNNING","trace":null,"worker_id":"10.0.0.1:8083","generation":3}',
            None],
        b"status-task-my-conn-0": [
            b'{"state":"FAILED","trace":"Traceback \xc3\xbc\\n","worker_id":"10.0.0.1:8083",'
            b'"generation":3}', None],
        b"status-topic-orders:connector-my-conn": [
            b'{"topic":{"name":"orders","connector":"my-conn","task":0,'
            b'"discoverTimestamp":1700000000000}}', None]}
    for record in records:
        assert record.key is not None
        assert record.partition == java_partition(record.key, STATUS_PARTITIONS)
