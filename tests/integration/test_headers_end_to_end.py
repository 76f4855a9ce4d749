"""Typed headers end to end: a source task's headers reach Kafka as the bytes Kafka
Connect's SimpleHeaderConverter writes (what a Java consumer reads), and a sink task gets
them back typed, after InsertHeader and DropHeaders. A real worker process, the session's
Kafka, a plain confluent-kafka consumer in between."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
from confluent_kafka.admin import AdminClient

from tests.integration._rest_helpers import STRING_CONVERTER
from tests.support import create_topic, unique_name, wait_for_connector_state, wait_until
from tests.support.header_plugins import PREFIX

pytestmark = pytest.mark.integration

log = logging.getLogger(__name__)

# What Kafka's SimpleHeaderConverter writes for tests.support.header_plugins.typed_headers.
WRITTEN = [("legacy", b"pair-0"), ("int", b"42"), ("bool", b"true"),
           ("map", b'{"a":1,"b":[true,false]}'), ("text", b"hello, world"),
           ("double", b"3.5"), ("ts", b"2024-05-01T12:30:00.000Z"), ("none", None),
           ("drop-me", b"x")]
TIMESTAMP_NAME = "org.apache.kafka.connect.data.Timestamp"
# ... and what the sink reads back: [key, schema type, schema name, value], after
# DropHeaders (drop-me, legacy) and InsertHeader (inserted = [1, 2]).
INSERTED = ["inserted", "array", None, [1, 2]]
READ_BACK = [["int", "int8", None, 42], ["bool", "boolean", None, True],
             ["map", "map", None, {"a": 1, "b": [True, False]}],
             ["text", "string", None, "hello, world"], ["double", "float32", None, 3.5],
             ["ts", "int64", TIMESTAMP_NAME, "2024-05-01 12:30:00+00:00"],
             ["none", None, None, None], INSERTED]


def consume(bootstrap: str, topic: str, count: int) -> list[Any]:
    """The first ``count`` messages of ``topic`` (one partition), read as any client would."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": unique_name("raw"),
                         "enable.auto.commit": False, "logger": log})
    messages: list[Any] = []
    try:
        # Assigned, not subscribed: no group join (seconds on the test broker).
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])

        def more() -> bool:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                messages.append(msg)
            return len(messages) >= count

        wait_until(more, timeout=30, interval=0,
                   message=lambda: f"{count} messages on {topic}; have {len(messages)}")
    finally:
        consumer.close()
    return messages


def test_typed_headers_are_written_as_kafka_writes_them_and_read_back_typed(
        standalone_worker, kafka_admin: AdminClient, kafka_bootstrap: str, unique_topic,
        tmp_path: Path) -> None:
    topic = unique_topic("headers")
    create_topic(kafka_admin, topic)
    worker = standalone_worker({"key.converter": STRING_CONVERTER,
                                "value.converter": STRING_CONVERTER})
    source = {"connector.class": f"{PREFIX}.TypedHeaderSource", "topic": topic,
              "count": "4", "tasks.max": "1"}
    assert worker.client.put("/connectors/typed-source/config", json=source).status_code == 201
    wait_for_connector_state(worker.client, "typed-source", "RUNNING", tasks_state="RUNNING")

    messages = consume(kafka_bootstrap, topic, 4)
    assert [m.value() for m in messages] == [f"record-{i}".encode() for i in range(4)]
    for index, msg in enumerate(messages):
        if index % 2:
            assert msg.headers() is None  # a headerless record stays headerless
        else:
            assert msg.headers() == [(k, f"pair-{index}".encode() if k == "legacy" else v)
                                     for k, v in WRITTEN]

    sink_file = tmp_path / "sink.jsonl"
    sink = {"connector.class": f"{PREFIX}.HeaderRecordingSink", "topics": topic,
            "file": str(sink_file), "transforms": "insert,drop",
            "transforms.insert.type": "org.apache.kafka.connect.transforms.InsertHeader",
            "transforms.insert.header": "inserted",
            "transforms.insert.value.literal": "[1, 2]",
            "transforms.drop.type": "org.apache.kafka.connect.transforms.DropHeaders",
            "transforms.drop.headers": "drop-me,legacy"}
    assert worker.client.put("/connectors/typed-sink/config", json=sink).status_code == 201

    def lines() -> list[dict[str, Any]]:
        if not sink_file.exists():
            return []
        return [json.loads(line) for line in sink_file.read_text().splitlines()]

    received = wait_until(lambda: len(lines()) >= 4 and lines(), timeout=30,
                          message=lambda: f"4 records at the sink; have {lines()}")
    assert [r["value"] for r in received] == [f"record-{i}" for i in range(4)]
    for index, record in enumerate(received):
        assert record["headers"] == (READ_BACK if index % 2 == 0 else [INSERTED]), index
