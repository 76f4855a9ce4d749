"""Reading the status topic: the reader's catch-up rule (every partition at its end once
before any verdict), its consumer settings, and KafkaConnectStatusTopicHook, which owns the
Kafka side of the ``kafka_connect`` connection (sync and async lookups)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from airflow.sdk import BaseHook, Connection
from confluent_kafka import KafkaError, Message

from airflow_provider.exceptions import KafkaConnectConfigError, KafkaConnectTransportError
from airflow_provider.hooks import status_topic
from airflow_provider.hooks.base import KafkaConnectBaseHook
from airflow_provider.hooks.connection import ConnectionSettings
from airflow_provider.hooks.status_topic import (
    KafkaConnectStatusTopicHook,
    StatusTopicWatch,
    _CatchUp,
    _partitions,
    reader_config,
)
from airflow_provider.utils.connector_state import TaskState
from airflow_provider.utils.status_records import ConnectorStatusView
from tests.support.messages import consumed
from tests.unit.airflow_provider.hooks._fakes import off_the_loop

# Bytes of Kafka's JsonConverter (schemas.enable=false), as KafkaStatusBackingStore writes.
RUNNING_V = b'{"state":"RUNNING","trace":null,"worker_id":"10.0.0.1:8083","generation":3}'


# ---------------------------------------------------------------------------- reading


def status(partition: int, key: bytes, value: bytes | None) -> Message:
    """A record of the status topic, as ``Consumer.consume()`` returns it."""
    return consumed(value, key, topic="connect-status", partition=partition)


def event(partition: int, error: KafkaError) -> Message:
    """What ``Consumer.consume()`` returns for an event: a message whose error() is set."""
    return consumed(None, topic="connect-status", partition=partition, error=error)


def eof(partition: int) -> Message:
    return event(partition, KafkaError(KafkaError._PARTITION_EOF))


def test_caught_up_only_once_every_partition_reached_its_end() -> None:
    catch_up = _CatchUp(ConnectorStatusView("x"), frozenset({0, 1, 2}), "connect-status")
    catch_up.feed([status(0, b"status-connector-x", RUNNING_V), eof(0),
                   status(2, b"status-connector-other", b"not even json"), eof(2)])
    assert not catch_up.caught_up and catch_up.view.connector_state == "RUNNING"
    catch_up.feed([status(1, b"status-task-x-0", RUNNING_V), eof(1)])
    assert catch_up.caught_up and catch_up.records == 3
    assert catch_up.view.tasks == {0: TaskState("RUNNING", None, "10.0.0.1:8083")}
    catch_up.feed([status(1, b"status-task-x-0", None), eof(1)])  # EOF again: fine
    assert catch_up.caught_up and catch_up.view.tasks == {}


def test_consumer_errors(caplog: pytest.LogCaptureFixture) -> None:
    catch_up = _CatchUp(ConnectorStatusView("x"), frozenset({0}), "connect-status")
    transient = event(0, KafkaError(KafkaError._TRANSPORT))
    with caplog.at_level(logging.WARNING):
        catch_up.feed([transient, transient])
    # Transient: librdkafka retries; warned once per kind of error.
    assert [r.getMessage() for r in caplog.records if "connect-status" in r.getMessage()] \
        == [caplog.records[0].getMessage()]
    with pytest.raises(KafkaConnectConfigError, match="connect-status"):
        catch_up.feed([event(0, KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED))])
    with pytest.raises(KafkaConnectTransportError, match="connect-status"):
        catch_up.feed([event(0, KafkaError(KafkaError._FATAL, fatal=True))])


@dataclass
class FakeTopic:
    partitions: dict[int, object]
    error: KafkaError | None = None


@dataclass
class FakeMetadata:
    topics: dict[str, FakeTopic]


def test_partitions_of_the_status_topic_and_a_missing_topic() -> None:
    settings = ConnectionSettings(base_url="http://c:8083", bootstrap_servers="k1:9092,k2:9092",
                                  status_topic="my-status")
    partitions = _partitions(FakeMetadata({"my-status": FakeTopic({2: 0, 0: 0, 1: 0})}),
                             settings)
    assert [(tp.topic, tp.partition, tp.offset) for tp in partitions] == [
        ("my-status", 0, -2), ("my-status", 1, -2), ("my-status", 2, -2)]  # -2: beginning
    for metadata in (FakeMetadata({}), FakeMetadata({"my-status": FakeTopic(
            {}, KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART))})):
        with pytest.raises(KafkaConnectConfigError, match="'my-status'.*k1:9092,k2:9092"):
            _partitions(metadata, settings)


def test_reader_config_has_no_group_membership_and_lets_kafka_config_override() -> None:
    settings = ConnectionSettings(base_url="http://c:8083", bootstrap_servers="k:9092",
                                  kafka_config={"security.protocol": "SSL",
                                                "fetch.wait.max.ms": "50"})
    config = reader_config(settings)
    assert config["bootstrap.servers"] == "k:9092"
    assert config["enable.partition.eof"] is True
    assert config["enable.auto.commit"] == "false"
    assert config["security.protocol"] == "SSL" and config["fetch.wait.max.ms"] == "50"
    assert config["fetch.queue.backoff.ms"] == "100"  # librdkafka's 1 s stalls a catch-up
    override = ConnectionSettings(base_url="http://c:8083", bootstrap_servers="k:9092",
                                  kafka_config={"fetch.queue.backoff.ms": "10"})
    assert reader_config(override)["fetch.queue.backoff.ms"] == "10"
    with pytest.raises(KafkaConnectConfigError, match="bootstrap_servers"):
        reader_config(ConnectionSettings(base_url="http://c:8083"))


# ---------------------------------------------------------------------------- the hook


@pytest.fixture
def kafka_conn(kafka_connect_conn: Callable[..., str]) -> str:
    return kafka_connect_conn("kc_kafka", host="http://connect:8083", extra={
        "bootstrap_servers": "k1:9092,k2:9092", "status_topic": "st",
        "kafka_config": {"sasl.password": "s3cret"}})


def test_the_hook_is_a_kafka_connect_hook() -> None:
    assert issubclass(KafkaConnectStatusTopicHook, KafkaConnectBaseHook)
    assert issubclass(KafkaConnectStatusTopicHook, BaseHook)
    assert KafkaConnectStatusTopicHook.conn_name_attr == "kafka_connect_conn_id"
    assert KafkaConnectStatusTopicHook.conn_type == "kafka_connect"
    assert KafkaConnectStatusTopicHook().kafka_connect_conn_id == "kafka_connect_default"


def test_settings_are_read_once(kafka_conn: str, monkeypatch: pytest.MonkeyPatch) -> None:
    lookups: list[str] = []
    original = BaseHook.get_connection

    def counting(cls: type[BaseHook], conn_id: str) -> Any:
        lookups.append(conn_id)
        return original(conn_id)

    monkeypatch.setattr(BaseHook, "get_connection", classmethod(counting))
    hook = KafkaConnectStatusTopicHook(kafka_conn)
    settings = hook.settings
    assert hook.settings is settings and hook.get_conn() is settings and lookups == [kafka_conn]
    assert (settings.bootstrap_servers, settings.status_topic) == ("k1:9092,k2:9092", "st")
    assert settings.kafka_config == {"sasl.password": "s3cret"}


def test_async_lookup_never_blocks(kafka_conn: str, monkeypatch: pytest.MonkeyPatch) -> None:
    def blocking(*_: Any) -> Any:
        raise AssertionError("a blocking lookup on the event loop")

    monkeypatch.setattr(BaseHook, "get_connection", classmethod(blocking))
    monkeypatch.setattr(Connection, "extra_dejson", property(off_the_loop(Connection)))
    hook = KafkaConnectStatusTopicHook(kafka_conn)
    watch = asyncio.run(hook.awatch("my-conn"))
    assert isinstance(watch, StatusTopicWatch) and watch.view.connector == "my-conn"
    assert watch.settings.status_topic == "st" and watch.settings is hook.settings
    assert watch.settings.kafka_config == {"sasl.password": "s3cret"}


def test_read_status_view_uses_the_connection(kafka_conn: str,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[Any, ...]] = []

    def read(settings: ConnectionSettings, connector: str, *, timeout: float | None = None
             ) -> tuple[ConnectorStatusView, bool]:
        calls.append((settings.status_topic, connector, timeout))
        return ConnectorStatusView(connector), True

    monkeypatch.setattr(status_topic, "read_status_view", read)
    view, caught_up = KafkaConnectStatusTopicHook(kafka_conn).read_status_view("c", timeout=2)
    assert (view.connector, caught_up, calls) == ("c", True, [("st", "c", 2)])


def test_test_connection_needs_bootstrap_servers(
        kafka_connect_conn: Callable[..., str]) -> None:
    conn_id = kafka_connect_conn("kc_rest_only", host="http://connect:8083")
    ok, message = KafkaConnectStatusTopicHook(conn_id).test_connection()
    assert not ok and "no 'bootstrap_servers'" in message
