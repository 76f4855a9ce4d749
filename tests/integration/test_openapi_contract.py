"""``/openapi.json`` against what a real standalone worker answers, over real HTTP.

Each case is a request to one operation and the status it must get; the answer's status
must be declared for that operation and its body must fit the declared schema
(``tests/unit/worker/rest/openapi_contract.py`` does the checking). Together with the
unit-side ``FAKE_CASES`` (statuses a standalone worker cannot produce on demand: herder
failures, distributed-mode conflicts, health while starting or stuck, topic tracking
disabled), the cases must exercise every operation of the document and every status it
declares.

One worker serves the module; the connectors the cases need are made once, up front.
Cases run in the table's order, each on its own connector where it changes one. The
dynamic worker configuration's writes (``DYNAMIC_CASES``) need an https listener, whose
TLS settings are what may change: a second worker, with one, serves those.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.integration._rest_helpers import path
from tests.support import (
    WorkerProcess,
    create_topic,
    unique_name,
    wait_for_connector_state,
    write_properties,
)
from tests.unit.worker.rest.conftest import FakeHerder
from tests.unit.worker.rest.openapi_contract import (
    FAKE_CASES,
    Case,
    case_id,
    check_answer,
    uncovered,
)
from worker.rest.app import create_app
from worker.testing import free_port
from worker.testing.tls import TestCA

pytestmark = pytest.mark.integration

TOPIC = unique_name("openapi-contract")
RUNNING = "contract-running"  # running, one task: reads, restarts
CONFIG = "contract-config"  # reconfigured by PUT/PATCH .../config
PAUSE = "contract-pause"  # paused, then resumed
STOP = "contract-stop"  # stopped
STOPPED = "contract-stopped"  # created STOPPED: its offsets may be written
DOOMED = "contract-doomed"  # deleted
MISSING = "contract-missing"  # never exists

MALFORMED = b'{"name": '
NOT_JSON = {"content": b'{"level": "INFO"}', "content_type": "text/plain"}


def generator(**extra: str) -> dict[str, str]:
    """A slow, bounded source: these connectors exist to be inspected."""
    return {"connector.class": "SequenceGenerator", "topic": TOPIC, "tasks.max": "1",
            "rate": "5", "count": "20", **extra}


def _malformed(operation: str, url: str) -> Case:
    # Kafka answers 500 here (Jackson's error reaches its mapper's catch-all); we say 400.
    return Case(operation, url, 400, content=MALFORMED, content_type="application/json")


# Path templates, as the document spells them.
ONE = "/connectors/{connector}"
TASK = f"{ONE}/tasks/{{task}}"
LOGGER = "/admin/loggers/{logger}"
VALIDATE = "PUT /connector-plugins/{plugin}/config/validate"
SEQUENCE_OFFSETS = {"offsets": [{"partition": {"task": 0}, "offset": {"seq": 3}}]}
DYNAMIC = "/admin/dynamic-worker-config"

REAL_CASES: list[Case] = [
    Case("GET /", "/", 200),
    Case("GET /health", "/health", 200),
    Case("GET /metrics", "/metrics", 200),
    # --- connectors
    Case("GET /connectors", "/connectors", 200),
    Case("GET /connectors", "/connectors?expand=status&expand=info", 200),
    Case("GET /connectors", "/connectors?expand=false", 200),  # ignored: a map of {}
    Case("POST /connectors", "/connectors", 201,
         json={"name": "contract-created", "config": generator()}),
    Case("POST /connectors", "/connectors", 400, json={"name": "x", "config": {"topic": "t"}}),
    Case("POST /connectors", "/connectors", 409, json={"name": RUNNING, "config": generator()}),
    Case("POST /connectors", "/connectors", 415, **NOT_JSON),
    _malformed("POST /connectors", "/connectors"),
    Case(f"GET {ONE}", path(RUNNING), 200),
    Case(f"GET {ONE}", path(MISSING), 404),
    Case(f"DELETE {ONE}", path(DOOMED), 204),
    Case(f"DELETE {ONE}", path(MISSING), 404),
    Case(f"GET {ONE}/config", f"{path(RUNNING)}/config", 200),
    Case(f"GET {ONE}/config", f"{path(MISSING)}/config", 404),
    Case(f"PUT {ONE}/config", f"{path('contract-put')}/config", 201, json=generator()),
    Case(f"PUT {ONE}/config", f"{path(CONFIG)}/config", 200, json=generator(rate="4")),
    Case(f"PUT {ONE}/config", f"{path(CONFIG)}/config", 400,
         json=generator(name="another-name")),
    Case(f"PUT {ONE}/config", f"{path(CONFIG)}/config", 415, **NOT_JSON),
    Case(f"PUT {ONE}/config", f"{path(CONFIG)}/config", 400, json=["not", "a", "map"]),
    Case(f"PATCH {ONE}/config", f"{path(CONFIG)}/config", 200, json={"rate": "3"}),
    Case(f"PATCH {ONE}/config", f"{path(CONFIG)}/config", 400, json={"tasks.max": "0"}),
    Case(f"PATCH {ONE}/config", f"{path(MISSING)}/config", 404, json={"rate": "3"}),
    Case(f"PATCH {ONE}/config", f"{path(CONFIG)}/config", 415, **NOT_JSON),
    _malformed(f"PATCH {ONE}/config", f"{path(CONFIG)}/config"),
    Case(f"GET {ONE}/status", f"{path(RUNNING)}/status", 200),
    Case(f"GET {ONE}/status", f"{path(MISSING)}/status", 404),
    Case(f"POST {ONE}/restart", f"{path(RUNNING)}/restart", 204),
    Case(f"POST {ONE}/restart",
         f"{path(RUNNING)}/restart?includeTasks=true", 202),
    Case(f"POST {ONE}/restart", f"{path(MISSING)}/restart", 404),
    Case(f"PUT {ONE}/pause", f"{path(PAUSE)}/pause", 202),
    Case(f"PUT {ONE}/pause", f"{path(MISSING)}/pause", 404),
    Case(f"PUT {ONE}/resume", f"{path(PAUSE)}/resume", 202),
    Case(f"PUT {ONE}/resume", f"{path(MISSING)}/resume", 404),
    Case(f"PUT {ONE}/stop", f"{path(STOP)}/stop", 204),
    Case(f"PUT {ONE}/stop", f"{path(MISSING)}/stop", 404),
    Case(f"GET {ONE}/tasks", f"{path(RUNNING)}/tasks", 200),
    Case(f"GET {ONE}/tasks", f"{path(MISSING)}/tasks", 404),
    # The internal write of distributed mode: a standalone worker refuses it.
    Case(f"POST {ONE}/tasks", f"{path(RUNNING)}/tasks", 400, json=[{"task.class": "T"}]),
    _malformed(f"POST {ONE}/tasks", f"{path(RUNNING)}/tasks"),
    Case(f"POST {ONE}/tasks", f"{path(RUNNING)}/tasks", 415, **NOT_JSON),
    Case(f"GET {TASK}/status", f"{path(RUNNING)}/tasks/0/status", 200),
    Case(f"GET {TASK}/status", f"{path(RUNNING)}/tasks/9/status", 404),
    Case(f"GET {TASK}/status", f"{path(RUNNING)}/tasks/zero/status", 404),
    Case(f"POST {TASK}/restart", f"{path(RUNNING)}/tasks/0/restart", 204),
    Case(f"POST {TASK}/restart", f"{path(RUNNING)}/tasks/9/restart", 404),
    # --- KIP-875 offsets
    Case(f"GET {ONE}/offsets", f"{path(RUNNING)}/offsets", 200),
    Case(f"GET {ONE}/offsets", f"{path(MISSING)}/offsets", 404),
    Case(f"PATCH {ONE}/offsets", f"{path(STOPPED)}/offsets", 200, json=SEQUENCE_OFFSETS),
    Case(f"PATCH {ONE}/offsets", f"{path(STOPPED)}/offsets", 400, json={"offsets": []}),
    Case(f"PATCH {ONE}/offsets", f"{path(MISSING)}/offsets", 404, json=SEQUENCE_OFFSETS),
    Case(f"PATCH {ONE}/offsets", f"{path(STOPPED)}/offsets", 415, **NOT_JSON),
    Case(f"PATCH {ONE}/offsets", f"{path(STOPPED)}/offsets", 400, json={"offsets": "all"}),
    Case(f"DELETE {ONE}/offsets", f"{path(STOPPED)}/offsets", 200),
    Case(f"DELETE {ONE}/offsets", f"{path(RUNNING)}/offsets", 400),  # not STOPPED
    Case(f"DELETE {ONE}/offsets", f"{path(MISSING)}/offsets", 404),
    # --- KIP-558 topics
    Case(f"GET {ONE}/topics", f"{path(RUNNING)}/topics", 200),
    Case(f"PUT {ONE}/topics/reset", f"{path(RUNNING)}/topics/reset", 202),
    # --- plugins
    Case("GET /connector-plugins", "/connector-plugins", 200),
    Case("GET /connector-plugins", "/connector-plugins?connectorsOnly=false", 200),
    Case("GET /connector-plugins/{plugin}/config",
         "/connector-plugins/SequenceGenerator/config", 200),
    Case("GET /connector-plugins/{plugin}/config", "/connector-plugins/NoSuchPlugin/config",
         404),
    Case(VALIDATE, "/connector-plugins/SequenceGenerator/config/validate", 200,
         json=generator(name="v")),
    Case(VALIDATE, "/connector-plugins/FileStreamSink/config/validate", 400,
         json=generator(name="v")),
    Case(VALIDATE, "/connector-plugins/SequenceGenerator/config/validate", 415, **NOT_JSON),
    _malformed(VALIDATE, "/connector-plugins/SequenceGenerator/config/validate"),
    # --- KIP-495 loggers
    Case("GET /admin/loggers", "/admin/loggers", 200),
    Case(f"GET {LOGGER}", "/admin/loggers/root", 200),
    Case(f"GET {LOGGER}", "/admin/loggers/no.such.logger", 404),
    Case(f"PUT {LOGGER}", "/admin/loggers/worker.rest.contract", 200, json={"level": "INFO"}),
    Case(f"PUT {LOGGER}", "/admin/loggers/worker.rest.contract?scope=cluster", 204,
         json={"level": "INFO"}),
    Case(f"PUT {LOGGER}", "/admin/loggers/worker.rest.contract", 400, json={"lvl": "INFO"}),
    Case(f"PUT {LOGGER}", "/admin/loggers/worker.rest.contract", 404, json={"level": "LOUD"}),
    Case(f"PUT {LOGGER}", "/admin/loggers/worker.rest.contract", 415, **NOT_JSON),
    _malformed(f"PUT {LOGGER}", "/admin/loggers/worker.rest.contract"),
    # --- our extensions: what a worker without https listeners answers
    Case("GET /admin/worker", "/admin/worker", 200),
    Case("GET /admin/cluster", "/admin/cluster", 200),
    Case("GET /admin/dynamic-worker-config", "/admin/dynamic-worker-config", 200),
    Case(f"POST {DYNAMIC}/validate", f"{DYNAMIC}/validate", 400,  # nothing reconfigurable
         json={"listeners.https.ssl.client.auth": "required"}),
    Case(f"DELETE {DYNAMIC}/{{name}}", f"{DYNAMIC}/listeners.https.ssl.client.auth", 404),
]

#: Keystore files of the TLS worker, written by its fixture; "{tls}" in a body names their
#: directory.
TLS_PASSWORD = "Contract-Keystore-Pw"
OTHER_PASSWORD = "Contract-Other-Pw"
KEYSTORE = "listeners.https.ssl.keystore.location"
KS_PASSWORD = "listeners.https.ssl.keystore.password"

DYNAMIC_CASES: list[Case] = [
    Case(f"GET {DYNAMIC}", DYNAMIC, 200),
    Case(f"POST {DYNAMIC}/validate", f"{DYNAMIC}/validate", 200,
         json={KEYSTORE: "{tls}/missing.p12"}),  # 200, with the error in the body
    Case(f"POST {DYNAMIC}/validate", f"{DYNAMIC}/validate", 400, json={"group.id": "x"}),
    Case(f"POST {DYNAMIC}/validate", f"{DYNAMIC}/validate", 400, json=[KEYSTORE]),
    Case(f"POST {DYNAMIC}/validate", f"{DYNAMIC}/validate", 415, **NOT_JSON),
    Case(f"PATCH {DYNAMIC}", DYNAMIC, 400, json={KEYSTORE: "{tls}/missing.p12"}),
    Case(f"PATCH {DYNAMIC}", DYNAMIC, 400, content=MALFORMED,
         content_type="application/json"),
    Case(f"PATCH {DYNAMIC}", DYNAMIC, 415, **NOT_JSON),
    Case(f"PATCH {DYNAMIC}", DYNAMIC, 200,
         json={KEYSTORE: "{tls}/other.p12", KS_PASSWORD: OTHER_PASSWORD}),
    # The location alone would meet the static password: refused.
    Case(f"DELETE {DYNAMIC}/{{name}}", f"{DYNAMIC}/{KS_PASSWORD}", 400),
    Case(f"PATCH {DYNAMIC}", DYNAMIC, 200, json={KEYSTORE: "{tls}/second.p12",
                                                 KS_PASSWORD: None}),
    Case(f"DELETE {DYNAMIC}/{{name}}", f"{DYNAMIC}/{KEYSTORE}", 204),
    Case(f"DELETE {DYNAMIC}/{{name}}", f"{DYNAMIC}/{KEYSTORE}", 404),
]


@pytest.fixture(scope="module")
def document(worker: WorkerProcess) -> dict[str, Any]:
    response = worker.client.get("/openapi.json")
    assert response.status_code == 200
    served: dict[str, Any] = response.json()
    return served


@pytest.fixture(scope="module")
def connectors(worker: WorkerProcess, kafka_admin: Any) -> Iterator[None]:
    """The connectors the cases act on, in the states they need."""
    client = worker.client
    create_topic(kafka_admin, TOPIC)
    for name in (RUNNING, CONFIG, PAUSE, STOP, DOOMED):
        response = client.put(f"{path(name)}/config", json=generator())
        assert response.status_code == 201, response.text
    response = client.post("/connectors", json={"name": STOPPED, "config": generator(),
                                                "initial_state": "STOPPED"})
    assert response.status_code == 201, response.text
    wait_for_connector_state(client, RUNNING, "RUNNING", tasks_state="RUNNING", task_count=1)
    wait_for_connector_state(client, PAUSE, "RUNNING")
    wait_for_connector_state(client, STOPPED, "STOPPED", task_count=0)
    yield


@pytest.mark.usefixtures("connectors")
@pytest.mark.parametrize("case", REAL_CASES, ids=case_id)
def test_answer_matches_the_document(client: httpx.Client, document: dict[str, Any],
                                     case: Case) -> None:
    check_answer(document, case, case.send(client))


@pytest.fixture(scope="module")
def tls_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ca, directory = TestCA(), tmp_path_factory.mktemp("tls")
    for name, password in (("static", TLS_PASSWORD), ("second", TLS_PASSWORD),
                           ("other", OTHER_PASSWORD)):
        ca.issue_server(common_name=name).write_pkcs12(directory / f"{name}.p12", password)
    return directory


@pytest.fixture(scope="module")
def tls_worker(tls_dir: Path, kafka_bootstrap: str) -> Iterator[WorkerProcess]:
    """A worker with an https listener beside the http one the cases talk to."""
    http, https = free_port(), free_port()
    props = write_properties(tls_dir / "worker.properties", {
        "bootstrap.servers": kafka_bootstrap,
        "listeners": f"http://127.0.0.1:{http},https://127.0.0.1:{https}",
        "storage.sql.url": f"sqlite:///{tls_dir / 'connect.db'}",
        KEYSTORE: tls_dir / "static.p12", KS_PASSWORD: TLS_PASSWORD,
        "listeners.https.ssl.keystore.type": "PKCS12"})
    worker = WorkerProcess(props, url=f"http://127.0.0.1:{http}",
                           log_path=tls_dir / "worker.log")
    worker.start()
    try:
        yield worker
    finally:
        worker.close()


def _in(directory: Path, body: Any) -> Any:
    if isinstance(body, dict):
        return {k: v.replace("{tls}", str(directory)) if isinstance(v, str) else v
                for k, v in body.items()}
    return body


@pytest.mark.parametrize("case", DYNAMIC_CASES, ids=case_id)
def test_dynamic_config_answer_matches_the_document(
        tls_worker: WorkerProcess, tls_dir: Path, document: dict[str, Any], case: Case
        ) -> None:
    concrete = replace(case, json=_in(tls_dir, case.json))
    check_answer(document, case, concrete.send(tls_worker.client))


def test_every_operation_and_declared_status_is_exercised(document: dict[str, Any]) -> None:
    assert uncovered(document, REAL_CASES + DYNAMIC_CASES + FAKE_CASES) == []


def test_served_document_is_the_one_the_unit_cases_check(document: dict[str, Any]) -> None:
    # FAKE_CASES run against the in-process app's document: it must be this very one.
    in_process = json.loads(json.dumps(create_app(FakeHerder()).openapi()))
    assert document == in_process


def test_served_document_declares_no_422(worker: WorkerProcess) -> None:
    text = worker.client.get("/openapi.json").text
    assert "422" not in text
    assert "HTTPValidationError" not in text and "ValidationError" not in text
