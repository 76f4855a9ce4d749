"""Topic creation for source connectors (Kafka's KIP-158), end to end: a real worker
process, ``SequenceGenerator`` connectors with ``topic.creation.*`` settings, the session's
Kafka. A topic the task writes to for the first time is created with its group's
partitions and topic configs before the first record; an existing topic is used as it is;
``/config/validate`` and create report bad settings on their keys; a worker with
``topic.creation.enable=false`` leaves the topic to the broker's automatic creation.
"""

from __future__ import annotations

import logging
import re
import time
from typing import Any

import httpx
import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

from tests.integration._rest_helpers import SESSION_TIMEOUT_MS, error_body, storage_snapshot
from tests.support import create_topic, wait_for_connector_state, wait_until

pytestmark = pytest.mark.integration

log = logging.getLogger(__name__)

RECORDS = 20


def source(base: str, topic: str, **extra: str) -> dict[str, str]:
    """A SequenceGenerator writing RECORDS records to ``topic``, the default group set
    (three partitions) and a group ``compacted`` (two partitions, compacted) for
    ``<base>-state``: the settings of the tests' connectors."""
    return {"connector.class": "SequenceGenerator", "topic": topic, "tasks.max": "1",
            "count": str(RECORDS), "batch.size": "5",
            "topic.creation.default.replication.factor": "1",
            "topic.creation.default.partitions": "3",
            "topic.creation.groups": "compacted",
            "topic.creation.compacted.include": f"{re.escape(base)}-state",
            "topic.creation.compacted.partitions": "2",
            "topic.creation.compacted.cleanup.policy": "compact", **extra}


def partitions(admin: AdminClient, topic: str) -> int:
    metadata = admin.list_topics(timeout=10).topics.get(topic)
    return 0 if metadata is None or metadata.error is not None else len(metadata.partitions)


def topic_configs(admin: AdminClient, topic: str) -> dict[str, str]:
    resource = ConfigResource(ResourceType.TOPIC, topic)
    entries = admin.describe_configs([resource])[resource].result(timeout=10)
    return {name: entry.value for name, entry in entries.items()}


def record_count(bootstrap: str, topic: str, partition_count: int, expected: int) -> int:
    """Read every partition of ``topic`` from the beginning until ``expected`` records
    arrived (bounded); returns how many were read. No group join: ``assign``."""
    consumer = Consumer({"bootstrap.servers": bootstrap,
                         "group.id": f"topic-creation-reader-{time.monotonic_ns()}",
                         "enable.auto.commit": False, "session.timeout.ms": SESSION_TIMEOUT_MS,
                         "logger": log})
    seen = 0

    def drained() -> bool:
        nonlocal seen
        for msg in consumer.consume(num_messages=500, timeout=0.2):
            error = msg.error()
            if error is None:
                seen += 1
            elif error.code() not in (KafkaError._PARTITION_EOF,
                                      KafkaError.UNKNOWN_TOPIC_OR_PART):
                raise AssertionError(f"consumer error on {topic}: {error}")
        return seen >= expected

    try:
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING)
                         for p in range(partition_count)])
        wait_until(drained, timeout=15, interval=0,
                   message=lambda: f"{expected} records on {topic}; read {seen}")
    finally:
        consumer.close()
    return seen


def start(client: httpx.Client, name: str, config: dict[str, str]) -> None:
    response = client.put(f"/connectors/{name}/config", json=config)
    assert response.status_code == 201, response.text
    wait_for_connector_state(client, name, "RUNNING", tasks_state="RUNNING", timeout=15)


def test_new_topics_are_created_with_their_groups_settings(
        client: httpx.Client, kafka_admin: AdminClient, kafka_bootstrap: str,
        unique_topic: Any) -> None:
    base = unique_topic("created")
    state, plain = f"{base}-state", f"{base}-plain"
    assert partitions(kafka_admin, state) == partitions(kafka_admin, plain) == 0

    # Two connectors of one group config: one topic matches the group, one does not.
    start(client, f"{base}-to-state", source(base, state))
    start(client, f"{base}-to-plain", source(base, plain))

    assert record_count(kafka_bootstrap, state, 2, RECORDS) == RECORDS
    assert record_count(kafka_bootstrap, plain, 3, RECORDS) == RECORDS
    # The group's partitions and topic config; the default group's for the other topic.
    assert partitions(kafka_admin, state) == 2
    assert partitions(kafka_admin, plain) == 3
    assert topic_configs(kafka_admin, state).get("cleanup.policy") == "compact"
    assert topic_configs(kafka_admin, plain).get("cleanup.policy") != "compact"


def test_an_existing_topic_is_used_as_it_is(
        client: httpx.Client, kafka_admin: AdminClient, kafka_bootstrap: str,
        unique_topic: Any) -> None:
    base = unique_topic("existing")
    state = create_topic(kafka_admin, f"{base}-state", partitions=1)

    start(client, f"{base}-to-state", source(base, state))

    assert record_count(kafka_bootstrap, state, 1, RECORDS) == RECORDS
    assert partitions(kafka_admin, state) == 1  # not the group's 2
    assert topic_configs(kafka_admin, state).get("cleanup.policy") != "compact"


def test_validation_reports_bad_settings_on_their_keys(client: httpx.Client,
                                                       unique_topic: Any) -> None:
    base = unique_topic("invalid")
    config = source(base, base, **{"name": base, "topic.creation.default.partitions": "0",
                             "topic.creation.compated.partitions": "2"})

    response = client.put("/connector-plugins/SequenceGenerator/config/validate",
                          json=config)

    assert response.status_code == 200, response.text
    body = response.json()
    errors = {c["value"]["name"]: c["value"]["errors"] for c in body["configs"]
              if c["value"]["errors"]}
    assert errors == {
        "topic.creation.default.partitions": [
            "Invalid value 0 for configuration topic.creation.default.partitions: Number of "
            "partitions must be positive, or -1 to use the broker's default"],
        "topic.creation.compated.partitions": [
            "Topic creation group 'compated' is not listed in topic.creation.groups, so "
            "'topic.creation.compated.partitions' would be ignored; add 'compated' to "
            "topic.creation.groups or remove the key."]}
    assert body["error_count"] == 2
    # The keys are listed in Kafka's groups, the listed group's with the default's value.
    definitions = {c["definition"]["name"]: c["definition"] for c in body["configs"]}
    assert definitions["topic.creation.groups"]["group"] == "Topic Creation"
    assert definitions["topic.creation.compacted.partitions"]["group"] == \
        "Topic Creation: compacted"
    assert "Topic Creation: compacted" in body["groups"]

    # Create is refused for the same reasons, and nothing is stored.
    before = storage_snapshot(client)
    message = error_body(client.put(f"/connectors/{base}/config", json=config), 400)
    assert "topic.creation.default.partitions" in message
    assert "topic.creation.compated.partitions" in message
    assert storage_snapshot(client) == before


def test_a_worker_with_topic_creation_disabled_leaves_it_to_the_broker(
        standalone_worker: Any, kafka_admin: AdminClient, kafka_bootstrap: str,
        unique_topic: Any) -> None:
    worker = standalone_worker({"topic.creation.enable": "false"})
    base = unique_topic("disabled")
    state = f"{base}-state"

    start(worker.client, f"{base}-to-state", source(base, state))

    # The broker's automatic creation: its default partition count, no compaction.
    count = wait_until(lambda: partitions(kafka_admin, state), timeout=10,
                       message=f"{state} created by the broker")
    assert record_count(kafka_bootstrap, state, count, RECORDS) == RECORDS
    assert count != 2
    assert topic_configs(kafka_admin, state).get("cleanup.policy") != "compact"
    assert "Creating topic" not in worker.log_tail(400)
