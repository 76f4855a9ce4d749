"""Starting ``connect-standalone`` as Kafka users do: a ``worker.properties`` written for
Apache Kafka's worker, bad worker properties (non-zero exit, the key named in the log), and
connectors given on the command line as ``.properties`` and ``.json`` files.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.integration._rest_helpers import path, read_values
from tests.support import (
    WorkerStartError,
    create_topic,
    unique_name,
    wait_for_connector_state,
    wait_until,
    write_properties,
)

pytestmark = pytest.mark.integration

JSON_CONVERTER = "org.apache.kafka.connect.json.JsonConverter"


def test_kafka_connect_standalone_properties_start_the_worker(
        standalone_worker: Callable[..., Any], kafka_admin: Any, kafka_bootstrap: str,
        unique_topic: Callable[..., str], tmp_path: Path) -> None:
    offsets_file = tmp_path / "connect.offsets"
    # Kafka's config/connect-standalone.properties, plus keys older or newer Kafka workers
    # know and we do not use: all must be accepted.
    worker = standalone_worker({
        "storage.sql.url": None,
        "key.converter": JSON_CONVERTER,
        "value.converter": JSON_CONVERTER,
        "key.converter.schemas.enable": "true",
        "value.converter.schemas.enable": "true",
        "offset.storage.file.filename": str(offsets_file),
        "offset.flush.interval.ms": "10000",
        "plugin.path": "/usr/local/share/java,/usr/local/share/kafka/plugins,/opt/connectors",
        "rest.host.name": "127.0.0.1",
        "rest.port": "8083",
        "rest.advertised.host.name": "localhost",
        "access.control.allow.origin": "*",
        "metrics.recording.level": "INFO",
        "some.future.setting": "42",
        "producer.linger.ms": "5",
    })
    client = worker.client
    assert client.get("/").status_code == 200
    # Without storage.sql.url the state lives next to Kafka's offsets file.
    assert Path(f"{offsets_file}.db").exists()

    topic = create_topic(kafka_admin, unique_topic("legacy"))
    source_file = tmp_path / "in.txt"
    source_file.write_text("hello\n", encoding="utf-8")
    name = unique_name("legacy-source")
    response = client.put(f"{path(name)}/config", json={
        "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
        "file": str(source_file), "topic": topic})
    assert response.status_code == 201, response.text
    status = wait_for_connector_state(client, name, "RUNNING", tasks_state="RUNNING",
                                      task_count=1)
    port = worker.url.rsplit(":", 1)[1]
    assert status["connector"]["worker_id"] == f"localhost:{port}"

    # The worker's JsonConverter with schemas enabled wraps the line in an envelope.
    values = read_values(kafka_bootstrap, topic, 1)
    assert [json.loads(v) for v in values] == [
        {"schema": {"type": "string", "optional": False}, "payload": "hello"}]
    assert "some.future.setting" in worker.log_tail(200)


@pytest.mark.parametrize(("key", "value"), [
    ("offset.flush.interval.ms", "abc"),
    ("offset.flush.interval.ms", "0"),
    ("listeners", "foo"),
    ("listeners", "ftp://127.0.0.1:9999"),
    ("task.shutdown.graceful.timeout.ms", "-1"),
    ("plugin.discovery", "sometimes"),
    ("value.converter", "com.example.NoSuchConverter"),
    # Kafka's client keys: one that cannot be translated, one librdkafka refuses.
    ("consumer.partition.assignment.strategy",
     "org.apache.kafka.clients.consumer.StickyAssignor"),
    ("producer.compression.type", "brotli"),
])
def test_bad_worker_property_exits_non_zero_naming_the_key(
        standalone_worker: Callable[..., Any], key: str, value: str) -> None:
    worker = standalone_worker({key: value}, start=False)
    with pytest.raises(WorkerStartError, match="exited with code"):
        worker.start(timeout=60)
    assert worker.returncode not in (None, 0)
    log = worker.log_tail(50)
    assert f"Invalid value for configuration {key}" in log, log


def test_missing_worker_properties_file_exits_non_zero(
        standalone_worker: Callable[..., Any], tmp_path: Path) -> None:
    worker = standalone_worker(start=False)
    worker.props_file = tmp_path / "does-not-exist.properties"
    with pytest.raises(WorkerStartError, match="exited with code"):
        worker.start(timeout=60)
    assert worker.returncode not in (None, 0)
    assert "does-not-exist.properties" in worker.log_tail(50)


def test_connectors_from_properties_and_json_files(
        standalone_worker: Callable[..., Any], unique_topic: Callable[..., str],
        tmp_path: Path) -> None:
    source_file = tmp_path / "in.txt"
    source_file.touch()
    from_properties = unique_name("file-source")
    # Kafka's config/connect-file-source.properties.
    properties_config = {"name": from_properties, "connector.class": "FileStreamSource",
                         "tasks.max": "1", "file": str(source_file),
                         "topic": unique_topic("props")}
    properties_file = write_properties(tmp_path / "connect-file-source.properties",
                                       properties_config)
    # The body of POST /connectors ...
    from_request = unique_name("json-request")
    request_file = tmp_path / "request.json"
    request_config = {"connector.class": "SequenceGenerator", "topic": unique_topic("json"),
                      "tasks.max": 2, "rate": 1, "count": 5}
    request_file.write_text(json.dumps({"name": from_request, "config": request_config}),
                            encoding="utf-8")
    # ... or a flat config map.
    from_map = unique_name("json-map")
    map_file = tmp_path / "map.json"
    map_file.write_text(json.dumps({"name": from_map, "connector.class": "FileStreamSink",
                                    "topics": unique_topic("sink"),
                                    "file": str(tmp_path / "out.txt")}), encoding="utf-8")

    # ... or a create request with KIP-980's initial_state, its format told by content
    # (the name ends in .conf), as Kafka's connect-standalone tells it.
    from_stopped = unique_name("json-stopped")
    stopped_file = tmp_path / "stopped.conf"
    stopped_file.write_text(json.dumps({"name": from_stopped, "initial_state": "stopped",
                                        "config": {**request_config, "tasks.max": 1}}),
                            encoding="utf-8")

    worker = standalone_worker(connector_files=[properties_file, request_file, map_file,
                                                stopped_file])
    client = worker.client

    assert sorted(client.get("/connectors").json()) == sorted(
        [from_properties, from_request, from_map, from_stopped])
    wait_for_connector_state(client, from_stopped, "STOPPED", task_count=0)
    assert client.get(f"{path(from_properties)}/config").json() == properties_config
    assert client.get(f"{path(from_request)}/config").json() == {
        "name": from_request, **{k: str(v) for k, v in request_config.items()}}
    for name, tasks in ((from_properties, 1), (from_request, 2), (from_map, 1)):
        wait_for_connector_state(client, name, "RUNNING", tasks_state="RUNNING",
                                 task_count=tasks)
    assert client.get(path(from_map)).json()["type"] == "sink"

    # Kafka re-applies the files at every start: the connectors are updated, not doubled.
    worker.restart()
    assert sorted(client.get("/connectors").json()) == sorted(
        [from_properties, from_request, from_map, from_stopped])
    # The initial state is for creation only: the file does not move it again.
    wait_for_connector_state(client, from_stopped, "STOPPED", task_count=0)
    wait_for_connector_state(client, from_request, "RUNNING", tasks_state="RUNNING",
                             task_count=2)


def test_invalid_connector_file_stops_the_worker(
        standalone_worker: Callable[..., Any], tmp_path: Path) -> None:
    bad = write_properties(tmp_path / "bad.properties", {
        "name": unique_name("bad-file"), "connector.class": "FileStreamSource"})
    worker = standalone_worker(connector_files=[bad], start=False)
    # As in Kafka, the REST API is up before the files are applied, so the readiness probe
    # may or may not see it before the process exits.
    try:
        worker.start(timeout=60)
    except WorkerStartError as exc:
        assert "exited with code" in str(exc)
    wait_until(lambda: not worker.is_running, timeout=30, message="the worker to exit")
    assert worker.returncode not in (None, 0)
    assert 'Missing required configuration "topic"' in worker.log_tail(50)
