"""Worker properties of the HTTPS/admin listeners: parsing, the advertised URL, and keeping
the REST server's ``admin.listeners*`` keys away from the Kafka admin client."""

from __future__ import annotations

import pytest

from worker.clients.factories import admin_config
from worker.compose import advertised_listener, advertised_url, worker_id
from worker.config.worker_config import StandaloneConfig
from worker.errors import ConfigError


def test_admin_listeners_keys_are_not_admin_client_settings() -> None:
    config = StandaloneConfig({
        "admin.listeners": "https://127.0.0.1:9443",
        "admin.listeners.https.ssl.keystore.location": "/k.p12",
        "admin.listeners.https.ssl.keystore.password": "pw",
        "admin.request.timeout.ms": "5000",
    })
    conf = admin_config(config)
    # librdkafka rejects unknown properties: these would crash the worker at startup.
    assert "listeners" not in conf
    assert not [k for k in conf if k.startswith("listeners.")]
    assert conf["request.timeout.ms"] == "5000"  # real admin.* settings still pass


@pytest.mark.parametrize(("value", "expected"), [
    (None, None), ("", []), ("http://a:1, https://b:2", ["http://a:1", "https://b:2"])])
def test_admin_listeners_three_states(value: str | None, expected: list[str] | None) -> None:
    props = {} if value is None else {"admin.listeners": value}
    assert StandaloneConfig(props).get("admin.listeners") == expected


def test_admin_listeners_rejects_empty_entries() -> None:
    with pytest.raises(ConfigError, match="Empty URL found when parsing admin.listeners"):
        StandaloneConfig({"admin.listeners": "http://a:1,"})


@pytest.mark.parametrize(("listeners", "advertised", "url"), [
    ("https://h1:8443,http://h2:8083", None, "http://h2:8083"),  # Kafka: http if any
    ("https://h1:8443,https://h3:9443", None, "https://h1:8443"),
    ("http://h2:8083,https://h1:8443", "HTTPS", "https://h1:8443"),
    ("https://[::1]:8443", None, "https://[::1]:8443"),
])
def test_advertised_url_follows_kafka(listeners: str, advertised: str | None, url: str) -> None:
    props = {"listeners": listeners}
    if advertised:
        props["rest.advertised.listener"] = advertised
    config = StandaloneConfig(props)
    assert advertised_url(config) == url
    assert worker_id(config) == url.split("://")[1]


def test_advertised_host_and_port_override() -> None:
    config = StandaloneConfig({"listeners": "https://:8443", "rest.advertised.host.name": "w1",
                               "rest.advertised.port": "443"})
    assert advertised_url(config) == "https://w1:443"


def test_advertised_listener_without_such_listener_is_an_error() -> None:
    config = StandaloneConfig({"listeners": "http://h:8083",
                               "rest.advertised.listener": "https"})
    with pytest.raises(ConfigError) as info:
        advertised_listener(config)
    assert info.value.key == "rest.advertised.listener"
    with pytest.raises(ConfigError, match="rest.advertised.listener"):
        StandaloneConfig({"rest.advertised.listener": "ftp"})
