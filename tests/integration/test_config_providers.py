"""Config providers on a real standalone worker (issue #12, item 2).

A worker with ``config.providers=file,dir,env`` runs a FileStreamSink whose output file,
topic, converter and a password come from ``${file:...}``, ``${dir:...}`` and ``${env:...}``
placeholders: the REST API and the store keep them as written, the task runs with them
resolved, and a placeholder that does not resolve fails what uses it with an error naming
the placeholder — never showing a secret, in answers, statuses, the worker's log or its
database.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from tests.support import (
    WorkerProcess,
    WorkerStartError,
    create_topic,
    wait_for_connector_state,
    wait_until,
)

pytestmark = pytest.mark.integration

STRING_CONVERTER = "org.apache.kafka.connect.storage.StringConverter"
KAFKA_LISTED_TYPES = {"source", "sink", "converter", "header_converter", "transformation",
                      "predicate"}


@dataclass
class Secrets:
    """Where the test's secrets live, and the placeholders that name them."""

    secret: str  # a password no answer, log line or stored byte may ever show
    directory: Path
    props_file: Path
    dir_provider_dir: Path
    out_file: Path

    def file(self, key: str) -> str:
        return f"${{file:{self.props_file}:{key}}}"

    def dir(self, key: str) -> str:
        return f"${{dir:{self.dir_provider_dir}:{key}}}"

    def write_props(self, **values: str) -> None:
        self.props_file.write_text("".join(f"{k}={v}\n" for k, v in values.items()),
                                   encoding="utf-8")


@pytest.fixture
def secrets(tmp_path: Path) -> Secrets:
    directory = tmp_path / "secrets"
    conf_dir = directory / "conf.d"
    conf_dir.mkdir(parents=True)
    found = Secrets(f"Pa55-{uuid.uuid4().hex}", directory, directory / "sink.properties",
                    conf_dir, tmp_path / "out" / "sink-output.txt")
    found.out_file.parent.mkdir()
    found.write_props(**{"out.file": str(found.out_file), "db.password": found.secret})
    # No trailing newline: the directory provider keeps file content byte for byte.
    (conf_dir / "value-converter").write_text(STRING_CONVERTER, encoding="utf-8")
    return found


def provider_props(secrets: Secrets, **extra: str) -> dict[str, object | None]:
    return {
        "config.providers": "file,dir,env",
        "config.providers.file.class":
            "org.apache.kafka.common.config.provider.FileConfigProvider",
        "config.providers.file.param.allowed.paths": str(secrets.directory),
        "config.providers.dir.class": "DirectoryConfigProvider",
        "config.providers.env.class": "EnvVar",
        "config.providers.env.param.allowlist.pattern": "CP_IT_.*",
        # A worker property given through a placeholder, resolved at start-up.
        "offset.flush.interval.ms": "${env:CP_IT_FLUSH_MS}",
        **extra,
    }


@pytest.fixture
def worker(standalone_worker: Callable[..., WorkerProcess], secrets: Secrets,
           unique_topic: Callable[..., str]) -> WorkerProcess:
    return standalone_worker(provider_props(secrets),
                             env={"CP_IT_FLUSH_MS": "500", "CP_IT_TOPIC": unique_topic("in")})


@pytest.fixture
def name(unique_topic: Callable[..., str]) -> str:
    """The connector's name, and so its consumer group: never shared between tests."""
    return unique_topic("vault-sink")


def sink_config(secrets: Secrets) -> dict[str, str]:
    return {
        "connector.class": "FileStreamSink",
        "tasks.max": "1",
        "topics": "${env:CP_IT_TOPIC}",
        "file": secrets.file("out.file"),
        "value.converter": secrets.dir("value-converter"),
        "key.converter": STRING_CONVERTER,
        "db.password": secrets.file("db.password"),
    }


def topic_of(worker: WorkerProcess) -> str:
    return worker.env["CP_IT_TOPIC"]


def produce(bootstrap: str, topic: str, values: list[str]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for value in values:
        producer.produce(topic, value=value.encode())
    assert producer.flush(30) == 0


def assert_no_secret(secrets: Secrets, worker: WorkerProcess, *texts: str) -> None:
    """The secret is in none of ``texts``, the worker's log, or its database files."""
    for text in texts:
        assert secrets.secret not in text
    assert secrets.secret not in worker.log_path.read_text(encoding="utf-8", errors="replace")
    db_files = list(worker.props_file.parent.glob("connect.db*"))
    assert db_files, "the worker's SQLite files were expected next to its properties"
    for db_file in db_files:
        assert secrets.secret.encode() not in db_file.read_bytes(), db_file


def errors_of(infos: dict[str, Any]) -> dict[str, list[str]]:
    return {c["value"]["name"]: c["value"]["errors"] for c in infos["configs"]
            if c["value"]["errors"]}


def traces(status: dict[str, Any]) -> list[str]:
    return [status["connector"].get("trace") or "",
            *(t.get("trace") or "" for t in status["tasks"])]


def test_placeholders_are_stored_raw_and_resolved_where_used(
        worker: WorkerProcess, secrets: Secrets, name: str, kafka_bootstrap: str, kafka_admin: Any
) -> None:
    client = worker.client
    topic = create_topic(kafka_admin, topic_of(worker))
    config = sink_config(secrets)

    response = client.put(f"/connectors/{name}/config", json=config)
    assert response.status_code == 201, response.text
    wait_for_connector_state(client, name, "RUNNING", tasks_state="RUNNING",
                             task_count=1)

    # The REST API returns the connector and task configs as written (and stored).
    config_answer = client.get(f"/connectors/{name}/config")
    assert config_answer.json() == {**config, "name": name}
    info = client.get(f"/connectors/{name}")
    assert info.json()["config"] == {**config, "name": name}
    tasks = client.get(f"/connectors/{name}/tasks")
    task_config = tasks.json()[0]["config"]
    for key in ("topics", "file", "value.converter", "db.password"):
        assert task_config[key] == config[key], key

    # The task runs with them resolved: it reads the topic from the environment, converts
    # with the converter named in the directory and writes to the file named in the file.
    produce(kafka_bootstrap, topic, ["one", "two", "three"])
    wait_until(lambda: secrets.out_file.exists()
               and secrets.out_file.read_text().splitlines() == ["one", "two", "three"],
               timeout=60, message=lambda: f"sink output; log:\n{worker.log_tail(60)}")

    # Kafka's /connector-plugins lists no config providers.
    plugins = client.get("/connector-plugins", params={"connectorsOnly": "false"}).json()
    assert {p["type"] for p in plugins} <= KAFKA_LISTED_TYPES
    assert not [p for p in plugins if "ConfigProvider" in p["class"]]

    assert_no_secret(secrets, worker, config_answer.text, info.text, tasks.text,
                     client.get(f"/connectors/{name}/status").text)


def test_validation_resolves_first_and_shows_values_as_written(
        worker: WorkerProcess, secrets: Secrets) -> None:
    client = worker.client
    good = {**sink_config(secrets), "name": "bad-sink"}
    response = client.put("/connector-plugins/FileStreamSink/config/validate", json=good)
    assert response.status_code == 200, response.text
    assert response.json()["error_count"] == 0, errors_of(response.json())
    values = {c["value"]["name"]: c["value"] for c in response.json()["configs"]}
    assert values["file"]["value"] == good["file"]
    assert values["value.converter"]["value"] == good["value.converter"]

    # A secret that does not parse, and a key the file does not have.
    bad = {**good, "tasks.max": secrets.file("db.password"),
           "file": secrets.file("out.fiel")}
    response = client.put("/connector-plugins/FileStreamSink/config/validate", json=bad)
    assert response.status_code == 200, response.text
    body = response.json()
    values = {c["value"]["name"]: c["value"] for c in body["configs"]}
    assert body["error_count"] == 2
    assert values["file"]["errors"] == [
        f"cannot resolve {bad['file']}: config provider 'file' has no key 'out.fiel' at "
        f"path {secrets.props_file}"]
    assert values["file"]["value"] == bad["file"]
    assert len(values["tasks.max"]["errors"]) == 1
    assert bad["tasks.max"] in values["tasks.max"]["errors"][0]  # redacted, not the value
    assert values["tasks.max"]["value"] == bad["tasks.max"]

    # Creating it is refused with the same reasons, and nothing is stored.
    created = client.post("/connectors", json={"name": "bad-sink", "config": bad})
    assert created.status_code == 400, created.text
    assert f"cannot resolve {bad['file']}" in created.json()["message"]
    assert client.get("/connectors").json() == []

    assert_no_secret(secrets, worker, response.text, created.text)


def test_a_placeholder_that_stops_resolving_fails_connector_and_task(
        worker: WorkerProcess, secrets: Secrets, name: str, kafka_admin: Any) -> None:
    client = worker.client
    create_topic(kafka_admin, topic_of(worker))
    config = sink_config(secrets)
    assert client.put(f"/connectors/{name}/config", json=config).status_code == 201
    wait_for_connector_state(client, name, "RUNNING", tasks_state="RUNNING",
                             task_count=1)

    # The secret store loses the key; the connector and its task start again.
    secrets.write_props(**{"db.password": secrets.secret})
    restart = client.post(f"/connectors/{name}/restart",
                          params={"includeTasks": "true"})
    assert restart.status_code in (200, 202, 204), restart.text
    status = wait_for_connector_state(client, name, "FAILED", tasks_state="FAILED",
                                      task_count=1)

    reason = (f"cannot resolve {config['file']}: config provider 'file' has no key "
              f"'out.file' at path {secrets.props_file}")
    for trace in traces(status):
        assert f"Invalid value for configuration file: {reason}" in trace
    assert client.get(f"/connectors/{name}/config").json() == {**config,
                                                                 "name": name}
    assert_no_secret(secrets, worker, str(status))

    # Put back, a restart resolves again and runs.
    secrets.write_props(**{"out.file": str(secrets.out_file), "db.password": secrets.secret})
    assert client.post(f"/connectors/{name}/restart",
                       params={"includeTasks": "true"}).status_code in (200, 202, 204)
    wait_for_connector_state(client, name, "RUNNING", tasks_state="RUNNING",
                             task_count=1)


def test_an_unresolvable_worker_property_fails_startup_naming_it(
        standalone_worker: Callable[..., WorkerProcess], secrets: Secrets) -> None:
    worker = standalone_worker(
        provider_props(secrets, **{"producer.sasl.password": secrets.file("db.password")}),
        start=False, env={})  # CP_IT_FLUSH_MS is not set

    with pytest.raises(WorkerStartError):
        worker.start(timeout=60)

    assert worker.returncode == 1
    log = worker.log_tail(200)
    assert ("Invalid value for configuration offset.flush.interval.ms: cannot resolve "
            "${env:CP_IT_FLUSH_MS}: config provider 'env' has no key 'CP_IT_FLUSH_MS'") in log
    assert secrets.secret not in log
    with pytest.raises(httpx.HTTPError):
        httpx.get(worker.url, timeout=1.0)


def read_config_topic(bootstrap: str, topic: str, until_keys: set[str],
                      timeout: float = 30.0) -> dict[str, bytes]:
    """Every record of the config topic (by key, last wins) once ``until_keys`` were seen."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{uuid.uuid4()}",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    records: dict[str, bytes] = {}
    try:
        def seen_all() -> bool:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None and message.key():
                records[message.key().decode()] = message.value() or b""
            return until_keys <= set(records)
        wait_until(seen_all, timeout=timeout, interval=0,
                   message=lambda: f"config topic keys {sorted(records)}")
    finally:
        consumer.close()
    return records


def test_distributed_config_topic_holds_placeholders_never_secrets(
        distributed_cluster: Callable[..., Any], secrets: Secrets, name: str,
        kafka_bootstrap: str,
        kafka_admin: Any, unique_topic: Callable[..., str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CP_IT_FLUSH_MS", "500")  # inherited by the worker process
    cluster = distributed_cluster(size=1, overrides=provider_props(secrets))
    client = cluster.workers[0].client
    topic = create_topic(kafka_admin, unique_topic("in"))
    config = {**sink_config(secrets), "topics": topic}

    assert client.put(f"/connectors/{name}/config", json=config).status_code == 201
    wait_for_connector_state(client, name, "RUNNING", tasks_state="RUNNING",
                             task_count=1, timeout=90)
    produce(kafka_bootstrap, topic, ["a", "b"])
    wait_until(lambda: secrets.out_file.exists()
               and secrets.out_file.read_text().splitlines() == ["a", "b"], timeout=60)

    records = read_config_topic(kafka_bootstrap, f"{cluster.group_id}-configs",
                                {f"connector-{name}", f"task-{name}-0",
                                 f"commit-{name}"})
    task_record = records[f"task-{name}-0"].decode()
    assert config["file"] in task_record and config["db.password"] in task_record
    for key, value in records.items():
        assert secrets.secret.encode() not in value, key
        assert str(secrets.out_file).encode() not in value, key
