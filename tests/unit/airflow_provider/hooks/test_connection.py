from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from airflow_provider.exceptions import KafkaConnectConfigError
from airflow_provider.hooks.connection import ConnectionSettings


@dataclass
class Conn:
    host: str | None = "connect"
    port: int | None = None
    schema: str | None = None
    login: str | None = None
    password: str | None = None
    extra_dejson: dict[str, Any] = field(default_factory=dict)


@pytest.mark.parametrize(("conn", "url"), [
    (Conn(), "http://connect:8083"),
    (Conn(port=9000, schema="https"), "https://connect:9000"),
    (Conn(host="https://c.example.com:8443/"), "https://c.example.com:8443"),
    (Conn(host="http://c.example.com/connect", port=8083), "http://c.example.com:8083/connect"),
    (Conn(host="http://[::1]:8083"), "http://[::1]:8083"),
])
def test_base_url(conn: Conn, url: str) -> None:
    assert ConnectionSettings.from_connection(conn).base_url == url


@pytest.mark.parametrize(("conn", "message"), [
    (Conn(host=None), "no host"),
    (Conn(host="ftp://x"), "not an http"),
    (Conn(schema="ftp"), "schema must be http or https"),
    (Conn(extra_dejson={"timeout": "soon"}), "'timeout' must be a number"),
    (Conn(extra_dejson={"timeout": 0}), "'timeout' must be positive"),
    (Conn(extra_dejson={"verify": "maybe"}), "'verify' must be true or false"),
    (Conn(extra_dejson={"kafka_config": "[1"}), "'kafka_config' must be a JSON object"),
    (Conn(extra_dejson={"kafka_config": [1]}), "'kafka_config' must be a JSON object"),
    (Conn(extra_dejson={"client_key": "/k.pem"}), "'client_key' needs 'client_cert'"),
])
def test_bad_connections_are_refused(conn: Conn, message: str) -> None:
    with pytest.raises(KafkaConnectConfigError, match=message):
        ConnectionSettings.from_connection(conn)


def test_tls_and_auth_settings() -> None:
    settings = ConnectionSettings.from_connection(Conn(
        login="admin", password="s3cret",
        extra_dejson={"ca_bundle": "/ca.pem", "client_cert": "/c.pem", "client_key": "/k.pem",
                      "timeout": "2.5"}))
    assert settings.auth == ("admin", "s3cret")
    assert (settings.ca_bundle, settings.client_cert, settings.client_key) == (
        "/ca.pem", "/c.pem", "/k.pem")
    assert settings.timeout == 2.5 and settings.verify is True
    unverified = ConnectionSettings.from_connection(Conn(extra_dejson={"verify": "false"}))
    assert unverified.verify is False


def test_secrets_stay_out_of_repr() -> None:
    settings = ConnectionSettings.from_connection(Conn(
        login="admin", password="s3cret",
        extra_dejson={"kafka_config": {"sasl.password": "hunter2"}}))
    assert "s3cret" not in repr(settings) and "hunter2" not in repr(settings)


def test_consumer_config_needs_bootstrap_servers() -> None:
    with pytest.raises(KafkaConnectConfigError, match="no 'bootstrap_servers'"):
        ConnectionSettings.from_connection(Conn()).consumer_config()
    config = ConnectionSettings.from_connection(Conn(extra_dejson={
        "bootstrap_servers": "k:9092", "status_topic": "my-status",
        "kafka_config": {"security.protocol": "SSL", "bootstrap.servers": "ignored"}})
    ).consumer_config()
    assert config["bootstrap.servers"] == "k:9092"
    assert config["security.protocol"] == "SSL"
    assert config["enable.auto.commit"] == "false"


def test_form_prefixed_extras_are_read_too() -> None:
    settings = ConnectionSettings.from_connection(Conn(extra_dejson={
        "extra__kafka_connect__bootstrap_servers": "k:9092",
        "extra__kafka_connect__status_topic": "st"}))
    assert (settings.bootstrap_servers, settings.status_topic) == ("k:9092", "st")


def test_extras_read_beforehand_replace_extra_dejson() -> None:
    # The async lookup reads the extras with aextra_dejson() and passes them in.
    conn = Conn(extra_dejson={"timeout": "soon"})  # would be refused if read
    settings = ConnectionSettings.from_connection(conn, {"timeout": 5, "status_topic": "st"})
    assert (settings.timeout, settings.status_topic) == (5.0, "st")


def test_kafka_client_config_is_the_cluster_without_consumer_settings() -> None:
    settings = ConnectionSettings.from_connection(Conn(extra_dejson={
        "bootstrap_servers": "k:9092", "kafka_config": {"sasl.password": "p"}}))
    assert settings.kafka_client_config() == {"sasl.password": "p",
                                              "bootstrap.servers": "k:9092"}
