"""Issue #41 item 3: no answer and no log line shows a resolved secret, whole or in part.

One real standalone worker (a subprocess) with basic auth (an ``admin`` user, the admin
principal, and a ``viewer``), an https listener whose PKCS12 keystore password comes from a
``${file:...}`` placeholder, and the file, directory and environment config providers. The
secrets are random per run and distinctive; some are lists, so that a value split on commas
(and each element trimmed) could leak one element where the whole value is redacted.

Driven through everything that resolves placeholders or shows passwords:

* ``POST /admin/dynamic-worker-config/validate`` and ``PATCH`` (as admin) with bad values
  built from placeholders: client auth, protocols, cipher suites, store types, a location.
  Each error names the key and the problem, never the value.
* ``GET /admin/dynamic-worker-config`` and ``GET /admin/worker`` after an admin stored a
  keystore password in clear: a viewer sees ``[hidden]``, the admin the value (the admin
  may write it, and the certificate-rotation operator restores what it read).
* ``PUT /connector-plugins/{type}/config/validate`` (as viewer) with placeholders in
  list-typed keys (``transforms``, ``topics``, ``topic.creation.groups``, a Cast ``spec``),
  a bad number, the DLQ topic, a secret client key; and the failed create that follows.

Then every answer body and the worker's whole output (at DEBUG) are searched for every
secret and every comma-separated element of one, case-insensitively.
"""

from __future__ import annotations

import base64
import secrets as random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support import WorkerProcess
from worker.testing.tls import TestCA

pytestmark = pytest.mark.integration

BASE = "/admin/dynamic-worker-config"
P = "listeners.https."
HIDDEN = "[hidden]"
FILE_SINK = "org.apache.kafka.connect.file.FileStreamSinkConnector"
FILE_SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"
CAST = "org.apache.kafka.connect.transforms.Cast$Value"


def _token(label: str) -> str:
    """A distinctive random string: mixed case, so a case change cannot hide it."""
    return f"{label}{random.token_hex(6)}Qz"


@dataclass
class Secrets:
    """The run's secrets (label → value) and where the worker finds them."""

    directory: Path
    values: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.values.update({
            "admin password": _token("AdminPw"),
            "viewer password": _token("ViewerPw"),
            "keystore password": _token("KeystorePw"),
            "clear keystore password": _token("ClearKsPw"),
            "db password": _token("DbPassword"),
            "connector client password": _token("ConnPw"),
            # Lists: split on commas, each element trimmed, by whatever reads them.
            "protocols": f"TLSv1.2, {_token('ProtoPiece')}",
            "ciphers": f"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, {_token('CipherPiece')}",
            "aliases": f"{_token('AliasOne')}, {_token('AliasTwo')}",
            "topics": f"{_token('TopicOne')},{_token('TopicTwo')}",
            "groups": f"{_token('GroupOne')}, {_token('GroupTwo')}",
            "spec": f"f1:int8, {_token('SpecPiece')}",
        })
        self.values["dlq"] = self.values["topics"].split(",")[0]
        self.values["store type"] = _token("StoreType")

    def __getitem__(self, label: str) -> str:
        return self.values[label]

    @property
    def file(self) -> Path:
        return self.directory / "secrets.properties"

    @property
    def dir(self) -> Path:
        return self.directory / "conf.d"

    def at_file(self, key: str) -> str:
        return f"${{file:{self.file}:{key}}}"

    def at_dir(self, name: str) -> str:
        return f"${{dir:{self.dir}:{name}}}"

    def write(self) -> None:
        self.dir.mkdir(parents=True)
        keys = {"keystore.password": "keystore password", "db.password": "db password",
                "protocols": "protocols", "aliases": "aliases", "dlq": "dlq",
                "groups": "groups"}
        self.file.write_text("".join(f"{key}={self[label]}\n" for key, label in keys.items()),
                             encoding="utf-8")
        # The directory provider keeps a file's content byte for byte: no newline.
        (self.dir / "topics").write_text(self["topics"], encoding="utf-8")
        (self.dir / "store-type").write_text(self["store type"], encoding="utf-8")

    def needles(self) -> dict[str, str]:
        """What no text may contain: each secret and each element of a list secret."""
        found: dict[str, str] = {}
        for label, value in self.values.items():
            found[label] = value
            for index, piece in enumerate(value.split(",")):
                if len(piece.strip()) >= 4 and piece.strip() != value:
                    found[f"{label} element {index}"] = piece.strip()
        # Public parts of the lists are not secrets: a real protocol and a real suite.
        return {label: text for label, text in found.items()
                if text not in ("TLSv1.2", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
                                "f1:int8")}


def leaks(needles: dict[str, str], text: str, *, allowed: tuple[str, ...] = ()) -> list[str]:
    lowered = text.lower()
    return [label for label, needle in needles.items()
            if label not in allowed and needle.lower() in lowered]


def basic(user: str, password: str) -> dict[str, str]:
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    return {"Authorization": f"Basic {token}"}


@dataclass
class Session:
    """The worker, a client per user, and every answer received (to be scanned)."""

    worker: WorkerProcess
    secrets: Secrets
    admin: httpx.Client
    viewer: httpx.Client
    answers: list[tuple[str, str]] = field(default_factory=list)
    #: Answers to the admin that may show the password it stored in clear.
    admin_reads: list[tuple[str, str]] = field(default_factory=list)

    def call(self, client: httpx.Client, method: str, path: str, *,
             json: Any = None, clear_password_allowed: bool = False) -> httpx.Response:
        response = client.request(method, path, json=json)
        where = f"{method} {path} ({response.status_code})"
        (self.admin_reads if clear_password_allowed else self.answers).append(
            (where, response.text))
        return response


@pytest.fixture
def session(standalone_worker: Callable[..., WorkerProcess], tmp_path: Path
            ) -> Iterator[Session]:
    found = Secrets(tmp_path / "secrets")
    found.write()
    users = tmp_path / "users.properties"
    users.write_text(f"admin={found['admin password']}\nviewer={found['viewer password']}\n",
                     encoding="utf-8")
    ca = TestCA()
    keystore = ca.issue_server(common_name="static").write_pkcs12(
        tmp_path / "static.p12", found["keystore password"])
    worker = standalone_worker({
        "config.providers": "file,dir,env",
        "config.providers.file.class": "FileConfigProvider",
        "config.providers.file.param.allowed.paths": str(found.directory),
        "config.providers.dir.class": "DirectoryConfigProvider",
        "config.providers.env.class": "EnvVarConfigProvider",
        "config.providers.env.param.allowlist.pattern": "CP_SEC_.*",
        "rest.extension.classes": "BasicAuthSecurityRestExtension",
        "rest.basic.auth.credentials.file": str(users),
        "rest.admin.principals": "admin",
        f"{P}ssl.keystore.location": keystore,
        f"{P}ssl.keystore.password": found.at_file("keystore.password"),
        f"{P}ssl.keystore.type": "PKCS12",
    }, extra_listeners=["https://127.0.0.1:0"],
        credentials=("admin", found["admin password"]),
        env={"CP_SEC_CIPHERS": found["ciphers"], "CP_SEC_SPEC": found["spec"]})
    base = httpx.URL(worker.url)
    url = f"{base.scheme}://{base.host}:{base.port}"
    with httpx.Client(base_url=url, timeout=30,
                      headers=basic("admin", found["admin password"])) as admin, \
            httpx.Client(base_url=url, timeout=30,
                         headers=basic("viewer", found["viewer password"])) as viewer:
        # DEBUG everywhere: more lines that could show a secret.
        assert admin.put("/admin/loggers/root", json={"level": "DEBUG"}).status_code == 200
        yield Session(worker, found, admin, viewer)


# Bad values built from placeholders: (key, placeholder label, words of the problem).
BAD_WORKER_VALUES = [
    (f"{P}ssl.client.auth", "file:db.password", "is not one of none, requested, required"),
    (f"{P}ssl.enabled.protocols", "file:protocols", "protocol"),
    (f"{P}ssl.cipher.suites", "env:CP_SEC_CIPHERS", "cipher suite"),
    (f"{P}ssl.keystore.type", "file:db.password", "store type"),
    (f"{P}ssl.truststore.type", "dir:store-type", "store type"),
    (f"{P}ssl.keystore.location", "file:db.password", "does not exist"),
]


def placeholder(found: Secrets, spec: str) -> str:
    provider, name = spec.split(":", 1)
    if provider == "file":
        return found.at_file(name)
    if provider == "dir":
        return found.at_dir(name)
    return f"${{env:{name}}}"


def check_dynamic_config(s: Session, tmp_path: Path) -> None:
    for key, spec, problem in BAD_WORKER_VALUES:
        change = {key: placeholder(s.secrets, spec)}
        validated = s.call(s.admin, "POST", f"{BASE}/validate", json=change)
        assert validated.status_code == 200, validated.text
        errors = validated.json()["errors"]
        assert list(errors) == [key], validated.text
        assert problem in errors[key][0], errors
        patched = s.call(s.admin, "PATCH", BASE, json=change)
        assert patched.status_code == 400, patched.text
        assert key in patched.json()["message"] and problem in patched.json()["message"]

    # An admin stores a keystore password in clear (a rotation without a placeholder).
    ca = TestCA()
    clear = s.secrets["clear keystore password"]
    rotated = ca.issue_server(common_name="rotated").write_pkcs12(tmp_path / "rotated.p12",
                                                                   clear)
    change = {f"{P}ssl.keystore.location": str(rotated), f"{P}ssl.keystore.password": clear}
    patched = s.call(s.admin, "PATCH", BASE, json=change, clear_password_allowed=True)
    assert patched.status_code == 200, patched.text
    assert patched.json() == change  # the admin's own write, answered as written

    masked = {**change, f"{P}ssl.keystore.password": HIDDEN}
    read = s.call(s.viewer, "GET", BASE)
    assert read.status_code == 200 and read.json() == masked
    worker = s.call(s.viewer, "GET", "/admin/worker")
    assert worker.status_code == 200
    assert worker.json()["dynamic_config"]["overrides"] == masked
    assert s.call(s.admin, "GET", BASE, clear_password_allowed=True).json() == change
    assert s.call(s.admin, "GET", "/admin/worker", clear_password_allowed=True
                  ).json()["dynamic_config"]["overrides"] == change

    # A placeholder is a reference, not a secret: shown as written to everyone.
    back = {f"{P}ssl.keystore.location": None, f"{P}ssl.keystore.password": None}
    assert s.call(s.admin, "PATCH", BASE, json=back).status_code == 200
    by_reference = {f"{P}ssl.keystore.password": s.secrets.at_file("keystore.password")}
    assert s.call(s.admin, "PATCH", BASE, json=by_reference).status_code == 200
    assert s.call(s.viewer, "GET", BASE).json() == by_reference


def values_of(answer: httpx.Response) -> dict[str, dict[str, Any]]:
    return {c["value"]["name"]: c["value"] for c in answer.json()["configs"]}


def check_connector_validation(s: Session) -> None:
    found = s.secrets
    sink = {
        "connector.class": FILE_SINK, "name": "leaky-sink", "file": "/dev/null",
        "tasks.max": found.at_file("db.password"),
        "topics": found.at_dir("topics"),
        "errors.deadletterqueue.topic.name": found.at_file("dlq"),
        "transforms": found.at_file("aliases"),
        "consumer.override.sasl.password": found["connector client password"],
        "consumer.override.sasl.mechanism": found.at_file("db.password"),
    }
    answer = s.call(s.viewer, "PUT", f"/connector-plugins/{FILE_SINK}/config/validate",
                    json=sink)
    assert answer.status_code == 200, answer.text
    values = values_of(answer)
    assert answer.json()["error_count"] > 0
    assert values["tasks.max"]["errors"], values["tasks.max"]
    assert values["topics"]["value"] == found.at_dir("topics")  # as written
    assert values["transforms"]["value"] == found.at_file("aliases")
    # The aliases' keys are described and refused, the alias in their names hidden.
    assert values["transforms.[hidden].type"]["errors"], values
    assert "Transforms: [hidden]" in answer.json()["groups"]
    refused = s.call(s.viewer, "PUT", "/connectors/leaky-sink/config", json=sink)
    assert refused.status_code == 400, refused.text

    source = {
        "connector.class": FILE_SOURCE, "name": "leaky-source", "topic": "t",
        "file": "/dev/null", "transforms": "cast", "transforms.cast.type": CAST,
        "transforms.cast.spec": "${env:CP_SEC_SPEC}",
        "topic.creation.groups": found.at_file("groups"),
    }
    answer = s.call(s.viewer, "PUT", f"/connector-plugins/{FILE_SOURCE}/config/validate",
                    json=source)
    assert answer.status_code == 200, answer.text
    values = values_of(answer)
    assert any("Invalid type found in casting spec: [hidden]" in error
               for error in values["transforms.cast.spec"]["errors"]), values
    assert values["transforms.cast.spec"]["value"] == "${env:CP_SEC_SPEC}"
    assert "Topic Creation: [hidden]" in answer.json()["groups"]
    refused = s.call(s.viewer, "PUT", "/connectors/leaky-source/config", json=source)
    assert refused.status_code == 400, refused.text


def test_no_answer_or_log_line_shows_a_resolved_secret(session: Session,
                                                       tmp_path: Path) -> None:
    s = session
    check_dynamic_config(s, tmp_path)
    check_connector_validation(s)

    needles = s.secrets.needles()
    leaked = [(where, labels) for where, text in s.answers
              if (labels := leaks(needles, text))]
    assert leaked == [], f"secrets in answers: {leaked}"
    # The admin's reads may show the password it stored in clear, and nothing else.
    leaked = [(where, labels) for where, text in s.admin_reads
              if (labels := leaks(needles, text, allowed=("clear keystore password",)))]
    assert leaked == [], f"secrets in the admin's reads: {leaked}"

    s.worker.stop()
    log = s.worker.log_path.read_text(encoding="utf-8", errors="replace")
    assert "DEBUG" in log
    lines = [(labels, line[:300]) for line in log.splitlines()
             if (labels := leaks(needles, line))]
    assert lines == [], f"secrets in the worker's output: {lines[:8]}"
