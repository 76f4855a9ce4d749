"""ServedCertificateTrigger: its serialize round trip, and its async handshake checks
against a real local TLS server whose certificate changes while it waits."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from airflow_provider.triggers.certificates import ServedCertificateTrigger
from tests.unit.airflow_provider._tls_server import Ca, ServerCert, make_ca, tls_server

PATH = "airflow_provider.triggers.certificates.ServedCertificateTrigger"


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> tuple[Ca, ServerCert, ServerCert]:
    directory = tmp_path_factory.mktemp("tls")
    ca = make_ca(directory)
    return ca, ca.issue(directory, "old"), ca.issue(directory, "new")


@pytest.fixture
def conn_id(kafka_connect_conn: Callable[..., str], pki) -> str:
    """A connection trusting the test CA (its REST URL is not used by the trigger)."""
    return kafka_connect_conn("kc_tls", host="http://127.0.0.1:1",
                              extra={"ca_bundle": str(pki[0].cert_path)})


def first_event(trigger: ServedCertificateTrigger) -> dict[str, Any]:
    async def run() -> dict[str, Any]:
        async for event in trigger.run():
            return event.payload
        raise AssertionError("the trigger ended without an event")
    return asyncio.run(run())


@pytest.mark.parametrize("kwargs", [
    {"expected": {"https://w1:8443": "ab" * 32, "https://w2:8443": "ab" * 32},
     "kafka_connect_conn_id": "kc", "timeout": 60.0, "poll_interval": 0.5,
     "handshake_timeout": 10.0},
    {"expected": {}, "kafka_connect_conn_id": "other", "timeout": 5.0, "poll_interval": 1.0,
     "handshake_timeout": 2.0},
])
def test_serialize_round_trip_is_exact(kwargs: dict[str, Any]) -> None:
    path, serialized = ServedCertificateTrigger(**kwargs).serialize()
    assert (path, serialized) == (PATH, kwargs)
    assert ServedCertificateTrigger(**serialized).serialize() == (PATH, kwargs)


def test_success_once_the_new_certificate_is_served(pki, conn_id: str) -> None:
    _, old, new = pki
    with tls_server(old) as server:
        threading.Timer(0.5, server.serve, (new,)).start()
        event = first_event(ServedCertificateTrigger({server.url: new.sha256}, conn_id,
                                                     timeout=10, poll_interval=0.1))
        assert server.handshakes >= 2
    assert event["status"] == "success", event
    assert event["served"][server.url]["sha256"] == new.sha256
    assert event["served"][server.url]["subject"] == "CN=new"
    assert 0 < event["elapsed"] < 10


def test_timeout_names_what_each_worker_served(pki, conn_id: str) -> None:
    _, old, new = pki
    with tls_server(old) as server:
        event = first_event(ServedCertificateTrigger({server.url: new.sha256}, conn_id,
                                                     timeout=0.5, poll_interval=0.1))
    assert event["status"] == "timeout"
    assert event["served"] == {server.url: old.sha256}
    assert new.sha256 in event["message"]


def test_a_certificate_the_connection_refuses_is_never_served(
        pki, kafka_connect_conn: Callable[..., str], tmp_path: Path) -> None:
    _, old, _ = pki
    stranger = make_ca(tmp_path, "other-ca")
    conn = kafka_connect_conn("kc_other", host="http://127.0.0.1:1",
                              extra={"ca_bundle": str(stranger.cert_path)})
    with tls_server(old) as server:
        event = first_event(ServedCertificateTrigger({server.url: old.sha256}, conn,
                                                     timeout=0.3, poll_interval=0.1))
    assert event["status"] == "timeout"
    assert "certificate verify failed" in event["served"][server.url]


def test_unusable_tls_settings_are_an_error_event(kafka_connect_conn: Callable[..., str]
                                                  ) -> None:
    conn = kafka_connect_conn("kc_bad", host="http://127.0.0.1:1",
                              extra={"ca_bundle": "/nonexistent/ca.pem"})
    event = first_event(ServedCertificateTrigger({"https://127.0.0.1:1": "ab" * 32}, conn,
                                                 timeout=1))
    assert event["status"] == "error" and "TLS files" in event["message"]
