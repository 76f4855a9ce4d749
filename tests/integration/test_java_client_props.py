"""A worker and connectors configured with Kafka's Java client property names run
unchanged; what cannot be honoured is a validation error on its key.

A real worker process and the session's Kafka: the worker's ``producer.``/``consumer.``/
``admin.`` keys and the connectors' overrides are written as Apache Kafka Connect users
write them (``max.request.size``, ``fetch.max.wait.ms``, ``max.poll.records``, Java
assignor and partitioner classes, serializers that only Java needs); records flow from a
FileStreamSource to a FileStreamSink through them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.integration._rest_helpers import STRING_CONVERTER
from tests.support import create_topic, unique_name, wait_for_connector_state, wait_until

pytestmark = pytest.mark.integration

JAVA_WORKER_KEYS = {
    "producer.max.request.size": "2097152",
    "producer.buffer.memory": "33554432",
    "producer.key.serializer": "org.apache.kafka.common.serialization.ByteArraySerializer",
    "consumer.fetch.max.wait.ms": "100",
    "consumer.max.poll.records": "50",
    "consumer.partition.assignment.strategy":
        "org.apache.kafka.clients.consumer.RangeAssignor",
    "consumer.exclude.internal.topics": "true",
    "admin.default.api.timeout.ms": "60000",
}
SECRET = "never-5hown"


def test_java_named_client_keys_run_end_to_end(standalone_worker: Any, kafka_admin: Any,
                                               tmp_path: Path) -> None:
    worker = standalone_worker({"key.converter": STRING_CONVERTER,
                                "value.converter": STRING_CONVERTER, **JAVA_WORKER_KEYS})
    topic = create_topic(kafka_admin, unique_name("java-props"))
    source_file, sink_file = tmp_path / "in.txt", tmp_path / "out.txt"
    lines = [f"line-{n}" for n in range(200)]
    source_file.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    source = {"connector.class": "FileStreamSource", "file": str(source_file),
              "topic": topic,
              "producer.override.max.request.size": "1048576",
              "producer.override.partitioner.class":
                  "org.apache.kafka.clients.producer.internals.DefaultPartitioner",
              "producer.override.interceptor.classes": "io.example.MonitoringInterceptor",
              "producer.override.send.buffer.bytes": "-1"}
    sink = {"connector.class": "FileStreamSink", "file": str(sink_file), "topics": topic,
            "consumer.override.max.poll.records": "7",
            "consumer.override.partition.assignment.strategy":
                "org.apache.kafka.clients.consumer.CooperativeStickyAssignor",
            "consumer.override.fetch.max.wait.ms": "50"}
    for name, config in (("java-source", source), ("java-sink", sink)):
        config["name"] = name
        validated = worker.client.put(
            f"/connector-plugins/{config['connector.class']}/config/validate", json=config)
        assert validated.status_code == 200 and validated.json()["error_count"] == 0, \
            validated.text
        assert worker.client.put(f"/connectors/{name}/config",
                                 json=config).status_code == 201
        wait_for_connector_state(worker.client, name, "RUNNING", tasks_state="RUNNING")

    def written() -> list[str]:
        return sink_file.read_text().splitlines() if sink_file.exists() else []

    wait_until(lambda: len(written()) >= len(lines), timeout=60,
               message=lambda: f"{len(lines)} lines in the sink's file; have {len(written())}")
    assert written() == lines
    log = worker.log_tail(400)
    # Java-only keys are named in a warning (once per set), never passed to librdkafka.
    assert "Ignoring key.serializer for connector producer clients" in log, log


@pytest.mark.parametrize(("connector", "key", "value", "says"), [
    ("FileStreamSink", "consumer.override.partition.assignment.strategy",
     "org.apache.kafka.clients.consumer.StickyAssignor", "CooperativeStickyAssignor"),
    ("FileStreamSource", "producer.override.compression.type", "brotli",
     "the Kafka client refuses it"),
    ("FileStreamSource", "producer.override.partitioner.class", "com.acme.RegionPartitioner",
     "Java partitioner"),
    ("FileStreamSink", "consumer.override.sasl.jaas.config",
     f'com.acme.LdapLoginModule required password="{SECRET}";', "no equivalent"),
    ("FileStreamSink", "consumer.override.max.poll.records", "0", "positive integer"),
])
def test_client_keys_that_cannot_be_honoured_are_errors_on_their_keys(
        standalone_worker: Any, tmp_path: Path, connector: str, key: str, value: str,
        says: str) -> None:
    worker = standalone_worker()
    config = {"name": "refused", "connector.class": connector, "file": str(tmp_path / "f.txt"),
              ("topic" if connector == "FileStreamSource" else "topics"): "t", key: value}
    response = worker.client.put(f"/connector-plugins/{connector}/config/validate",
                                 json=config)
    assert response.status_code == 200, response.text
    errors = {c["value"]["name"]: c["value"]["errors"] for c in response.json()["configs"]
              if c["value"]["errors"]}
    assert list(errors) == [key], errors
    assert says in errors[key][0] and SECRET not in response.text
    created = worker.client.put("/connectors/refused/config", json=config)
    assert created.status_code == 400 and says in created.text and SECRET not in created.text
    assert worker.client.get("/connectors").json() == []
