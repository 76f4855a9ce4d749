"""Fixtures of the hook unit tests: an Airflow connection, a scripted Kafka Connect behind
``httpx.MockTransport``, hooks wired to it (no backoff), TLS material and a closed port."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from airflow_provider.hooks.kafka_connect import KafkaConnectHook
from tests.unit.airflow_provider.hooks._fakes import BASE_URL, PASSWORD, FakeConnect
from tests.unit.airflow_provider.hooks._tls import Pki, https_server, make_pki


@pytest.fixture
def conn_id(kafka_connect_conn: Callable[..., str]) -> str:
    """``kafka_connect_default`` with basic auth, pointing at the fake."""
    return kafka_connect_conn(host=BASE_URL, login="airflow", password=PASSWORD)


@pytest.fixture
def fake() -> FakeConnect:
    return FakeConnect()


@pytest.fixture
def hook(conn_id: str, fake: FakeConnect) -> Iterator[KafkaConnectHook]:
    with KafkaConnectHook(conn_id, retry_limit=3, retry_delay=0.0,
                          transport=fake.sync_transport()) as created:
        yield created


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture
def https_url(pki: Pki) -> Iterator[str]:
    with https_server(pki) as url:
        yield url


@pytest.fixture
def refused_url() -> str:
    """A URL where nothing listens (connection refused at once)."""
    import socket

    with socket.socket() as sock:  # bind then close: the port is free and closed
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"
