"""ConnectorPluginsTrigger: its serialize round trip, and its async polling of real local
HTTP servers standing in for workers whose plugin lists change while it waits."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from airflow_provider.triggers.plugins import ConnectorPluginsTrigger

PATH = "airflow_provider.triggers.plugins.ConnectorPluginsTrigger"
SOURCE = "acme_tickets.TicketSourceConnector"
BUILTIN = {"class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
           "type": "source", "version": "4.0.0"}


class Worker:
    """A local HTTP server answering ``GET /connector-plugins`` with :attr:`plugins` (or
    :attr:`status` with an error body); records the query strings it was asked."""

    def __init__(self) -> None:
        self.plugins: list[dict[str, Any]] = [BUILTIN]
        self.status = 200
        self.queries: list[str] = []
        self.auth: list[str | None] = []
        worker = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                path, _, query = self.path.partition("?")
                worker.queries.append(query)
                worker.auth.append(self.headers.get("Authorization"))
                if path != "/connector-plugins":
                    body, status = {"error_code": 404, "message": "HTTP 404 Not Found"}, 404
                elif worker.status != 200:
                    body, status = {"error_code": worker.status, "message": "no"}, worker.status
                else:
                    body, status = worker.plugins, 200
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"


@contextmanager
def running(worker: Worker) -> Iterator[Worker]:
    thread = threading.Thread(target=worker.server.serve_forever, daemon=True)
    thread.start()
    try:
        yield worker
    finally:
        worker.server.shutdown()
        worker.server.server_close()


def first_event(trigger: ConnectorPluginsTrigger) -> dict[str, Any]:
    async def run() -> dict[str, Any]:
        async for event in trigger.run():
            return event.payload
        raise AssertionError("the trigger ended without an event")
    return asyncio.run(run())


@pytest.fixture
def conn_id(kafka_connect_conn: Callable[..., str]) -> str:
    """Credentials that must reach every worker asked (its REST URL is not used)."""
    return kafka_connect_conn("kc_plugins", host="http://127.0.0.1:1", login="ops",
                              password="s3cret-pw")


@pytest.mark.parametrize("kwargs", [
    {"worker_urls": ["http://w1:8083", "https://w2:8443"], "classes": [SOURCE, "b.Sink"],
     "kafka_connect_conn_id": "kc", "timeout": 120.0, "poll_interval": 1.0},
    {"worker_urls": [], "classes": [], "kafka_connect_conn_id": "other", "timeout": 5,
     "poll_interval": 0.25},
])
def test_serialize_round_trip_is_exact(kwargs: dict[str, Any]) -> None:
    path, serialized = ConnectorPluginsTrigger(**kwargs).serialize()
    assert (path, serialized) == (PATH, kwargs)
    assert ConnectorPluginsTrigger(**serialized).serialize() == (PATH, kwargs)
    json.dumps(serialized)


def test_success_once_every_worker_lists_the_classes(conn_id: str) -> None:
    with running(Worker()) as first, running(Worker()) as second:
        first.plugins = [BUILTIN, {"class": SOURCE, "type": "source", "version": "1.2.0"}]
        # The second worker finds the plugin a little later, as a worker re-reading its
        # manifests on the next lookup would.
        threading.Timer(0.4, lambda: second.plugins.append(
            {"class": SOURCE, "type": "source", "version": "1.2.0"})).start()
        event = first_event(ConnectorPluginsTrigger([first.url, second.url], [SOURCE],
                                                    conn_id, timeout=10, poll_interval=0.1))
    assert event["status"] == "success", event
    assert event["listed"] == {first.url: {SOURCE: "1.2.0"}, second.url: {SOURCE: "1.2.0"}}
    assert 0 < event["elapsed"] < 10
    assert len(first.queries) == 1 and len(second.queries) >= 2  # listed: not asked again
    assert set(first.queries + second.queries) == {"connectorsOnly=false"}
    assert all(auth and auth.startswith("Basic ") for auth in first.auth + second.auth)


def test_timeout_names_what_each_worker_misses(conn_id: str, refused_port: int) -> None:
    gone = f"http://127.0.0.1:{refused_port}"
    with running(Worker()) as worker:
        event = first_event(ConnectorPluginsTrigger([worker.url, gone], [SOURCE], conn_id,
                                                    timeout=0.5, poll_interval=0.1))
    assert event["status"] == "timeout", event
    assert event["missing"] == {worker.url: [SOURCE], gone: [SOURCE]}
    assert f"{gone} does not list {SOURCE} (last error: KafkaConnectTransportError" in (
        event["message"])
    assert "s3cret-pw" not in json.dumps(event)


def test_a_worker_that_refuses_the_credentials_is_an_error(conn_id: str) -> None:
    with running(Worker()) as worker:
        worker.status = 401
        event = first_event(ConnectorPluginsTrigger([worker.url], [SOURCE], conn_id,
                                                    timeout=10, poll_interval=0.1))
    assert event["status"] == "error" and event["message"].startswith("AuthenticationError")
    assert len(worker.queries) == 1  # not retried: the answer will not change
