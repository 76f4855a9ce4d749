"""The REST API fuzzed from its own ``/openapi.json``, as an outside tester would.

Schemathesis (its command line, as a user runs it) generates requests for every operation
of the document a live standalone worker serves — examples, boundary ("coverage") cases,
random and schema-violating requests, and stateful sequences that follow the document's
links — with every check it has: no response is a 5xx; each status is declared for its
operation; each body fits the declared schema and content type; a 405 names the allowed
methods; schema-violating requests are refused and schema-valid ones accepted (with the
exceptions ``rest_fuzz/schemathesis.toml`` gives, each with its reason).

The run is bounded by its example count (``FUZZ_EXAMPLES``, default below) and seeded
(``FUZZ_SEED``), so a failure is reproducible with the printed command. The figures are in
``docs/reliability.md``.

The module also checks, over real HTTP, the answers the fuzzer first found wrong.
"""

from __future__ import annotations

import collections
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration._rest_helpers import error_body
from tests.support import WorkerProcess, wait_for_connector_state, write_properties
from worker.testing.processes import free_port

CONFIG = Path(__file__).parent / "rest_fuzz" / "schemathesis.toml"
SCHEMATHESIS = Path(sys.executable).parent / "schemathesis"
EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "25"))
SEED = int(os.environ.get("FUZZ_SEED", "20261125"))
#: The connectors ``rest_fuzz/schemathesis.toml`` offers as path parameters.
CONNECTORS = ("fuzz-sink", "fuzz-source", "fuzz-stopped")
#: Log lines the worker writes for a 5xx (``worker.rest.errors``).
SERVER_ERROR_LOGS = re.compile(r"Error in REST call|Uncaught exception in REST call|"
                               r"REST call to .* answered 5\d\d")

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def fuzz_worker(tmp_path_factory: pytest.TempPathFactory, kafka_bootstrap: str
                ) -> Iterator[WorkerProcess]:
    """A worker in a directory of its own, which is also its working directory: a file
    the fuzzer names by a relative path lands there."""
    workdir = tmp_path_factory.mktemp("fuzz-worker")
    port = free_port()
    props = write_properties(workdir / "worker.properties", {
        "bootstrap.servers": kafka_bootstrap,
        "listeners": f"http://127.0.0.1:{port}",
        "storage.sql.url": f"sqlite:///{workdir / 'connect.db'}",
        "offset.flush.interval.ms": 1000,
    })
    worker = WorkerProcess(props, url=f"http://127.0.0.1:{port}",
                           log_path=workdir / "worker.log", cwd=workdir)
    with worker:  # starts it, and stops it after the module
        yield worker


def _create_connectors(worker: WorkerProcess, workdir: Path) -> None:
    source_file = workdir / "source.txt"
    source_file.write_text("one\ntwo\n")
    topic = "fuzz-topic"
    configs = {
        "fuzz-sink": ({"connector.class": "FileStreamSink", "topics": topic,
                       "file": str(workdir / "sink.txt")}, None),
        "fuzz-source": ({"connector.class": "FileStreamSource", "topic": topic,
                         "file": str(source_file)}, None),
        "fuzz-stopped": ({"connector.class": "FileStreamSource", "topic": topic,
                          "file": str(source_file)}, "STOPPED"),
    }
    for name, (config, initial) in configs.items():
        body: dict[str, Any] = {"name": name, "config": config}
        if initial:
            body["initial_state"] = initial
        assert worker.client.post("/connectors", json=body).status_code == 201
    for name in ("fuzz-sink", "fuzz-source"):
        wait_for_connector_state(worker.client, name, "RUNNING", timeout=60)


def _server_error_lines(worker: WorkerProcess) -> list[str]:
    text = worker.log_path.read_text(errors="replace")
    return [line for line in text.splitlines() if SERVER_ERROR_LOGS.search(line)]


def test_fuzzed_rest_api_answers_no_5xx_and_only_what_its_document_declares(
        fuzz_worker: WorkerProcess, tmp_path: Path) -> None:
    workdir = fuzz_worker.props_file.parent
    _create_connectors(fuzz_worker, workdir)
    reports = tmp_path / "reports"
    command = [str(SCHEMATHESIS), "--config-file", str(CONFIG), "run",
               f"{fuzz_worker.url}/openapi.json", "--max-examples", str(EXAMPLES),
               "--seed", str(SEED), "--no-color", "--report", "json,har",
               "--report-dir", str(reports)]
    run = subprocess.run(command, capture_output=True, text=True, timeout=540,
                         cwd=tmp_path, check=False)
    output = run.stdout + run.stderr

    summary = json.loads(next(reports.glob("json-*.json")).read_text())
    entries = json.loads(next(reports.glob("har-*.json")).read_text())["log"]["entries"]
    statuses = collections.Counter(e["response"]["status"] for e in entries)
    operations = summary["operations"]
    print(f"\nschemathesis (seed {SEED}, {EXAMPLES} examples per operation): "
          f"{summary['test_cases']['generated']} test cases, {len(entries)} requests, "
          f"{operations['tested']}/{operations['total']} operations, statuses "
          f"{dict(sorted(statuses.items()))}, {len(summary['failures'])} failures")

    assert run.returncode == 0, f"{' '.join(command)}\n{output[-6000:]}"
    assert summary["failures"] == [] and summary["errors"] == [], output[-6000:]
    assert operations["tested"] == operations["total"] == operations["selected"]
    assert all(p["status"] == "success" for p in summary["phases"].values()), summary["phases"]
    assert not [s for s in statuses if s >= 500], statuses
    assert _server_error_lines(fuzz_worker) == []
    # The fuzzer reached past the 404s: the connectors it was offered were used.
    assert statuses[200] > 0 and statuses[400] > 0
    assert any(f"/connectors/{name}" in e["request"]["url"]
               for e in entries for name in CONNECTORS)


# --- what the first fuzzing run found, checked one by one ---------------------------


@pytest.mark.parametrize(("method", "url", "content"), [
    ("POST", "/connectors", b'{"name": "a",'),
    ("POST", "/connectors", b""),
    ("PUT", "/connectors/a/config", b"not json"),
    ("PATCH", "/connectors/a/config", b""),
    ("PATCH", "/connectors/a/offsets", b"[1, 2"),
    ("PUT", "/connector-plugins/FileStreamSink/config/validate", b""),
    ("PUT", "/admin/loggers/root", b"{"),
])
def test_missing_or_malformed_json_is_a_400_not_a_500(fuzz_worker: WorkerProcess,
                                                      method: str, url: str,
                                                      content: bytes) -> None:
    response = fuzz_worker.client.request(method, url, content=content,
                                          headers={"Content-Type": "application/json"})
    assert error_body(response, 400).startswith("Cannot deserialize request body: ")


@pytest.mark.parametrize(("url", "allowed"), [
    ("/connectors/x", "DELETE, GET"),
    ("/connectors/x/offsets", "DELETE, GET, PATCH"),
    ("/admin/dynamic-worker-config", "GET, PATCH"),
    ("/admin/dynamic-worker-config/validate", "POST"),
    ("/admin/dynamic-worker-config/some.key", "DELETE"),
])
def test_405_names_every_method_of_the_resource(fuzz_worker: WorkerProcess, url: str,
                                                allowed: str) -> None:
    response = fuzz_worker.client.request("OPTIONS", url)
    assert error_body(response, 405) == "HTTP 405 Method Not Allowed"
    assert response.headers["allow"] == allowed


def test_connector_names_with_control_characters_are_refused(
        fuzz_worker: WorkerProcess) -> None:
    body = {"name": "a\u0001b", "config": {"connector.class": "FileStreamSink",
                                            "topics": "t", "file": "out.txt"}}
    message = error_body(fuzz_worker.client.post("/connectors", json=body), 400)
    assert ("Invalid value a\u0001b for configuration name: String may not contain "
            "control sequences but had the following ASCII chars: 1") in message
    assert "a\u0001b" not in fuzz_worker.client.get("/connectors").json()


def test_standalone_refuses_the_internal_task_config_write_with_400(
        fuzz_worker: WorkerProcess) -> None:
    response = fuzz_worker.client.post("/connectors/any/tasks", json=[{"a": "b"}])
    assert error_body(response, 400) == ("Kafka Connect in standalone mode does not "
                                         "support externally setting task configurations.")


def test_document_declares_the_internal_endpoint_and_no_422(
        fuzz_worker: WorkerProcess) -> None:
    document = fuzz_worker.client.get("/openapi.json").json()
    operation = document["paths"]["/connectors/{connector}/tasks"]["post"]
    assert {"204", "400", "409", "500"} <= set(operation["responses"])
    declared = {status for item in document["paths"].values() for op in item.values()
                for status in op["responses"]}
    assert "422" not in declared
