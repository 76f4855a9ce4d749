"""KIP-779 end to end: a FileStreamSource whose file holds one line larger than the producer
may send (``producer.override.max.request.size``, Kafka's name). With
``errors.tolerance=all`` the worker logs the failure as stage ``KAFKA_PRODUCE``, skips the
line, delivers every other line in order, keeps the task RUNNING, commits its offset past
the end of the file and counts the failure in ``task-error-metrics``. With the default
tolerance the task fails with a trace that says why."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
from prometheus_client.parser import text_string_to_metric_families

from tests.support import create_topic, unique_name, wait_for_connector_state, wait_until

pytestmark = pytest.mark.integration

FILE_SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"
LINES = [f"line-{i}" for i in range(1, 6)] + ["x" * 5000] + [f"line-{i}" for i in range(6, 11)]


def source_config(file: Path, topic: str, tolerance: str) -> dict[str, str]:
    return {"connector.class": FILE_SOURCE, "tasks.max": "1", "file": str(file),
            "topic": topic, "producer.override.max.request.size": "2000",
            "value.converter": "org.apache.kafka.connect.storage.StringConverter",
            "errors.tolerance": tolerance, "errors.log.enable": "true"}


def read_values(bootstrap: str, topic: str, expected: int, timeout: float = 30.0
                ) -> list[str]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "enable.auto.commit": False,
                         "group.id": f"kip779-reader-{time.monotonic_ns()}"})
    values: list[str] = []
    try:
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        deadline = time.monotonic() + timeout
        while len(values) < expected and time.monotonic() < deadline:
            values += [(m.value() or b"").decode() for m in consumer.consume(100, 0.2)
                       if m.error() is None]
    finally:
        consumer.close()
    return values


def task_failures(client: Any, connector: str) -> float:
    response = client.get("/metrics")
    assert response.status_code == 200, response.text
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            if (sample.name == "kafka_connect_task_error_metrics_total_record_failures"
                    and sample.labels == {"connector": connector, "task": "0"}):
                return sample.value
    raise AssertionError(f"no total-record-failures sample for {connector}")


def test_tolerated_send_failure_skips_the_record_and_the_task_goes_on(
        standalone_worker: Any, kafka_admin: Any, kafka_bootstrap: str,
        tmp_path: Path) -> None:
    worker = standalone_worker()
    topic = create_topic(kafka_admin, unique_name("kip779"))
    file = tmp_path / "input.txt"
    file.write_text("\n".join(LINES) + "\n")
    name = unique_name("kip779-all")
    response = worker.client.put(f"/connectors/{name}/config",
                                 json=source_config(file, topic, "all"))
    assert response.status_code == 201, response.text

    expected = [line for line in LINES if len(line) < 100]
    assert read_values(kafka_bootstrap, topic, len(expected)) == expected
    status = wait_for_connector_state(worker.client, name, "RUNNING", tasks_state="RUNNING")
    assert status["tasks"][0]["state"] == "RUNNING"

    def committed() -> Any:
        offsets = worker.client.get(f"/connectors/{name}/offsets").json()["offsets"]
        return offsets[0]["offset"] if offsets else None

    size = file.stat().st_size
    wait_until(lambda: (committed() or {}).get("position") == size, timeout=30,
               message=lambda: f"offset at the end of the file ({size}); have {committed()}")
    assert task_failures(worker.client, name) == 1.0
    log = worker.log_path.read_text()
    assert f"Error encountered in task {name}-0. Executing stage 'KAFKA_PRODUCE'" in log
    assert "x" * 100 not in log  # the record's value is not logged (include.messages off)


def test_untolerated_send_failure_fails_the_task_with_the_reason(
        standalone_worker: Any, kafka_admin: Any, tmp_path: Path) -> None:
    worker = standalone_worker()
    topic = create_topic(kafka_admin, unique_name("kip779"))
    file = tmp_path / "input.txt"
    file.write_text("\n".join(LINES) + "\n")
    name = unique_name("kip779-none")
    response = worker.client.put(f"/connectors/{name}/config",
                                 json=source_config(file, topic, "none"))
    assert response.status_code == 201, response.text
    status = wait_for_connector_state(worker.client, name, "RUNNING", tasks_state="FAILED")
    trace = status["tasks"][0]["trace"]
    assert f"Failed to send a record to {topic}" in trace
    assert "too large" in trace.lower()
