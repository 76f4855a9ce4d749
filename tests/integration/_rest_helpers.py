"""Helpers shared by the ``test_rest_*`` integration modules.

* :func:`start_worker` starts one ``connect-standalone`` subprocess outside the
  function-scoped ``standalone_worker`` fixture, so a module can share one worker between
  tests that do not interfere (each test uses its own connector names);
* :func:`path` URL-encodes a connector name as one path segment;
* :func:`error_body` checks a Kafka Connect error response;
* :func:`storage_snapshot` captures what a rejected request must leave unchanged;
* :func:`read_values` reads a topic from the beginning and counts *records* (Tansu's high
  watermark counts batches, so it is never used as a count).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from tests.support import WorkerProcess, WorkerStartError, write_properties
from worker.testing import free_port

log = logging.getLogger(__name__)

#: Session timeout of every consumer group tests create (see ``tests/conftest.py``).
SESSION_TIMEOUT_MS = 6000
#: The test plugins' package, importable by path (``TEST_IMPORT_PACKAGES`` there).
TEST_IMPORT_PACKAGES = "tests.support"
STRING_CONVERTER = "org.apache.kafka.connect.storage.StringConverter"
#: The tail of every "connector configuration is invalid" message (Kafka's wording).
VALIDATE_HINT = ("You can also find the above list of errors at the endpoint "
                 "`/connector-plugins/{connectorType}/config/validate`")


def start_worker(workdir: Path, bootstrap: str,
                 overrides: Mapping[str, object | None] | None = None) -> WorkerProcess:
    """Start a worker whose files live in ``workdir``; retry if its port was taken."""
    workdir.mkdir(parents=True, exist_ok=True)
    for attempt in range(3):
        port = free_port()
        props: dict[str, object | None] = {
            "bootstrap.servers": bootstrap,
            "listeners": f"http://127.0.0.1:{port}",
            "storage.sql.url": f"sqlite:///{workdir / 'connect.db'}",
            "offset.flush.interval.ms": 1000,
            "consumer.session.timeout.ms": SESSION_TIMEOUT_MS,
            "plugin.import.packages": TEST_IMPORT_PACKAGES,
            **(overrides or {}),
        }
        props_file = write_properties(workdir / "worker.properties",
                                      {k: v for k, v in props.items() if v is not None})
        worker = WorkerProcess(props_file, url=f"http://127.0.0.1:{port}",
                               log_path=workdir / "worker.log")
        try:
            return worker.start()
        except WorkerStartError as exc:
            if "address already in use" not in str(exc).lower() or attempt == 2:
                raise
    raise AssertionError("unreachable")


@contextmanager
def shared_worker(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
                  bootstrap: str, overrides: Mapping[str, object | None] | None = None
                  ) -> Iterator[WorkerProcess]:
    """A worker for a whole module; its log tail is printed if any test of it failed."""
    worker = start_worker(tmp_path_factory.mktemp("worker"), bootstrap, overrides)
    failed_before = request.session.testsfailed
    try:
        yield worker
    finally:
        if request.session.testsfailed > failed_before:
            print(f"\n----- {worker!r}: tail of {worker.log_path} -----\n"
                  f"{worker.log_tail(120)}")
        worker.close()


def path(name: str) -> str:
    """``/connectors/{name}`` with the name encoded as a single path segment."""
    return f"/connectors/{quote(name, safe='')}"


def error_body(response: httpx.Response, status: int) -> str:
    """Assert a Kafka Connect error response with ``status``; return its message."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"error_code", "message"}, body
    assert body["error_code"] == status
    assert isinstance(body["message"], str) and body["message"], body
    message: str = body["message"]
    return message


def storage_snapshot(client: httpx.Client) -> dict[str, Any]:
    """Every connector's config and task configs: what a rejected write must not change."""
    names = client.get("/connectors").json()
    return {name: {"config": client.get(f"{path(name)}/config").json(),
                   "tasks": client.get(f"{path(name)}/tasks").json()}
            for name in names}


def worker_id(worker: WorkerProcess) -> str:
    """The ``worker_id`` a worker reports in statuses: its listener's ``host:port``."""
    return worker.url.removeprefix("http://")


def read_values(bootstrap: str, topic: str, expected: int, *, timeout: float = 30.0,
                settle: float = 2.0) -> list[str]:
    """All record values of partition 0 of ``topic``, read from the beginning.

    Reads until ``expected`` records arrived (or ``timeout``), then ``settle`` seconds
    more so that records beyond the expected ones (duplicates) show up too. Uses a fresh
    group id and ``assign`` (no group join, nothing committed).
    """
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

    consumer = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": f"rest-test-reader-{time.monotonic_ns()}",
        "enable.auto.commit": False,
        "session.timeout.ms": SESSION_TIMEOUT_MS,
        "logger": log,
    })
    values: list[str] = []
    try:
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        deadline = time.monotonic() + timeout
        settle_until: float | None = None
        while True:
            now = time.monotonic()
            if settle_until is None and (len(values) >= expected or now >= deadline):
                settle_until = now + settle
            if settle_until is not None and now >= settle_until:
                return values
            for msg in consumer.consume(num_messages=500, timeout=0.2):
                error = msg.error()
                if error is not None:
                    if error.code() in (KafkaError._PARTITION_EOF,
                                        KafkaError.UNKNOWN_TOPIC_OR_PART):
                        continue
                    raise AssertionError(f"consumer error on {topic}: {error}")
                raw = msg.value()
                values.append("" if raw is None else raw.decode("utf-8"))
    finally:
        consumer.close()
