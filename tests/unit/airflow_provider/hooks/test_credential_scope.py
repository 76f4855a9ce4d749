"""Where the hooks send the connection's credentials: origins normalized as httpx connects,
the ``allowed_worker_urls`` patterns, the scope's verdicts and messages, and the hooks'
clients refusing (before the transport sees anything) what is out of scope — redirects
included. The real servers: tests/security/test_hook_credentials.py."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from airflow_provider.exceptions import (
    KafkaConnectApiError,
    KafkaConnectConfigError,
    UntrustedWorkerUrlError,
)
from airflow_provider.hooks._transport import client_kwargs
from airflow_provider.hooks.connection import ConnectionSettings
from airflow_provider.hooks.credential_scope import (
    CredentialScope,
    Origin,
    OriginPattern,
    parse_allowed_worker_urls,
)
from airflow_provider.hooks.kafka_connect import KafkaConnectHook
from airflow_provider.hooks.kafka_connect_async import KafkaConnectAsyncHook
from tests.unit.airflow_provider.hooks._fakes import BASE_URL, PASSWORD, WORKER_REPORT, FakeConnect

ROGUE = "http://rogue.test:8083"


# --- origins and patterns -------------------------------------------------------------------


@pytest.mark.parametrize(("url", "origin"), [
    ("https://W2.Example.COM/x", ("https", "w2.example.com", 443)),
    ("https://w2.example.com.:443", ("https", "w2.example.com", 443)),
    ("http://[::1]:80/", ("http", "::1", 80)),
    ("https://bücher.example:8443", ("https", "xn--bcher-kva.example", 8443)),
    ("http://user:pw@w2:8083/p?q=1", ("http", "w2", 8083)),
])
def test_origins_are_normalized_as_httpx_connects(url: str, origin: tuple[str, str, int]
                                                  ) -> None:
    assert Origin.of(url) == Origin(*origin)
    assert Origin.of(httpx.URL(url)) == Origin(*origin)


@pytest.mark.parametrize("url", ["w2:8083", "ftp://w2/", "/admin/worker", "http://"])
def test_not_an_absolute_http_url(url: str) -> None:
    with pytest.raises(KafkaConnectConfigError, match="not"):
        Origin.of(url)


@pytest.mark.parametrize(("pattern", "matched", "not_matched"), [
    ("https://w2.example.com:8443", ["https://W2.example.com:8443/x"],
     ["http://w2.example.com:8443", "https://w2.example.com", "https://w3.example.com:8443"]),
    ("https://w2.example.com", ["https://w2.example.com:443"], ["https://w2.example.com:8443"]),
    ("https://*.example.com:*", ["https://a.example.com:1", "https://a.b.example.com:8443"],
     ["https://example.com:8443", "https://evilexample.com:8443", "http://a.example.com:1"]),
    ("http://*:8083", ["http://anything:8083", "http://[::1]:8083"], ["http://a:8084"]),
    ("https://[::1]:8443/", ["https://[::1]:8443"], ["https://[::2]:8443"]),
])
def test_patterns_match_origins(pattern: str, matched: list[str], not_matched: list[str]
                                ) -> None:
    parsed = OriginPattern.parse(pattern)
    assert all(parsed.matches(Origin.of(url)) for url in matched)
    assert not any(parsed.matches(Origin.of(url)) for url in not_matched)


@pytest.mark.parametrize("entry", ["w2:8083", "ftp://w2", "https://w2:8083/path",
                                   "https://w2:99999", "https://w*.example.com",
                                   "https://*.example.com:8x"])
def test_bad_patterns_are_refused(entry: str) -> None:
    with pytest.raises(KafkaConnectConfigError, match="allowed_worker_urls"):
        OriginPattern.parse(entry)


def test_a_pattern_with_user_info_is_refused_without_echoing_it() -> None:
    with pytest.raises(KafkaConnectConfigError) as caught:
        OriginPattern.parse("https://ops:pa55@w2:8443")
    assert "pa55" not in str(caught.value) and "user info" in str(caught.value)


@pytest.mark.parametrize(("value", "entries"), [
    (None, ()), ("", ()),
    (["https://a:1", "http://*.b:*"], ("https://a:1", "http://*.b:*")),
    ('["https://a:1"]', ("https://a:1",)),
    ("https://a:1, http://b:2\nhttps://c", ("https://a:1", "http://b:2", "https://c")),
])
def test_the_extra_is_a_list_a_json_list_or_a_string(value: Any, entries: tuple[str, ...]
                                                     ) -> None:
    assert parse_allowed_worker_urls(value) == entries


@pytest.mark.parametrize("value", ["[not json", {"a": 1}, [1], 5])
def test_the_extra_must_be_a_list_of_strings(value: Any) -> None:
    with pytest.raises(KafkaConnectConfigError, match="allowed_worker_urls"):
        parse_allowed_worker_urls(value)


def test_the_connection_reads_the_extra_in_both_spellings() -> None:
    class Conn:
        host, port, schema, login, password = "https://c:8443", None, None, "ops", "pw"
        extra_dejson = {"extra__kafka_connect__allowed_worker_urls": "https://*.c:8443"}

    assert ConnectionSettings.from_connection(Conn()).allowed_worker_urls == ("https://*.c:8443",)
    Conn.extra_dejson = {"allowed_worker_urls": "https://c:8443/x"}
    with pytest.raises(KafkaConnectConfigError, match="allowed_worker_urls"):
        ConnectionSettings.from_connection(Conn())


# --- the scope ------------------------------------------------------------------------------


def test_what_is_in_scope_and_why() -> None:
    scope = CredentialScope("https://connect.test:8443/prefix", ["https://*.cluster.test:8443"],
                            ["https://given.test:9443/"])
    assert scope.reason("https://CONNECT.test:8443/admin/worker") == "connection"
    assert scope.reason("https://given.test:9443/connector-plugins") == "given"
    assert scope.reason("https://w2.cluster.test:8443") == "allowed_worker_urls"
    for url in ("http://connect.test:8443", "https://connect.test", "https://w2.test:8443",
                "https://cluster.test:8443"):
        assert scope.reason(url) is None, url
    anything = CredentialScope("https://connect.test:8443", allow_any=True)
    assert anything.reason("http://rogue.test:1") == "allow_discovered_workers"


def test_the_refusal_names_every_url_never_user_info_or_query() -> None:
    scope = CredentialScope("https://connect.test:8443")
    with pytest.raises(UntrustedWorkerUrlError) as caught:
        scope.check_all(["https://connect.test:8443", "https://ops:hunter2@rogue.test:1/a?t=x",
                         "http://connect.test:8443/admin/worker"], source="GET /admin/cluster")
    message = str(caught.value)
    assert caught.value.urls == ["https://rogue.test:1/a", "http://connect.test:8443/admin/worker"]
    assert "hunter2" not in message and "t=x" not in message and "ops" not in message
    assert "from GET /admin/cluster" in message and "https://connect.test:8443" in message
    assert "travel in clear" in message  # the downgrade is named
    assert "allowed_worker_urls" in message and "allow_discovered_workers=True" in message


def test_knowing_and_clear_sends_are_warned_once_per_origin(caplog: pytest.LogCaptureFixture
                                                            ) -> None:
    scope = CredentialScope("https://connect.test:8443", ["http://w2.test:8083"],
                            allow_any=True)
    with caplog.at_level(logging.WARNING, "airflow_provider.hooks.credential_scope"):
        for _ in range(3):
            scope.check_all(["http://w2.test:8083/a", "https://w3.test:8443/b",
                             "https://connect.test:8443/c"])
    warned = [record.getMessage() for record in caplog.records]
    assert warned == [
        "Sending the connection's credentials to http://w2.test:8083 (admitted by "
        "allowed_worker_urls): over plain http, in clear",
        "Sending the connection's credentials to https://w3.test:8443 (admitted by "
        "allow_discovered_workers)"]


# --- the hooks' clients ---------------------------------------------------------------------


@pytest.fixture
def define(kafka_connect_conn: Callable[..., str]) -> Callable[..., str]:
    def conn(**extra: Any) -> str:
        return kafka_connect_conn(host=BASE_URL, login="airflow", password=PASSWORD,
                                  extra=extra)
    return conn


def hook(conn_id: str, fake: FakeConnect, **kwargs: Any) -> KafkaConnectHook:
    return KafkaConnectHook(conn_id, retry_limit=0, transport=fake.sync_transport(), **kwargs)


def test_the_connections_worker_gets_the_credentials(define: Callable[..., str]) -> None:
    fake = FakeConnect().answer(httpx.Response(200, json=WORKER_REPORT))
    with hook(define(), fake) as sync:
        sync.get_worker(f"{BASE_URL}/")  # its own origin, absolute
        sync.get_worker()
    assert [sent.headers["authorization"].startswith("Basic ") for sent in fake.sent] == [
        True, True]


@pytest.mark.parametrize("url", [ROGUE, "https://connect.test:8083", "http://connect.test:8084"])
def test_a_url_out_of_scope_never_reaches_the_transport(define: Callable[..., str],
                                                        url: str) -> None:
    fake = FakeConnect()
    with hook(define(), fake) as sync, pytest.raises(UntrustedWorkerUrlError, match=url):
        sync.list_connector_plugins(worker_url=url)
    assert fake.sent == []


@pytest.mark.parametrize(("extra", "kwargs"), [
    ({"allowed_worker_urls": "http://*.test:8083"}, {}),
    ({"allowed_worker_urls": ["http://rogue.test:*"]}, {}),
    ({}, {"trusted_worker_urls": [f"{ROGUE}/"]}),
    ({}, {"trusted_worker_urls": ROGUE}),
    ({}, {"allow_discovered_workers": True}),
])
def test_allowed_given_or_knowingly(define: Callable[..., str], extra: dict[str, Any],
                                    kwargs: dict[str, Any]) -> None:
    fake = FakeConnect().answer(httpx.Response(200, json=[]))
    with hook(define(**extra), fake, **kwargs) as sync:
        assert sync.list_connector_plugins(worker_url=ROGUE) == []
    (sent,) = fake.sent
    assert sent.headers["host"] == "rogue.test:8083" and "authorization" in sent.headers


def test_the_async_hook_refuses_the_same(define: Callable[..., str]) -> None:
    fake = FakeConnect().answer(httpx.Response(200, json=[]))

    async def scenario() -> None:
        async with KafkaConnectAsyncHook(define(), retry_limit=0,
                                         transport=fake.async_transport()) as refusing:
            with pytest.raises(UntrustedWorkerUrlError):
                await refusing.list_connector_plugins(worker_url=ROGUE)
        async with KafkaConnectAsyncHook(define(), retry_limit=0,
                                         transport=fake.async_transport(),
                                         trusted_worker_urls=[ROGUE]) as trusting:
            assert await trusting.list_connector_plugins(worker_url=ROGUE) == []

    asyncio.run(scenario())
    (sent,) = fake.sent
    assert sent.headers["host"] == "rogue.test:8083"


def test_a_bad_trusted_url_fails_at_construction() -> None:
    with pytest.raises(KafkaConnectConfigError, match="not an absolute http"):
        KafkaConnectHook(trusted_worker_urls=["rogue.test:8083"])


def redirect_to(location: str) -> httpx.Response:
    return httpx.Response(307, headers={"Location": location})


def test_a_redirect_is_never_followed(define: Callable[..., str]) -> None:
    fake = FakeConnect().answer(redirect_to(f"{ROGUE}/connectors"))
    with hook(define(), fake) as sync, pytest.raises(KafkaConnectApiError) as caught:
        sync.list_connectors()
    assert caught.value.status_code == 307
    assert len(fake.sent) == 1


def test_a_forced_redirect_out_of_scope_is_refused_before_it_is_sent(
        define: Callable[..., str]) -> None:
    fake = FakeConnect().answer(redirect_to(f"{ROGUE}/connectors"))
    with hook(define(), fake) as sync:
        client = sync.get_conn()  # a caller who makes the client follow redirects
        with pytest.raises(UntrustedWorkerUrlError, match=ROGUE):
            client.get("/connectors", follow_redirects=True)
    assert len(fake.sent) == 1  # the first request only


def test_client_kwargs_vet_with_the_connections_scope_by_default() -> None:
    settings = ConnectionSettings(base_url="https://c:8443", auth=("u", "p"),
                                  allowed_worker_urls=("https://w2:8443",))
    kwargs = client_kwargs(settings)
    assert kwargs["follow_redirects"] is False
    (check,) = kwargs["event_hooks"]["request"]
    check(httpx.Request("GET", "https://w2:8443/x"))
    with pytest.raises(UntrustedWorkerUrlError):
        check(httpx.Request("GET", "http://w2:8443/x"))
    (acheck,) = client_kwargs(settings, asynchronous=True)["event_hooks"]["request"]
    assert asyncio.iscoroutinefunction(acheck)
