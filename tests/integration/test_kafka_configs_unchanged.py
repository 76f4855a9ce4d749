"""Connector configs written the way Debezium's and the JDBC sink's docs write them run
unchanged: Kafka's class names for converters and SMTs, Java client overrides, topic
creation, a dead letter queue with context headers. Our generator and FileStream connectors
stand in for theirs.

The source (a "CDC" stream ``dbserver1.inventory.<table>``): the key comes from the value
(``ValueToKey`` + ``ExtractField$Key``), a column is masked and one cast, the topic is
routed to the table name (``RegexRouter``) and created with its partitions
(``topic.creation.*``), and a header says where the record came from (``InsertHeader``).
A plain consumer reads what a Java consumer would: JSON key and value, the header's bytes.
The sink renames and drops columns, adds the topic, drops the header, and writes each row.
"""

from __future__ import annotations

import ast
import json
import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

from tests.support import unique_name, wait_for_connector_state, wait_until

pytestmark = pytest.mark.integration

JSON = "org.apache.kafka.connect.json.JsonConverter"
T = "org.apache.kafka.connect.transforms"
ROWS = 20


def debezium_style_source(server_topic: str) -> dict[str, str]:
    return {
        "connector.class": "worker.connectors.generator.SequenceGeneratorConnector",
        "tasks.max": "1", "topic": server_topic, "format": "json", "count": str(ROWS),
        "message.size": "80",
        "key.converter": JSON, "key.converter.schemas.enable": "false",
        "value.converter": JSON, "value.converter.schemas.enable": "false",
        "transforms": "key,extractKey,mask,cast,route,origin",
        "transforms.key.type": f"{T}.ValueToKey", "transforms.key.fields": "seq",
        "transforms.extractKey.type": f"{T}.ExtractField$Key",
        "transforms.extractKey.field": "seq",
        "transforms.mask.type": f"{T}.MaskField$Value", "transforms.mask.fields": "payload",
        "transforms.cast.type": f"{T}.Cast$Value", "transforms.cast.spec": "seq:string",
        "transforms.route.type": f"{T}.RegexRouter",
        "transforms.route.regex": "([^.]+)\\.([^.]+)\\.([^.]+)",
        "transforms.route.replacement": "$3",
        "transforms.origin.type": f"{T}.InsertHeader", "transforms.origin.header": "source.db",
        "transforms.origin.value.literal": "inventory",
        "topic.creation.default.replication.factor": "1",
        "topic.creation.default.partitions": "1",
        "producer.override.max.request.size": "1048576",
        "producer.override.linger.ms": "10",
        "errors.tolerance": "none", "errors.log.enable": "true",
    }


def jdbc_sink_style(topic: str, dlq: str, file: Path) -> dict[str, str]:
    return {
        "connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
        "tasks.max": "1", "topics": topic, "file": str(file),
        "key.converter": JSON, "key.converter.schemas.enable": "false",
        "value.converter": JSON, "value.converter.schemas.enable": "false",
        "transforms": "rename,topic,dropOrigin",
        "transforms.rename.type": f"{T}.ReplaceField$Value",
        "transforms.rename.renames": "seq:id", "transforms.rename.exclude": "payload",
        "transforms.topic.type": f"{T}.InsertField$Value",
        "transforms.topic.topic.field": "source_topic",
        "transforms.dropOrigin.type": f"{T}.DropHeaders",
        "transforms.dropOrigin.headers": "source.db",
        "errors.tolerance": "all", "errors.deadletterqueue.topic.name": dlq,
        "errors.deadletterqueue.topic.replication.factor": "1",
        "errors.deadletterqueue.context.headers.enable": "true",
        "consumer.override.max.poll.records": "500",
        "consumer.override.fetch.max.wait.ms": "100",
    }


def read_records(bootstrap: str, topic: str, expected: int, timeout: float = 30.0
                 ) -> list[Any]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "enable.auto.commit": False,
                         "group.id": f"plain-reader-{time.monotonic_ns()}"})
    records: list[Any] = []
    try:
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        deadline = time.monotonic() + timeout
        while len(records) < expected and time.monotonic() < deadline:
            records += [m for m in consumer.consume(100, 0.2) if m.error() is None]
    finally:
        consumer.close()
    return records


def test_debezium_and_jdbc_style_configs_run_unchanged(
        standalone_worker: Any, kafka_bootstrap: str, kafka_admin: Any,
        tmp_path: Path) -> None:
    worker = standalone_worker()
    table = unique_name("customers").replace("-", "_")
    source = debezium_style_source(f"dbserver1.inventory.{table}")
    sink_file = tmp_path / "rows.txt"
    sink = jdbc_sink_style(table, f"{table}-dlq", sink_file)
    for name, config in (("inventory-source", source), ("rows-sink", sink)):
        config["name"] = name
        response = worker.client.put(
            f"/connector-plugins/{config['connector.class']}/config/validate", json=config)
        assert response.status_code == 200, response.text
        assert response.json()["error_count"] == 0, [
            c["value"] for c in response.json()["configs"] if c["value"]["errors"]]
        assert worker.client.put(f"/connectors/{name}/config", json=config).status_code == 201

    records = read_records(kafka_bootstrap, table, ROWS)
    assert len(records) == ROWS
    topic = kafka_admin.list_topics(table, timeout=10).topics[table]
    assert len(topic.partitions) == 1  # created by topic.creation.default.partitions
    for seq, record in enumerate(records):
        assert json.loads(record.key()) == seq  # ValueToKey + ExtractField$Key
        value = json.loads(record.value())
        assert (value["task"], value["seq"], value["payload"]) == (0, str(seq), "")
        assert record.headers() == [("source.db", b"inventory")]

    def rows() -> list[dict[str, Any]]:
        text = sink_file.read_text() if sink_file.exists() else ""
        return [ast.literal_eval(line) for line in text.splitlines()]

    wait_until(lambda: len(rows()) >= ROWS, timeout=60,
               message=lambda: f"{ROWS} rows in the sink's file; have {len(rows())}")
    assert [(row["id"], row["source_topic"]) for row in rows()] == [
        (str(seq), table) for seq in range(ROWS)]
    assert all("payload" not in row and "seq" not in row for row in rows())
    status = wait_for_connector_state(worker.client, "rows-sink", "RUNNING",
                                      tasks_state="RUNNING")
    assert status["tasks"][0]["state"] == "RUNNING"
