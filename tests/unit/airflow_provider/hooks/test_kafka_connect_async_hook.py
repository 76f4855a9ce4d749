"""KafkaConnectAsyncHook against a scripted Kafka Connect (``httpx.MockTransport``): the
same endpoints, errors and retries as the sync hook, awaited; connections read with
``aget_connection``."""

from __future__ import annotations

import asyncio
import base64
import logging
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

import httpx
import pytest
from airflow.sdk import BaseHook, Connection

from airflow_provider.exceptions import (
    BadRequestError,
    ConnectorAlreadyExistsError,
    ForbiddenError,
    KafkaConnectTransportError,
    NotFoundError,
    RebalanceInProgressError,
    ServerError,
)
from airflow_provider.hooks import _transport
from airflow_provider.hooks.base import KafkaConnectRestBaseHook
from airflow_provider.hooks.kafka_connect_async import KafkaConnectAsyncHook
from airflow_provider.hooks.results import ConnectorOffsets
from tests.unit.airflow_provider.hooks._fakes import (
    BASE_URL,
    CONFIG,
    ENDPOINTS,
    INFO,
    PASSWORD,
    SERVER_INFO,
    Endpoint,
    FakeConnect,
    answer_response,
    as_json,
    error,
    off_the_loop,
)
from tests.unit.airflow_provider.hooks._tls import Pki

T = TypeVar("T")


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def make_hook(conn_id: str, fake: FakeConnect, **kwargs: Any) -> KafkaConnectAsyncHook:
    kwargs.setdefault("retry_limit", 3)
    return KafkaConnectAsyncHook(conn_id, retry_delay=0.0, transport=fake.async_transport(),
                                 **kwargs)


async def call(hook: KafkaConnectAsyncHook, name: str, *args: Any, **kwargs: Any) -> Any:
    async with hook:
        return await getattr(hook, name)(*args, **kwargs)


def test_airflow_hook_attributes() -> None:
    assert issubclass(KafkaConnectAsyncHook, KafkaConnectRestBaseHook)
    assert issubclass(KafkaConnectAsyncHook, BaseHook)
    assert KafkaConnectAsyncHook.conn_name_attr == "kafka_connect_conn_id"
    assert KafkaConnectAsyncHook.default_conn_name == "kafka_connect_default"
    assert KafkaConnectAsyncHook.conn_type == "kafka_connect"
    hook = KafkaConnectAsyncHook(retry_limit=1, retry_delay=0.5, retry_max_delay=2.0)
    assert hook.kafka_connect_conn_id == "kafka_connect_default"
    assert (hook.retry_limit, hook.retry_delay, hook.retry_max_delay) == (1, 0.5, 2.0)


def test_settings_are_read_with_aget_connection(conn_id: str,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    def blocking_lookup(conn_id: str) -> Any:
        raise AssertionError("the async hook must not use the blocking get_connection")

    monkeypatch.setattr(BaseHook, "get_connection", classmethod(
        lambda cls, conn_id: blocking_lookup(conn_id)))
    monkeypatch.setattr(Connection, "extra_dejson", property(off_the_loop(Connection)))
    hook = KafkaConnectAsyncHook(conn_id)
    with pytest.raises(RuntimeError, match="aget_settings"):
        _ = hook.settings
    settings = run(hook.aget_settings())
    assert settings.base_url == BASE_URL and settings.auth == ("airflow", PASSWORD)
    assert hook.settings is settings


def test_client_is_one_async_client_per_hook(conn_id: str, fake: FakeConnect) -> None:
    hook = make_hook(conn_id, fake)
    fake.answer(httpx.Response(200, json=SERVER_INFO), httpx.Response(200, json=["c"]))

    async def scenario() -> tuple[httpx.AsyncClient, httpx.AsyncClient]:
        first = await hook.aget_conn()
        await hook.get_server_info()
        await hook.list_connectors()
        same = await hook.aget_conn()
        await hook.aclose()
        return first, same

    first, same = run(scenario())
    assert isinstance(first, httpx.AsyncClient) and first is same and first.is_closed
    assert hook._client is None
    with pytest.raises(NotImplementedError):
        hook.get_conn()


@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=lambda e: e.id)
def test_every_endpoint_sends_its_request(conn_id: str, fake: FakeConnect,
                                          endpoint: Endpoint) -> None:
    fake.answer(answer_response(endpoint.answer))
    result = run(call(make_hook(conn_id, fake), endpoint.call, *endpoint.args,
                      **endpoint.kwargs))
    (sent,) = fake.sent
    assert (sent.method, sent.raw_path) == (endpoint.method, endpoint.path)
    assert sent.query == endpoint.query
    assert sent.body == endpoint.body
    assert as_json(result) == endpoint.result


def test_basic_auth_and_json_headers(conn_id: str, fake: FakeConnect) -> None:
    fake.answer(httpx.Response(200, json=SERVER_INFO))
    run(call(make_hook(conn_id, fake), "get_server_info"))
    headers = fake.sent[0].headers
    token = base64.b64encode(f"airflow:{PASSWORD}".encode()).decode()
    assert headers["authorization"] == f"Basic {token}"
    assert headers["accept"] == headers["content-type"] == "application/json"


def test_empty_answer_is_none_and_topics_unwrap(conn_id: str, fake: FakeConnect) -> None:
    fake.answer(httpx.Response(202), httpx.Response(200, json={"c": {"topics": ["t"]}}))

    async def scenario() -> tuple[Any, Any]:
        async with make_hook(conn_id, fake) as hook:
            return await hook.pause_connector("c"), await hook.get_connector_topics("c")

    assert run(scenario()) == (None, ["t"])


@pytest.mark.parametrize(("name", "args", "status", "expected"), [
    ("put_connector_config", ("c", CONFIG), 400, BadRequestError),
    ("get_connector", ("c",), 403, ForbiddenError),
    ("get_connector_status", ("c",), 404, NotFoundError),
    ("create_connector", ("c", CONFIG), 409, ConnectorAlreadyExistsError),
    ("get_offsets", ("c",), 500, ServerError),
])
def test_error_status_raises_its_class(conn_id: str, fake: FakeConnect, name: str,
                                       args: tuple[Any, ...], status: int,
                                       expected: type[Exception]) -> None:
    fake.answer(error(status, "nope"))
    with pytest.raises(expected) as caught:
        run(call(make_hook(conn_id, fake), name, *args))
    assert type(caught.value) is expected and caught.value.message == "nope"
    assert fake.attempts == 1


def test_rebalance_is_retried_until_success(conn_id: str, fake: FakeConnect,
                                            caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger=_transport.__name__)
    fake.answer(error(409), error(409), httpx.Response(200, json={"offsets": []}))
    assert run(call(make_hook(conn_id, fake), "get_offsets", "c")) == ConnectorOffsets(())
    assert fake.attempts == 3
    assert caplog.text.count("GET /connectors/c/offsets failed (409") == 2


def test_rebalance_gives_up_after_retry_limit(conn_id: str, fake: FakeConnect) -> None:
    fake.answer(error(409, "rebalancing"))
    with pytest.raises(RebalanceInProgressError):
        run(call(make_hook(conn_id, fake, retry_limit=2), "stop_connector", "c"))
    assert fake.attempts == 3


def test_bad_request_is_not_retried(conn_id: str, fake: FakeConnect) -> None:
    fake.answer(error(400), httpx.Response(200, json={}))
    with pytest.raises(BadRequestError):
        run(call(make_hook(conn_id, fake), "alter_offsets", "c", []))
    assert fake.attempts == 1


def test_connect_errors_are_retried_then_translated(conn_id: str, fake: FakeConnect) -> None:
    fake.answer(httpx.ConnectError("[Errno 111] Connection refused"))
    with pytest.raises(KafkaConnectTransportError) as caught:
        run(call(make_hook(conn_id, fake), "get_connector_status", "c"))
    assert isinstance(caught.value.__cause__, httpx.ConnectError)
    assert fake.attempts == 4


def test_lost_post_is_not_repeated(conn_id: str, fake: FakeConnect) -> None:
    fake.answer(httpx.RemoteProtocolError("Server disconnected"), httpx.Response(204))
    with pytest.raises(KafkaConnectTransportError):
        run(call(make_hook(conn_id, fake), "restart_task", "c", 0))
    assert fake.attempts == 1


def test_refused_connection_on_a_real_socket(kafka_connect_conn: Callable[..., str],
                                             refused_url: str) -> None:
    conn_id = kafka_connect_conn("kc_refused", host=refused_url)
    hook = KafkaConnectAsyncHook(conn_id, retry_limit=1, retry_delay=0.0)
    with pytest.raises(KafkaConnectTransportError, match="GET /health got no answer"):
        run(call(hook, "get_health"))


def test_tls_settings_reach_the_handshake(kafka_connect_conn: Callable[..., str],
                                          https_url: str, pki: Pki) -> None:
    conn_id = kafka_connect_conn("kc_tls", host=https_url, extra={
        "ca_bundle": str(pki.ca), "client_cert": str(pki.client_cert),
        "client_key": str(pki.client_key)})
    info = run(call(KafkaConnectAsyncHook(conn_id, retry_limit=0), "get_server_info"))
    assert info.to_dict()["client"] == "test-client"
    conn_id = kafka_connect_conn("kc_tls_insecure", host=https_url, extra={"verify": False})
    assert run(call(KafkaConnectAsyncHook(conn_id, retry_limit=0), "get_server_info"))


def test_secrets_absent_from_logs(conn_id: str, fake: FakeConnect,
                                  caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    fake.answer(error(409), httpx.Response(201, json=INFO))
    run(call(make_hook(conn_id, fake), "put_connector_config", "c",
             {**CONFIG, "connection.password": "config-secret"}))
    token = base64.b64encode(f"airflow:{PASSWORD}".encode()).decode()
    assert "retry 1 of 3" in caplog.text
    for secret in (PASSWORD, token, "config-secret"):
        assert secret not in caplog.text
