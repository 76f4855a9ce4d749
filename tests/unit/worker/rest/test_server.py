"""``RestServer``: Kafka's listener syntax, real sockets, bounded start and stop."""

from __future__ import annotations

import socket
import threading
import time

import httpx
import pytest

from worker.errors import ConfigError, WorkerError
from worker.rest.app import create_app
from worker.rest.server import Listener, RestServer, parse_listeners


@pytest.mark.parametrize(("raw", "expected"), [
    ("http://127.0.0.1:8083", Listener("http", "127.0.0.1", 8083)),
    ("http://:8083", Listener("http", "", 8083)),
    ("HTTPS://[::1]:8443", Listener("https", "::1", 8443)),
    ("http://my-host.example.com:0", Listener("http", "my-host.example.com", 0)),
])
def test_parse_listener(raw: str, expected: Listener) -> None:
    assert parse_listeners([raw]) == [expected]


def test_parse_listeners_skips_empty_entries() -> None:
    assert parse_listeners(["", "http://:1", " "]) == [Listener("http", "", 1)]


@pytest.mark.parametrize(("raw", "reason"), [
    ("localhost:8083", "Listener doesn't have the right format (protocol://hostname:port)."),
    ("http://localhost", "Listener doesn't have the right format (protocol://hostname:port)."),
    ("ftp://localhost:21", 'Listener protocol must be either "http" or "https".'),
    ("http://localhost:70000", "Port 70000 of listener http://localhost:70000 is out of range"),
])
def test_parse_listener_errors_name_the_key(raw: str, reason: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_listeners([raw])
    assert info.value.key == "listeners"
    assert str(info.value) == f"Invalid value for configuration listeners: {reason}"


def test_parse_listeners_needs_one() -> None:
    with pytest.raises(ConfigError, match="Empty list"):
        parse_listeners(["", ""])


def test_listener_str_brackets_ipv6() -> None:
    assert str(Listener("http", "::1", 80)) == "http://[::1]:80"


def test_serves_real_http_on_port_zero(herder) -> None:
    herder.add("a")
    server = RestServer(create_app(herder), ["http://127.0.0.1:0"])
    server.start()
    try:
        host, port = server.url.rsplit(":", 1)
        assert host == "http://127.0.0.1" and int(port) > 0
        response = httpx.get(f"{server.url}/connectors", timeout=5)
        assert response.status_code == 200
        assert response.json() == ["a"]
        assert response.headers["content-type"] == "application/json"
    finally:
        server.stop()
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{server.url}/connectors", timeout=2)


def test_wildcard_and_several_listeners(herder) -> None:
    server = RestServer(create_app(herder), ["http://:0", "http://127.0.0.1:0"])
    server.start()
    try:
        assert len(server.urls) == 2 and server.urls[0].startswith("http://127.0.0.1:")
        for url in server.urls:
            assert httpx.get(f"{url}/", timeout=5).json()["version"] == "4.0.0"
    finally:
        server.stop()


def test_port_in_use_fails_start_naming_the_listener(herder) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        server = RestServer(create_app(herder), [f"http://127.0.0.1:{port}"])
        with pytest.raises(WorkerError,
                           match=f"Unable to bind REST listener http://127.0.0.1:{port}"):
            server.start()
        with pytest.raises(WorkerError, match="not been started"):
            _ = server.url


def test_https_without_tls_settings_is_a_config_error(herder) -> None:
    server = RestServer(create_app(herder), ["https://127.0.0.1:0"])
    with pytest.raises(ConfigError, match="listeners.https.ssl"):
        server.start()


def test_stop_is_bounded_when_a_handler_hangs(herder, monkeypatch) -> None:
    release = threading.Event()
    entered = threading.Event()

    def hang() -> list[str]:
        entered.set()
        release.wait(30)
        return []

    monkeypatch.setattr(herder, "connectors", hang)
    server = RestServer(create_app(herder), ["http://127.0.0.1:0"], shutdown_timeout=1)
    server.start()
    caller = threading.Thread(target=lambda: httpx.get(f"{server.url}/connectors", timeout=10),
                              daemon=True)
    caller.start()
    try:
        assert entered.wait(5)
        began = time.monotonic()
        server.stop()
        assert time.monotonic() - began < 4
    finally:
        release.set()
        caller.join(10)
