"""The basic-auth extension: credentials files, Kafka's JAAS file, the filter's answers,
and secrets kept out of messages, reprs and logs."""

from __future__ import annotations

import base64
import logging
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from tests.unit.worker.rest.conftest import FakeHerder
from worker.api import ConfigException
from worker.builtin.rest_extensions.basic_auth import (
    BasicAuthSecurityRestExtension,
    parse_basic,
)
from worker.builtin.rest_extensions.basic_auth_credentials import (
    Credentials,
    CredentialsError,
    credentials_path_from_jaas,
)
from worker.config.worker_config import StandaloneConfig
from worker.plugins.registry import builtin_registry
from worker.rest.app import create_app
from worker.rest.security.extensions import rest_security

ALICE_PW = "alice-Pw-93817"
BOB_PW = "bob:with=odd chars-55"
OTHER_SECRET = "kafka-server-Pw-11"
SECRETS = (ALICE_PW, BOB_PW, OTHER_SECRET)


def basic(user: str, password: str) -> dict[str, str]:
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    return {"Authorization": f"Basic {token}"}


@pytest.fixture
def users_file(tmp_path: Path) -> Path:
    path = tmp_path / "users.properties"
    path.write_text(f"# Connect users\nalice={ALICE_PW}\nbob : {BOB_PW}\n", encoding="utf-8")
    return path


class TaskConfigHerder(FakeHerder):
    """Accepts a follower's task configs, as a leader does."""

    def put_task_configs(self, name: str, configs: list[dict[str, str]]) -> None:
        self.calls.append(("put_task_configs", name, configs))


@pytest.fixture
def herder() -> TaskConfigHerder:
    herder = TaskConfigHerder()
    herder.add("orders")
    return herder


@pytest.fixture
def client(herder: TaskConfigHerder, users_file: Path) -> Iterator[TestClient]:
    config = StandaloneConfig({
        "listeners": "http://127.0.0.1:8083",
        "rest.extension.classes": "BasicAuthSecurityRestExtension",
        "rest.basic.auth.credentials.file": str(users_file)})
    security = rest_security(config, builtin_registry(), herder, "127.0.0.1:8083")
    with TestClient(create_app(herder, security)) as test_client:
        yield test_client
    security.close()


# --- the Authorization header -----------------------------------------------------------


@pytest.mark.parametrize(("header", "expected"), [
    (basic("alice", "pw")["Authorization"], ("alice", "pw")),
    ("basic " + base64.b64encode(b"a:b:c").decode(), ("a", "b:c")),  # scheme any case
    ("Basic " + base64.b64encode(b"alice:").decode(), ("alice", "")),
    ("Basic " + base64.b64encode(b":pw").decode(), None),  # Kafka: no user name
    ("Basic " + base64.b64encode(b"no-colon").decode(), None),
    ("Basic not base64!", None),
    ("Basic " + base64.b64encode(b"\xff\xfe:x").decode(), None),  # not UTF-8
    ("Bearer abc", None),
    ("Basic", None),
    ("", None),
    (None, None),
])
def test_basic_credentials_are_read_as_kafka_reads_them(
        header: str | None, expected: tuple[str, str] | None) -> None:
    assert parse_basic(header) == expected


# --- the filter -------------------------------------------------------------------------


def test_no_or_wrong_credentials_get_kafkas_401_with_a_challenge(client: TestClient) -> None:
    for headers in ({}, basic("alice", "wrong"), basic("mallory", ALICE_PW),
                    {"Authorization": "Bearer token"}):
        response = client.get("/connectors", headers=headers)
        assert response.status_code == 401, headers
        assert response.json() == {"error_code": 401,
                                   "message": "User cannot access the resource."}
        assert response.headers["www-authenticate"] == \
            'Basic realm="Kafka Connect", charset="UTF-8"'


def test_valid_credentials_reach_every_resource(client: TestClient) -> None:
    assert client.get("/connectors", headers=basic("alice", ALICE_PW)).json() == ["orders"]
    assert client.get("/", headers=basic("bob", BOB_PW)).status_code == 200
    assert client.get("/admin/loggers", headers=basic("bob", BOB_PW)).status_code == 200
    # No admin principals configured: any authenticated user may write under /admin.
    assert client.put("/admin/loggers/worker", json={"level": "DEBUG"},
                      headers=basic("bob", BOB_PW)).status_code == 200


def test_unauthenticated_writes_change_nothing(client: TestClient,
                                               herder: TaskConfigHerder) -> None:
    response = client.put("/admin/loggers/worker", json={"level": "DEBUG"})
    assert response.status_code == 401
    refused = client.post("/connectors", json={"name": "x", "config": {}},
                          headers=basic("alice", "nope"))
    assert refused.status_code == 401
    assert herder.calls == [] and herder.connectors() == ["orders"]


def test_task_configs_from_other_workers_need_no_credentials(
        client: TestClient, herder: TaskConfigHerder) -> None:
    for path in ("/connectors/orders/tasks", "/connectors/orders/tasks/"):
        response = client.post(path, json=[{"task.class": "T"}], params={"forward": "true"})
        assert response.status_code == 204, response.text
    assert [c[0] for c in herder.calls] == ["put_task_configs"] * 2
    # Only that request: reading the tasks is not internal.
    assert client.get("/connectors/orders/tasks").status_code == 401


def test_passwords_never_reach_the_log(client: TestClient,
                                       caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG):
        client.get("/connectors", headers=basic("alice", "wrong-" + ALICE_PW))
        client.get("/connectors", headers=basic("alice", ALICE_PW))
    assert "failed authentication (user alice)" in caplog.text
    assert all(secret not in caplog.text for secret in SECRETS)


# --- credentials files ------------------------------------------------------------------


def test_credentials_hold_digests_compared_in_constant_time(users_file: Path) -> None:
    credentials = Credentials(users_file, "rest.basic.auth.credentials.file")
    assert credentials.users == {"alice", "bob"}
    assert credentials.authenticate("alice", ALICE_PW)
    assert credentials.authenticate("bob", BOB_PW)
    assert not credentials.authenticate("alice", BOB_PW)
    assert not credentials.authenticate("carol", ALICE_PW)
    assert not credentials.authenticate("alice", "")
    shown = repr(credentials) + repr(vars(credentials))
    assert all(secret not in shown for secret in SECRETS)


@pytest.mark.parametrize(("content", "problem"), [
    ("# nobody\n", "lists no user"),
    (f"={ALICE_PW}\n", "not a valid properties file"),
    (f"alice=\\u12{ALICE_PW}\n", "not a valid properties file"),
])
def test_an_unusable_credentials_file_is_refused_without_quoting_it(
        tmp_path: Path, content: str, problem: str) -> None:
    path = tmp_path / "users.properties"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(CredentialsError, match=problem) as failure:
        Credentials(path, "rest.basic.auth.credentials.file")
    assert ALICE_PW not in str(failure.value) and failure.value.__cause__ is None


def test_a_missing_credentials_file_says_so(tmp_path: Path) -> None:
    with pytest.raises(CredentialsError, match=r"cannot read the credentials file \(No such "):
        Credentials(tmp_path / "absent", "label")


def test_a_changed_credentials_file_is_read_again(users_file: Path,
                                                  caplog: pytest.LogCaptureFixture) -> None:
    credentials = Credentials(users_file, "rest.basic.auth.credentials.file", recheck_s=0)
    users_file.write_text("carol=carol-Pw-1\n", encoding="utf-8")
    os.utime(users_file, ns=(1, 1))  # a new signature even within the same clock tick
    with caplog.at_level(logging.INFO):
        assert credentials.authenticate("carol", "carol-Pw-1")
        assert not credentials.authenticate("alice", ALICE_PW)
    assert "reloaded rest.basic.auth.credentials.file: 1 users" in caplog.text


def test_a_broken_new_version_keeps_the_users_in_force(
        users_file: Path, caplog: pytest.LogCaptureFixture) -> None:
    credentials = Credentials(users_file, "rest.basic.auth.credentials.file", recheck_s=0)
    users_file.write_text(f"={OTHER_SECRET}\n", encoding="utf-8")
    with caplog.at_level(logging.WARNING):
        assert credentials.authenticate("alice", ALICE_PW)
        assert credentials.authenticate("alice", ALICE_PW)  # warned once per version
    assert caplog.text.count("keeps the users it had") == 1
    assert "not a valid properties file" in caplog.text
    users_file.unlink()
    with caplog.at_level(logging.WARNING):
        assert credentials.authenticate("bob", BOB_PW)
    assert "the credentials file is gone" in caplog.text
    assert all(secret not in caplog.text for secret in SECRETS)


# --- Kafka's JAAS file ------------------------------------------------------------------

JAAS = """
// Kafka's example, with a broker entry holding a secret that must never be quoted.
KafkaServer {
    org.apache.kafka.common.security.plain.PlainLoginModule required
    username="admin" password="%s";
};
/* the worker's entry */
KafkaConnect {
    org.apache.kafka.connect.rest.basic.auth.extension.PropertyFileLoginModule required
    file="%s";
};
"""


def test_the_credentials_file_comes_from_the_kafkaconnect_entry(
        tmp_path: Path, users_file: Path) -> None:
    jaas = tmp_path / "connect_jaas.conf"
    jaas.write_text(JAAS % (OTHER_SECRET, users_file), encoding="utf-8")
    assert credentials_path_from_jaas(jaas) == users_file
    extension = BasicAuthSecurityRestExtension()
    extension.configure({"rest.basic.auth.jaas.file": str(jaas)})


@pytest.mark.parametrize(("content", "problem"), [
    (f'KafkaServer {{ x.Module required password="{OTHER_SECRET}"; }};',
     "has no KafkaConnect entry"),
    (f'KafkaConnect {{ com.example.LdapLoginModule required url="{OTHER_SECRET}"; }};',
     r"exactly one login module, .*PropertyFileLoginModule \(found: "
     r"com.example.LdapLoginModule\)"),
    ("KafkaConnect { org.apache.kafka.connect.rest.basic.auth.extension."
     "PropertyFileLoginModule required; };", "has no file option"),
    (f'KafkaServer {{ x.Module required password="{OTHER_SECRET}" }};\n',
     "syntax error in the JAAS file at line 1: a name expected"),
    (f'KafkaServer {{\n x.Module required\n password = "{OTHER_SECRET}";',
     "ends in the middle of an entry"),
])
def test_an_unusable_jaas_file_says_why_without_quoting_it(
        tmp_path: Path, content: str, problem: str) -> None:
    jaas = tmp_path / "connect_jaas.conf"
    jaas.write_text(content, encoding="utf-8")
    with pytest.raises(CredentialsError, match=problem) as failure:
        credentials_path_from_jaas(jaas)
    assert OTHER_SECRET not in str(failure.value)


def test_a_jaas_file_naming_a_missing_credentials_file_names_both(tmp_path: Path) -> None:
    jaas = tmp_path / "connect_jaas.conf"
    jaas.write_text(JAAS % (OTHER_SECRET, tmp_path / "gone.properties"), encoding="utf-8")
    with pytest.raises(ConfigException) as failure:
        BasicAuthSecurityRestExtension().configure({"rest.basic.auth.jaas.file": str(jaas)})
    assert failure.value.name == "rest.basic.auth.jaas.file"
    assert "cannot read the credentials file" in failure.value.reason
    assert "gone.properties (the file of the KafkaConnect entry" in failure.value.reason
    assert OTHER_SECRET not in failure.value.reason


@pytest.mark.parametrize(("configs", "problem"), [
    ({}, "needs its users: set rest.basic.auth.credentials.file"),
    ({"rest.basic.auth.credentials.file": "/a", "rest.basic.auth.jaas.file": "/b"},
     "not both"),
])
def test_exactly_one_source_of_users(configs: dict[str, str], problem: str) -> None:
    with pytest.raises(ConfigException, match=problem) as failure:
        BasicAuthSecurityRestExtension().configure(configs)
    assert failure.value.name == "rest.basic.auth.credentials.file"
