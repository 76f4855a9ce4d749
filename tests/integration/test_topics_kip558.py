"""KIP-558 active topics against a real worker subprocess and the session's Kafka.

A source connector's topic is recorded once it produces, a sink's once it consumes; the
first ``discoverTimestamp`` is kept in the store (read here straight from the worker's SQL
database) through task restarts, reconfiguration and a worker restart. Deleting the
connector forgets its topics; ``PUT .../topics/reset`` does too, and the topics come back as
the tasks use them. ``topic.tracking.enable=false`` and ``topic.tracking.allow.reset=false``
answer Kafka's 403s. As in Kafka 4.x, an unknown connector is not a 404: it has no topics.

Records are sequence-generator records, produced slowly; "the task produced more" is told by
the partition's high watermark moving, never by its value (Tansu counts batches there).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from tests.integration._rest_helpers import (
    SESSION_TIMEOUT_MS,
    STRING_CONVERTER,
    error_body,
    path,
)
from tests.support import (
    WorkerProcess,
    create_topic,
    unique_name,
    wait_for_connector_state,
    wait_until,
)
from worker.storage.base import TopicStatus
from worker.storage.sql import SqlDatabase, SqlStatusBackingStore

pytestmark = pytest.mark.integration

TRACKING_DISABLED = "Topic tracking is disabled."
RESET_DISABLED = "Topic tracking reset is disabled."


# --- fixtures and helpers -------------------------------------------------------------------



@pytest.fixture(scope="module")
def watermarks(kafka_bootstrap: str) -> Iterator[Consumer]:
    consumer = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": unique_name("wm"),
                         "session.timeout.ms": SESSION_TIMEOUT_MS})
    yield consumer
    consumer.close()


def high_watermark(consumer: Consumer, topic: str) -> int:
    return int(consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1])


def wait_for_more_records(consumer: Consumer, topic: str, batches: int = 2) -> None:
    """Until ``topic`` received at least ``batches`` more produce batches than now."""
    start = high_watermark(consumer, topic)
    wait_until(lambda: high_watermark(consumer, topic) >= start + batches, timeout=30,
               message=f"more records in {topic}")


def generator(topic: str, **extra: str) -> dict[str, str]:
    # Slow and endless: a few records a second for as long as the test needs.
    return {"connector.class": "SequenceGenerator", "topic": topic, "tasks.max": "1",
            "rate": "5", "count": "-1", **extra}


def create(client: httpx.Client, name: str, config: dict[str, str], **body: Any) -> None:
    response = client.post("/connectors", json={"name": name, "config": config, **body})
    assert response.status_code == 201, response.text


def active_topics(client: httpx.Client, name: str) -> list[str]:
    response = client.get(f"{path(name)}/topics")
    assert response.status_code == 200, response.text
    body = response.json()
    assert list(body) == [name]
    topics: list[str] = body[name]["topics"]
    return topics


def wait_for_topics(client: httpx.Client, name: str, expected: list[str],
                    timeout: float = 30) -> None:
    wait_until(lambda: active_topics(client, name) == expected, timeout=timeout,
               message=f"active topics of {name} == {expected}")


def stored(worker: WorkerProcess, name: str) -> dict[str, TopicStatus]:
    """The connector's rows in the worker's status store (its SQLite database)."""
    database = SqlDatabase(f"sqlite:///{worker.props_file.parent / 'connect.db'}")
    store = SqlStatusBackingStore(database)
    store.start()
    try:
        return {status.topic: status for status in store.get_topics(name)}
    finally:
        store.stop()


# --- recording ------------------------------------------------------------------------------

def test_source_topic_recorded_once_and_first_discovery_kept(
        client: httpx.Client, worker: WorkerProcess, kafka_admin: Any,
        watermarks: Consumer) -> None:
    topic = create_topic(kafka_admin, unique_name("src"))
    name = unique_name("src-conn")
    before_ms = int(time.time() * 1000)
    create(client, name, generator(topic))

    wait_for_topics(client, name, [topic])
    first = stored(worker, name)[topic]
    assert first.connector == name and first.task == 0
    assert before_ms <= first.discover_timestamp <= int(time.time() * 1000)

    # Still producing: the list does not grow and the row is not rewritten.
    wait_for_more_records(watermarks, topic)
    assert active_topics(client, name) == [topic]

    # A restarted task (a new instance) and a reconfigured connector record it again:
    # the store keeps the first discovery.
    response = client.post(f"{path(name)}/restart?includeTasks=true")
    assert response.status_code == 202, response.text
    wait_for_connector_state(client, name, "RUNNING", "RUNNING")
    wait_for_more_records(watermarks, topic)
    response = client.put(f"{path(name)}/config", json=generator(topic, rate="8"))
    assert response.status_code == 200, response.text
    wait_for_connector_state(client, name, "RUNNING", "RUNNING")
    wait_for_more_records(watermarks, topic)

    assert active_topics(client, name) == [topic]
    assert stored(worker, name) == {topic: first}


def test_sink_records_the_topics_it_consumed_from(client: httpx.Client, kafka_admin: Any,
                                                   kafka_bootstrap: str,
                                                   tmp_path: Path) -> None:
    used = create_topic(kafka_admin, unique_name("sink-used"))
    idle = create_topic(kafka_admin, unique_name("sink-idle"))  # assigned, never consumed
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    for n in range(5):
        producer.produce(used, f"line-{n}".encode())
    assert producer.flush(10) == 0
    out = tmp_path / "sink.txt"
    name = unique_name("sink-conn")
    create(client, name, {"connector.class": "FileStreamSink", "topics": f"{used},{idle}",
                          "file": str(out), "key.converter": STRING_CONVERTER,
                          "value.converter": STRING_CONVERTER})

    wait_until(lambda: out.exists() and len(out.read_text().splitlines()) == 5, timeout=60,
               message="the sink's file has the 5 lines")
    wait_for_topics(client, name, [used])
    # Kafka records a sink's topic per consumed record: assignment alone is not use.
    assert active_topics(client, name) == [used]


def test_unknown_connector_has_no_topics_as_in_kafka(client: httpx.Client) -> None:
    name = unique_name("never-created")

    assert active_topics(client, name) == []
    response = client.put(f"{path(name)}/topics/reset")
    assert response.status_code == 202 and response.content == b""


# --- forgetting -----------------------------------------------------------------------------

def test_delete_forgets_topics_and_a_recreated_connector_starts_empty(
        client: httpx.Client, worker: WorkerProcess, kafka_admin: Any,
        watermarks: Consumer) -> None:
    topic = create_topic(kafka_admin, unique_name("del"))
    name = unique_name("del-conn")
    create(client, name, generator(topic))
    wait_for_topics(client, name, [topic])

    assert client.delete(path(name)).status_code == 204

    assert active_topics(client, name) == []
    assert stored(worker, name) == {}
    # Recreated STOPPED (KIP-980): it exists, has never produced, so it has no topics.
    create(client, name, generator(topic), initial_state="STOPPED")
    wait_for_connector_state(client, name, "STOPPED")
    assert active_topics(client, name) == []
    assert client.put(f"{path(name)}/resume").status_code == 202
    wait_for_topics(client, name, [topic])


def test_reset_forgets_topics_and_a_restarted_task_records_them_again(
        client: httpx.Client, worker: WorkerProcess, kafka_admin: Any,
        watermarks: Consumer) -> None:
    topic = create_topic(kafka_admin, unique_name("reset"))
    name = unique_name("reset-conn")
    create(client, name, generator(topic))
    wait_for_topics(client, name, [topic])
    first = stored(worker, name)[topic]

    response = client.put(f"{path(name)}/topics/reset")
    assert response.status_code == 202 and response.content == b""
    assert active_topics(client, name) == []
    assert stored(worker, name) == {}

    assert client.post(f"{path(name)}/tasks/0/restart").status_code == 204
    wait_for_topics(client, name, [topic])
    assert stored(worker, name)[topic].discover_timestamp > first.discover_timestamp


def test_reset_topics_come_back_while_the_task_keeps_producing(
        client: httpx.Client, kafka_admin: Any, watermarks: Consumer) -> None:
    topic = create_topic(kafka_admin, unique_name("reset-live"))
    name = unique_name("reset-live-conn")
    create(client, name, generator(topic))
    wait_for_topics(client, name, [topic])

    assert client.put(f"{path(name)}/topics/reset").status_code == 202
    wait_for_more_records(watermarks, topic, batches=5)

    wait_for_topics(client, name, [topic], timeout=10)


# --- survival across a worker restart --------------------------------------------------------

def test_topics_survive_a_worker_restart(standalone_worker: Any, kafka_admin: Any,
                                         watermarks: Consumer) -> None:
    worker: WorkerProcess = standalone_worker()
    topic = create_topic(kafka_admin, unique_name("restart"))
    name = unique_name("restart-conn")
    create(worker.client, name, generator(topic))
    wait_for_topics(worker.client, name, [topic])
    first = stored(worker, name)[topic]

    worker.restart()

    assert active_topics(worker.client, name) == [topic]  # read back from the store
    wait_for_connector_state(worker.client, name, "RUNNING", "RUNNING")
    wait_for_more_records(watermarks, topic)
    assert active_topics(worker.client, name) == [topic]
    assert stored(worker, name) == {topic: first}


# --- settings -----------------------------------------------------------------------------

def test_tracking_disabled_is_403_and_nothing_is_recorded(standalone_worker: Any,
                                                          kafka_admin: Any,
                                                          watermarks: Consumer) -> None:
    worker: WorkerProcess = standalone_worker({"topic.tracking.enable": "false"})
    topic = create_topic(kafka_admin, unique_name("untracked"))
    name = unique_name("untracked-conn")
    create(worker.client, name, generator(topic))
    wait_for_more_records(watermarks, topic)

    for method, url in (("GET", f"{path(name)}/topics"), ("PUT", f"{path(name)}/topics/reset"),
                        ("GET", f"{path('never-created')}/topics")):
        assert error_body(worker.client.request(method, url), 403) == TRACKING_DISABLED
    assert stored(worker, name) == {}


def test_reset_disallowed_is_403_on_reset_only(standalone_worker: Any,
                                               kafka_admin: Any) -> None:
    worker: WorkerProcess = standalone_worker({"topic.tracking.allow.reset": "false"})
    topic = create_topic(kafka_admin, unique_name("no-reset"))
    name = unique_name("no-reset-conn")
    create(worker.client, name, generator(topic))
    wait_for_topics(worker.client, name, [topic])

    response = worker.client.put(f"{path(name)}/topics/reset")

    assert error_body(response, 403) == RESET_DISABLED
    assert active_topics(worker.client, name) == [topic]
