"""The demo's running parts on loopback ports: the embedded broker, a standalone worker
(state in SQLite; an http listener for the story and an https one whose certificate a
chapter rotates; plugins from manifests only, ``plugin.discovery=service_load``, with a
``plugin.path`` the last chapter drops a connector into) and the two connectors of the
story.

::

    orders.jsonl --orders-source (FileStreamSource)--> topic orders
    topic orders --orders-archive (FileStreamSink, JsonConverter)--> archive.txt

The archive sink parses each record as JSON, so the one order line that is not JSON (the
"poison record") fails its task — which the skip-poison runbook then fixes.
"""

from __future__ import annotations

import json
import random
import secrets
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import httpx

from worker.testing import (
    EmbeddedBroker,
    WorkerProcess,
    WorkerStartError,
    free_port,
    write_properties,
)
from worker.testing.tls import TestCA

TOPIC = "orders"
SOURCE = "orders-source"
ARCHIVE = "orders-archive"
STRING_CONVERTER = "org.apache.kafka.connect.storage.StringConverter"
JSON_CONVERTER = "org.apache.kafka.connect.json.JsonConverter"
CUSTOMERS = ("acme", "globex", "hooli", "initech", "umbrella")
CURRENCIES = ("EUR", "EUR", "USD", "GBP")
#: 2026-01-01T00:00:00Z: order timestamps count from here, one second per order.
EPOCH_MS = 1_767_225_600_000
#: Days the worker's first HTTPS certificate is valid: within the rotation DAG's 30.
FIRST_CERTIFICATE_DAYS = 10
SSL = "listeners.https.ssl."


T = TypeVar("T")


class StackError(RuntimeError):
    """A part of the demo did not start or did not do its part in time; the message says
    what to look at."""


def wait_for(condition: Callable[[], T | None], what: str, timeout: float = 60.0,
             interval: float = 0.25, detail: Callable[[], str] | None = None) -> T:
    """Poll ``condition`` until it returns something truthy (returned: never ``None``);
    StackError after ``timeout``, with ``detail()`` (what was seen last) when given."""
    deadline = time.monotonic() + timeout
    while True:
        result = condition()
        if result:
            return result
        if time.monotonic() >= deadline:
            seen = f": {detail()}" if detail is not None else ""
            raise StackError(f"timed out after {timeout:g} s waiting for {what}{seen}")
        time.sleep(interval)


def order_lines(first: int, count: int, *, poison_at: int | None = None) -> list[str]:
    """``count`` JSON order events numbered from ``first`` (the same every run): every
    tenth order is one the pipeline drops (negative amount, unknown currency, no
    customer), and line ``poison_at`` (1-based) is not JSON at all."""
    rng = random.Random(first)
    lines = []
    for n in range(first, first + count):
        order: dict[str, Any] = {
            "order_id": f"o-{n:05d}", "customer": rng.choice(CUSTOMERS),
            "amount": round(rng.uniform(5, 250), 2), "currency": rng.choice(CURRENCIES),
            "ts": EPOCH_MS + n * 1000}
        if n % 10 == 0:  # invalid in one of three ways
            broken = ({"amount": -order["amount"]}, {"currency": "XYZ"}, {"customer": None})
            order.update(broken[n // 10 % 3])
        lines.append(json.dumps(order, sort_keys=True))
    if poison_at is not None:
        lines[poison_at - 1] = '{"order_id": "o-truncated", "customer": "ac'
    return lines


class Stack:
    """Broker, worker and connectors; :meth:`start` brings them up, :meth:`stop` down."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.logs = directory / "logs"
        self.orders_file = directory / "orders.jsonl"
        self.archive_file = directory / "archive.txt"
        self.broker = EmbeddedBroker(log_dir=self.logs)
        self.worker: WorkerProcess | None = None
        self.tls_dir = directory / "tls"
        self.ca_cert = self.tls_dir / "ca.pem"
        self.ca_key = self.tls_dir / "ca-key.pem"
        self.https_url = ""
        #: The worker's plugin.path: empty at start; the plugin chapter drops a connector
        #: into it.
        self.plugin_path = directory / "plugins"

    @property
    def bootstrap(self) -> str:
        return self.broker.bootstrap_servers

    @property
    def url(self) -> str:
        assert self.worker is not None
        return self.worker.url

    @property
    def client(self) -> httpx.Client:
        assert self.worker is not None
        return self.worker.client

    def start(self) -> None:
        try:
            self.broker.start()
        except Exception as exc:
            raise StackError(f"the broker did not start: {exc}") from exc
        self.create_topic(TOPIC)
        self._start_worker()

    def create_topic(self, name: str) -> None:
        """Create topic ``name`` (one partition) on the broker."""
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        try:
            admin.create_topics([NewTopic(name, 1, 1)], request_timeout=15)[name].result(20)
        except Exception as exc:
            raise StackError(f"could not create topic {name!r}: {exc}") from exc

    def _write_tls(self) -> dict[str, object]:
        """The demo CA (its key too: the rotation DAG signs with it) and the worker's first
        keystore, its password in a file the worker reads through ``${file:...}``; the
        worker properties of the https listener."""
        from cryptography.hazmat.primitives import serialization

        self.tls_dir.mkdir(parents=True, exist_ok=True)
        ca = TestCA("connect-plane demo CA", days=365)
        ca.write_pem_truststore(self.ca_cert)
        self.ca_key.write_bytes(ca.key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption()))
        self.ca_key.chmod(0o600)
        password = secrets.token_urlsafe(16)
        keystore = ca.issue_server(days=FIRST_CERTIFICATE_DAYS).write_pkcs12(
            self.tls_dir / "worker-first.p12", password)
        secret = self.tls_dir / "worker-first.password.properties"
        secret.write_text(f"keystore.password={password}\n", encoding="utf-8")
        secret.chmod(0o600)
        return {
            "config.providers": "file",
            "config.providers.file.class":
                "org.apache.kafka.common.config.provider.FileConfigProvider",
            f"{SSL}keystore.location": keystore,
            f"{SSL}keystore.type": "PKCS12",
            f"{SSL}keystore.password": f"${{file:{secret}:keystore.password}}",
        }

    def _start_worker(self) -> None:
        self.plugin_path.mkdir(parents=True, exist_ok=True)
        url = f"http://127.0.0.1:{free_port()}"
        self.https_url = f"https://127.0.0.1:{free_port()}"
        props = write_properties(self.dir / "worker.properties", {
            "bootstrap.servers": self.bootstrap,
            "listeners": f"{url},{self.https_url}",
            **self._write_tls(),
            "storage.sql.url": f"sqlite:///{self.dir / 'connect.db'}",
            # Manifests only (KIP-898): a plugin without one stays invisible until
            # connect-plugin-path sync-manifests declares it.
            "plugin.path": self.plugin_path,
            "plugin.discovery": "service_load",
            "key.converter": STRING_CONVERTER,
            "value.converter": STRING_CONVERTER,
            "offset.flush.interval.ms": 1000,
            # A group join on Tansu waits half the session timeout.
            "consumer.session.timeout.ms": 6000,
            # One record per produce request: Tansu's high watermark counts batches, and
            # the pipeline reads up to the watermark (docs/architecture.md §6).
            # Not for Apache Kafka.
            "producer.batch.num.messages": 1,
        })
        # Own session: Ctrl-C reaches only the demo, which then stops the worker first.
        self.worker = WorkerProcess(props, url=url, log_path=self.logs / "worker.log",
                                    new_session=True)
        try:
            self.worker.start()
        except WorkerStartError as exc:
            raise StackError(str(exc)) from exc

    def create_connectors(self) -> None:
        """The source and the archive sink, over the REST API as against any Connect."""
        configs = {
            SOURCE: {"connector.class": "FileStreamSource", "file": str(self.orders_file),
                     "topic": TOPIC},
            ARCHIVE: {"connector.class": "FileStreamSink", "topics": TOPIC,
                      "file": str(self.archive_file), "value.converter": JSON_CONVERTER,
                      "value.converter.schemas.enable": "false"},
        }
        for name, config in configs.items():
            response = self.client.put(f"/connectors/{name}/config", json=config)
            if response.status_code != 201:
                raise StackError(f"creating {name}: HTTP {response.status_code} "
                                 f"{response.text}")

    def status(self, name: str) -> dict[str, Any]:
        response = self.client.get(f"/connectors/{name}/status")
        response.raise_for_status()
        return response.json()

    def plugin_versions(self) -> dict[str, str | None]:
        """``{class: version}`` of ``GET /connector-plugins?connectorsOnly=false``."""
        response = self.client.get("/connector-plugins", params={"connectorsOnly": "false"})
        response.raise_for_status()
        return {plugin["class"]: plugin.get("version") for plugin in response.json()}

    def committed(self, name: str) -> dict[str, Any] | None:
        """The committed offset of a one-partition source connector (KIP-875), if any."""
        response = self.client.get(f"/connectors/{name}/offsets")
        response.raise_for_status()
        offsets = response.json()["offsets"]
        return offsets[0]["offset"] if offsets else None

    def source_position(self) -> int:
        """Bytes of ``orders.jsonl`` the source has committed (its KIP-875 offset)."""
        response = self.client.get(f"/connectors/{SOURCE}/offsets")
        response.raise_for_status()
        offsets = response.json()["offsets"]
        return int(offsets[0]["offset"]["position"]) if offsets else 0

    def wait_published(self, what: str) -> None:
        """Wait until the source has committed the whole of ``orders.jsonl``: every line
        is in the topic (its offsets are committed only after the producer's flush)."""
        size = self.orders_file.stat().st_size
        wait_for(lambda: self.source_position() == size, f"{SOURCE} to publish {what}")

    def stop(self) -> list[str]:
        """Stop the worker (SIGTERM), then the broker; lines saying how it went."""
        said = []
        if self.worker is not None:
            said.append(f"worker exited with code {self.worker.stop()}")
            self.worker.close()
        if self.broker.is_running:
            self.broker.stop()
            said.append("broker stopped")
        return said
