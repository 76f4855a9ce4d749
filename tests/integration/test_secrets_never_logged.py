"""Secrets never leak: one real standalone worker configured with distinctive secrets
everywhere a secret can be written, driven through everything that could show them, then
every line it wrote is searched for them.

Secrets are placed in: worker client properties (``producer.ssl.key.password``,
``consumer.sasl.password``: librdkafka takes both and ignores them under PLAINTEXT), the
keystore password of an https admin listener, a connector's ``PASSWORD`` keys (one named
like a secret, given as a ``${file:...}`` placeholder, one not), ``producer.override.*`` /
``consumer.override.*`` keys and a converter key. The worker logs at DEBUG (set through
``PUT /admin/loggers/root``), the test plugins quote their secrets in validation messages,
in DEBUG lines and in the exception that fails a task (``tests/support/secret_plugins.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from tests.conftest import StandaloneWorkerFactory
from tests.support import wait_for_connector_state
from tests.support.secret_plugins import PREFIX
from worker.testing import free_port
from worker.testing.tls import TestCA, client_context

pytestmark = pytest.mark.integration

SECRETS = {
    "worker producer": "pw-WorkerProducer-7f3a91",
    "worker consumer": "pw-WorkerConsumer-2c8e44",
    "admin keystore": "pw-AdminKeystore-5b1d07",
    "file provider": "pw-FromFileProvider-9e6c23",
    "producer override": "pw-ProducerOverride-4a7f58",
    "consumer override": "pw-ConsumerOverride-8d2b16",
    "converter": "user:pw-ConverterUserInfo-3f9a72",
    "sink password": "pw-SinkPassword-6c4e80",
    "login key": "LoginKeyTypedPassword-71d3",
    "invalid": "NotAValidSecret-1b5d39",
    "invalid override": "pw-InvalidOverride-0e7a65",
}
SOURCE = f"{PREFIX}.SecretSourceConnector"
SINK = f"{PREFIX}.SecretSinkConnector"
JSON = "org.apache.kafka.connect.json.JsonConverter"


def leaked(text: str) -> list[str]:
    return [what for what, secret in SECRETS.items() if secret in text]


def test_secrets_never_reach_logs_traces_or_messages(
        standalone_worker: StandaloneWorkerFactory, tmp_path: Path,
        unique_topic: Callable[..., str]) -> None:
    secrets_file = tmp_path / "secrets.properties"
    secrets_file.write_text(f"password={SECRETS['file provider']}\n")
    ca = TestCA()
    admin_port = free_port()
    worker = standalone_worker({
        "producer.ssl.key.password": SECRETS["worker producer"],
        "consumer.sasl.password": SECRETS["worker consumer"],
        "admin.listeners": f"https://127.0.0.1:{admin_port}",
        "admin.listeners.https.ssl.keystore.location":
            ca.issue_server().write_pkcs12(tmp_path / "admin.p12", SECRETS["admin keystore"]),
        "admin.listeners.https.ssl.keystore.password": SECRETS["admin keystore"],
        "config.providers": "file",
        "config.providers.file.class":
            "org.apache.kafka.common.config.provider.FileConfigProvider",
    })
    admin = httpx.Client(base_url=f"https://127.0.0.1:{admin_port}",
                         verify=client_context(ca), timeout=10)
    client = worker.client
    assert admin.put("/admin/loggers/root", json={"level": "DEBUG"}).status_code == 200

    # Validation: a PASSWORD value that fails its validator and a plugin message quoting it.
    invalid = {"connector.class": SOURCE, "name": "invalid", "tasks.max": "1",
               "secret.password": SECRETS["invalid"],
               "producer.override.ssl.key.password": SECRETS["invalid override"]}
    response = client.put(f"/connector-plugins/{SOURCE}/config/validate", json=invalid)
    assert response.status_code == 200, response.text
    assert leaked(response.text) == []
    values = {c["value"]["name"]: c["value"] for c in response.json()["configs"]}
    assert values["secret.password"]["value"] == "[hidden]"
    assert "Invalid value [hidden] for configuration secret.password: must start with " \
           "'pw-'" in values["secret.password"]["errors"]
    assert "the server refused the password [hidden]" in values["secret.password"]["errors"]
    rejected = client.put("/connectors/invalid/config", json=invalid)
    assert rejected.status_code == 400
    assert leaked(rejected.text) == []
    assert "[hidden]" in rejected.json()["message"]

    # A source whose task fails with its whole config in the message; a running sink.
    placeholder = f"${{file:{secrets_file}:password}}"
    source = {"connector.class": SOURCE, "tasks.max": "1", "fail.on.poll": "true",
              "secret.password": placeholder, "login.key": SECRETS["login key"],
              "producer.override.ssl.key.password": SECRETS["producer override"],
              "value.converter": JSON,
              "value.converter.basic.auth.user.info": SECRETS["converter"]}
    assert client.put("/connectors/secret-source/config", json=source).status_code == 201
    sink = {"connector.class": SINK, "tasks.max": "1", "topics": unique_topic("secrets"),
            "secret.password": SECRETS["sink password"],
            "consumer.override.sasl.password": SECRETS["consumer override"]}
    assert client.put("/connectors/secret-sink/config", json=sink).status_code == 201
    failed = wait_for_connector_state(client, "secret-source", "RUNNING", "FAILED")
    trace = failed["tasks"][0]["trace"]
    assert "login refused with config" in trace
    assert leaked(trace) == []
    assert "'producer.override.ssl.key.password': '[hidden]'" in trace
    assert "'login.key': '[hidden]'" in trace
    assert f"'secret.password': '{placeholder}'" in trace  # resolved value → placeholder
    wait_for_connector_state(client, "secret-sink", "RUNNING", "RUNNING")

    # Kafka returns connector configs as stored, secrets included: so do we.
    stored = client.get("/connectors/secret-source/config").json()
    assert stored["secret.password"] == placeholder
    assert stored["producer.override.ssl.key.password"] == SECRETS["producer override"]

    worker.stop()
    log = worker.log_path.read_text(errors="replace")
    assert "DEBUG" in log and "SecretSourceTask starting with" in log
    lines = [line for line in log.splitlines() if leaked(line)]
    assert lines == [], f"secrets in the worker's output: {lines[:5]}"
    assert "'producer.override.ssl.key.password': '[hidden]'" in log
