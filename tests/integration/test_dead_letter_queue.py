"""Error handling of sink connectors on a real worker and broker: the dead letter queue with
Kafka's ``__connect.errors.*`` context headers, retries of retriable errors, the DLQ's
validation, and the error log keeping record contents out unless asked
(docs/error-handling.md).

One worker serves the module; every test uses its own topics and connectors.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from tests.integration._rest_helpers import error_body
from tests.support import (
    WorkerProcess,
    create_topic,
    unique_name,
    wait_until,
)
from tests.support.error_plugins import PREFIX as ERROR_PLUGINS

pytestmark = pytest.mark.integration

JSON_SINK = {
    "connector.class": "FileStreamSink",
    "key.converter": "org.apache.kafka.connect.storage.StringConverter",
    "value.converter": "org.apache.kafka.connect.json.JsonConverter",
    "value.converter.schemas.enable": "false",
}


def produce(bootstrap: str, topic: str, records: list[tuple[bytes, bytes]]) -> list[int]:
    """Produce ``(key, value)`` records to partition 0, each with an ``origin`` header;
    their offsets, in order."""
    offsets: dict[int, int] = {}
    producer = Producer({"bootstrap.servers": bootstrap})

    def acknowledged(index: int) -> Any:
        def on_delivery(err: Any, msg: Any) -> None:
            offsets[index] = msg.offset() if err is None else -1
        return on_delivery

    for index, (key, value) in enumerate(records):
        producer.produce(topic, value, key, partition=0,
                         headers=[("origin", f"h{index}".encode())],
                         on_delivery=acknowledged(index))
    assert producer.flush(30) == 0
    return [offsets[i] for i in range(len(records))]


def read_all(bootstrap: str, topic: str, timeout: float = 30.0) -> list[Any]:
    """Every record of partition 0 of ``topic``, up to its end (the topic must have been
    written completely before: callers wait for the sink's committed offsets)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": unique_name("dlq-read"),
                         "enable.auto.commit": "false", "enable.partition.eof": "true"})
    # Assigned, not subscribed: no group join (seconds on the test broker).
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    records: list[Any] = []
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            error = msg.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    return records
                continue  # e.g. the topic is not in metadata yet
            records.append(msg)
    finally:
        consumer.close()
    raise AssertionError(f"did not reach the end of {topic} within {timeout} s "
                         f"({len(records)} records read)")


def wait_for_committed(client: httpx.Client, name: str, offset: int) -> None:
    """Until the sink committed ``offset`` (next to read) for partition 0."""
    def committed() -> int | None:
        offsets = client.get(f"/connectors/{name}/offsets").json().get("offsets") or []
        return offsets[0]["offset"]["kafka_offset"] if offsets else None

    wait_until(lambda: committed() == offset, timeout=60,
               message=lambda: f"{name} to commit offset {offset} (now {committed()})")


def context(msg: Any) -> dict[str, str | None]:
    return {k: None if v is None else v.decode() for k, v in msg.headers() or []
            if k.startswith("__connect.errors.")}


def test_bad_records_go_to_the_dlq_with_context_headers_and_good_ones_to_the_sink(
        worker: WorkerProcess, client: httpx.Client, kafka_bootstrap: str,
        kafka_admin: AdminClient, tmp_path: Path) -> None:
    """200 records, every other one not JSON, errors.tolerance=all and a DLQ: each good
    record reaches the file, each bad one the DLQ with its raw key, value and headers and
    the context headers pointing at it — nothing lost, nothing duplicated. The error log
    (include.messages=false) names each failure but never a value."""
    topic = create_topic(kafka_admin, unique_name("dlq-source"))
    dlq = unique_name("dlq")  # created by the task
    records = [(f"k{i}".encode(), f'{{"n": {i}}}'.encode() if i % 2 == 0
                else f"SECRET-{i} is not json".encode()) for i in range(200)]
    offsets = produce(kafka_bootstrap, topic, records)
    out = tmp_path / "sink.txt"
    name = unique_name("dlq-sink")
    response = client.put(f"/connectors/{name}/config", json={
        **JSON_SINK, "topics": topic, "file": str(out),
        "errors.tolerance": "all", "errors.log.enable": "true",
        "errors.deadletterqueue.topic.name": dlq,
        "errors.deadletterqueue.topic.replication.factor": "1",
        "errors.deadletterqueue.context.headers.enable": "true"})
    assert response.status_code == 201, response.text

    wait_for_committed(client, name, offsets[-1] + 1)
    assert out.read_text().splitlines() == [f"{{'n': {i}}}" for i in range(0, 200, 2)]
    status = client.get(f"/connectors/{name}/status").json()
    assert status["tasks"][0]["state"] == "RUNNING", status

    # Offsets are committed only once the DLQ acknowledged every record before them.
    dead = read_all(kafka_bootstrap, dlq)
    assert [(m.key(), m.value()) for m in dead] == [r for r in records if not r[1].startswith(b"{")]
    for msg in dead:
        index = int(msg.key()[1:])
        headers = msg.headers()
        assert headers[0] == ("origin", f"h{index}".encode())  # the original's first
        ctx = context(msg)
        assert {k: ctx[k] for k in list(ctx)[:7]} == {
            "__connect.errors.topic": topic,
            "__connect.errors.partition": "0",
            "__connect.errors.offset": str(offsets[index]),
            "__connect.errors.connector.name": name,
            "__connect.errors.task.id": "0",
            "__connect.errors.stage": "VALUE_CONVERTER",
            "__connect.errors.class.name": "worker.builtin.converters.json_converter.JsonConverter",
        }
        assert ctx["__connect.errors.exception.class.name"] == \
            "worker.api.exceptions.DataException"
        assert (ctx["__connect.errors.exception.message"] or "").startswith(
            f"Converting byte[] to Kafka Connect data failed due to serialization error of "
            f"topic {topic}")
        assert "Traceback" in (ctx["__connect.errors.exception.stacktrace"] or "")

    log = worker.log_path.read_text(errors="replace")
    assert log.count(f"Error encountered in task {name}-0. Executing stage "
                     "'VALUE_CONVERTER'") == 100
    assert f"where consumed record is {{topic='{topic}', partition=0, offset=" \
           f"{offsets[1]}" in log
    assert "SECRET" not in log


def test_retriable_errors_are_retried_and_exhausted_ones_go_to_the_dlq(
        client: httpx.Client, kafka_bootstrap: str, kafka_admin: AdminClient,
        tmp_path: Path) -> None:
    """A transformation failing three times with RetriableException: with
    errors.retry.timeout the records all arrive (errors.tolerance=none, the task stays
    RUNNING); without retries (the default) and errors.tolerance=all, each record's
    failure is final and it goes to the DLQ as a TRANSFORMATION failure."""
    topic = create_topic(kafka_admin, unique_name("retry-source"))
    offsets = produce(kafka_bootstrap, topic,
                      [(f"k{i}".encode(), f'{{"n": {i}}}'.encode()) for i in range(5)])
    flaky = {"transforms": "flaky", "transforms.flaky.type": f"{ERROR_PLUGINS}.FlakyTransform"}
    retried, dead = unique_name("retried"), unique_name("exhausted")
    dlq = unique_name("retry-dlq")
    response = client.put(f"/connectors/{retried}/config", json={
        **JSON_SINK, **flaky, "topics": topic, "file": str(tmp_path / "retried.txt"),
        "transforms.flaky.failures": "3",
        "errors.retry.timeout": "30000", "errors.retry.delay.max.ms": "1000"})
    assert response.status_code == 201, response.text
    response = client.put(f"/connectors/{dead}/config", json={
        **JSON_SINK, **flaky, "topics": topic, "file": str(tmp_path / "dead.txt"),
        "transforms.flaky.failures": "1000000", "errors.tolerance": "all",
        "errors.deadletterqueue.topic.name": dlq,
        "errors.deadletterqueue.topic.replication.factor": "1",
        "errors.deadletterqueue.context.headers.enable": "true"})
    assert response.status_code == 201, response.text

    wait_for_committed(client, retried, offsets[-1] + 1)
    assert (tmp_path / "retried.txt").read_text().splitlines() == \
        [f"{{'n': {i}}}" for i in range(5)]
    assert client.get(f"/connectors/{retried}/status").json()["tasks"][0]["state"] == "RUNNING"

    wait_for_committed(client, dead, offsets[-1] + 1)
    assert not (tmp_path / "dead.txt").exists() or not (tmp_path / "dead.txt").read_text()
    dead_letters = read_all(kafka_bootstrap, dlq)
    assert [m.key() for m in dead_letters] == [f"k{i}".encode() for i in range(5)]
    ctx = context(dead_letters[0])
    assert ctx["__connect.errors.stage"] == "TRANSFORMATION"
    assert ctx["__connect.errors.class.name"] == f"{ERROR_PLUGINS}.FlakyTransform"
    assert ctx["__connect.errors.exception.class.name"] == \
        "worker.api.exceptions.RetriableException"


def test_a_dlq_topic_the_connector_consumes_is_rejected_and_nothing_is_created(
        client: httpx.Client, kafka_admin: AdminClient) -> None:
    """Kafka's SinkConnectorConfig rule, on ``topics`` and on ``topics.regex``: validation
    reports it, create and update answer 400 naming the key, nothing is stored or created."""
    topic = unique_name("loop")
    name = unique_name("loop-sink")
    config = {**JSON_SINK, "name": name, "topics": f"other,{topic}", "file": "/dev/null",
              "errors.deadletterqueue.topic.name": topic}
    infos = client.put("/connector-plugins/FileStreamSink/config/validate", json=config).json()
    assert infos["error_count"] == 1
    errors = {c["value"]["name"]: c["value"]["errors"] for c in infos["configs"]
              if c["value"]["errors"]}
    assert errors == {"topics": [f"The DLQ topic '{topic}' may not be included in the list "
                                 f"of topics ('topics=[other, {topic}]') consumed by the "
                                 "connector"]}

    message = error_body(client.post("/connectors", json={"name": name, "config": config}),
                         400)
    assert "Connector configuration is invalid" in message and f"DLQ topic '{topic}'" in message
    regex = {**config, "topics": "", "topics.regex": "loop.*"}
    message = error_body(client.put(f"/connectors/{name}/config", json=regex), 400)
    assert f"The DLQ topic '{topic}' may not be matched by the regex for the topics " \
           "('topics.regex=loop.*') consumed by the connector" in message

    assert name not in client.get("/connectors").json()
    assert client.get(f"/connectors/{name}").status_code == 404
    assert topic not in kafka_admin.list_topics(timeout=10).topics


def test_pausing_a_task_ends_its_retry_at_once_and_the_record_is_kept(
        client: httpx.Client, worker: WorkerProcess, kafka_bootstrap: str,
        kafka_admin: AdminClient, tmp_path: Path) -> None:
    """Retrying forever (errors.retry.timeout=-1) with a backoff of seconds: a pause ends
    the wait at once, and the record is neither skipped nor failed — it is consumed again
    after a resume."""
    topic = create_topic(kafka_admin, unique_name("pause-source"))
    produce(kafka_bootstrap, topic, [(b"k0", b'{"n": 0}')])
    name = unique_name("retrying")
    response = client.put("/admin/loggers/worker.runtime.errors.handling",
                          json={"level": "DEBUG"})
    assert response.status_code == 200, response.text
    response = client.put(f"/connectors/{name}/config", json={
        **JSON_SINK, "topics": topic, "file": str(tmp_path / "out.txt"),
        "transforms": "flaky", "transforms.flaky.type": f"{ERROR_PLUGINS}.FlakyTransform",
        "transforms.flaky.failures": "1000000", "errors.retry.timeout": "-1"})
    assert response.status_code == 201, response.text
    # Attempt 5 failed: the next backoff is 4.8 s.
    wait_until(lambda: "(attempt 5); backing off" in worker.log_path.read_text(errors="replace"),
               timeout=60, message="the task to be in its fifth retry")

    started = time.monotonic()
    assert client.put(f"/connectors/{name}/pause").status_code == 202
    wait_until(lambda: client.get(f"/connectors/{name}/status").json()["tasks"][0]["state"]
               == "PAUSED", timeout=30, interval=0.05, message="the task to pause")
    assert time.monotonic() - started < 3.0
    assert client.get(f"/connectors/{name}/offsets").json()["offsets"] == []
    assert not (tmp_path / "out.txt").exists() or not (tmp_path / "out.txt").read_text()
    assert client.delete(f"/connectors/{name}").status_code == 204


def test_records_a_sink_task_reports_go_to_the_dlq_as_task_put_failures(
        client: httpx.Client, kafka_bootstrap: str, kafka_admin: AdminClient,
        tmp_path: Path) -> None:
    """KIP-610: a task reports the records it cannot write; they reach the DLQ at their
    original coordinates (stage TASK_PUT) before the offsets past them are committed."""
    topic = create_topic(kafka_admin, unique_name("errant-source"))
    values = [b'{"n": %d, "bad": %s}' % (i, b"true" if i % 3 == 0 else b"false")
              for i in range(9)]
    offsets = produce(kafka_bootstrap, topic, [(f"k{i}".encode(), v)
                                               for i, v in enumerate(values)])
    name, dlq = unique_name("errant"), unique_name("errant-dlq")
    out = tmp_path / "out.txt"
    response = client.put(f"/connectors/{name}/config", json={
        **JSON_SINK, "connector.class": f"{ERROR_PLUGINS}.ErrantReportingSink",
        "topics": topic, "file": str(out), "errors.tolerance": "all",
        "errors.deadletterqueue.topic.name": dlq,
        "errors.deadletterqueue.topic.replication.factor": "1",
        "errors.deadletterqueue.context.headers.enable": "true"})
    assert response.status_code == 201, response.text

    wait_for_committed(client, name, offsets[-1] + 1)
    assert len(out.read_text().splitlines()) == 6
    dead = read_all(kafka_bootstrap, dlq)
    assert [m.key() for m in dead] == [b"k0", b"k3", b"k6"]
    ctx = context(dead[1])
    assert (ctx["__connect.errors.topic"], ctx["__connect.errors.offset"],
            ctx["__connect.errors.stage"], ctx["__connect.errors.exception.message"]) == \
        (topic, str(offsets[3]), "TASK_PUT", f"cannot write {offsets[3]}")
