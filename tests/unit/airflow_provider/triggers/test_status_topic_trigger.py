"""StatusTopicTrigger: serialisation round trip and the events of run() without Kafka."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from airflow_provider.exceptions import KafkaConnectTransportError
from airflow_provider.triggers.status_topic import StatusTopicTrigger
from airflow_provider.utils.connector_state import Outcome, TaskState, Verdict
from airflow_provider.utils.status_records import ConnectorStatusView

PATH = "airflow_provider.triggers.status_topic.StatusTopicTrigger"


def run(trigger: StatusTopicTrigger) -> list[dict[str, Any]]:
    async def collect() -> list[dict[str, Any]]:
        return [event.payload async for event in trigger.run()]

    return asyncio.run(collect())


@pytest.mark.parametrize("kwargs", [
    {"kafka_connect_conn_id": "kc", "connector": "my-conn", "target_state": "RUNNING",
     "wait_for_tasks": True, "expected_tasks": 3, "timeout": 600.0, "poll_interval": 0.1},
    {"kafka_connect_conn_id": "kafka_connect_default", "connector": "c", "target_state":
     "STOPPED", "wait_for_tasks": False, "expected_tasks": None, "timeout": None,
     "poll_interval": 0.05},
])
def test_serialize_round_trip(kwargs: dict[str, Any]) -> None:
    path, serialized = StatusTopicTrigger(**kwargs).serialize()
    assert (path, serialized) == (PATH, kwargs)
    assert StatusTopicTrigger(**serialized).serialize() == (PATH, kwargs)


def test_defaults_and_normalised_target_state() -> None:
    _, kwargs = StatusTopicTrigger(kafka_connect_conn_id="kc", connector="c",
                                   target_state="paused").serialize()
    assert kwargs == {"kafka_connect_conn_id": "kc", "connector": "c", "target_state": "PAUSED",
                      "wait_for_tasks": True, "expected_tasks": None, "timeout": None,
                      "poll_interval": 0.1}
    with pytest.raises(ValueError, match="target_state"):
        StatusTopicTrigger(kafka_connect_conn_id="kc", connector="c", target_state="nope")


def test_connection_without_bootstrap_servers_is_an_error_event(
        kafka_connect_conn: Callable[..., str]) -> None:
    conn_id = kafka_connect_conn("kc_no_kafka", host="http://connect:8083")
    events = run(StatusTopicTrigger(kafka_connect_conn_id=conn_id, connector="c"))
    assert len(events) == 1
    assert events[0]["status"] == "error"
    assert "KafkaConnectConfigError" in events[0]["message"]
    assert "bootstrap_servers" in events[0]["message"]


def test_unknown_connection_is_an_error_event() -> None:
    events = run(StatusTopicTrigger(kafka_connect_conn_id="no_such_conn_xyz", connector="c"))
    assert [e["status"] for e in events] == ["error"]
    assert "no_such_conn_xyz" in events[0]["message"]


class FakeWatch:
    """Stands in for StatusTopicWatch: records what it was given, then answers or hangs."""

    calls: list[tuple[Any, ...]] = []

    def __init__(self, settings: Any, connector: str) -> None:
        self.settings = settings
        self.view = ConnectorStatusView(connector)
        self.caught_up = False

    async def until(self, target_state: str, **kwargs: Any) -> Outcome:
        FakeWatch.calls.append((self.settings, target_state, kwargs))
        if self.view.connector == "hangs":
            self.caught_up = True
            self.view.connector_status = TaskState("RUNNING")
            await asyncio.sleep(60)
        self.view.connector_status = TaskState("PAUSED", None, "w:8083")
        self.view.tasks = {0: TaskState("PAUSED")}
        self.view.topics = {"t2", "t1"}
        return Outcome(Verdict.MET, "the connector and its 1 task(s) are PAUSED")


def test_success_event_and_what_the_watch_is_given(
        kafka_connect_conn: Callable[..., str], monkeypatch: pytest.MonkeyPatch) -> None:
    # The trigger gets its watch from KafkaConnectStatusTopicHook.awatch().
    monkeypatch.setattr("airflow_provider.hooks.status_topic.StatusTopicWatch", FakeWatch)
    FakeWatch.calls = []
    conn_id = kafka_connect_conn("kc_kafka", host="http://connect:8083", extra={
        "bootstrap_servers": "k:9092", "status_topic": "st",
        "kafka_config": {"sasl.password": "s3cret"}})
    events = run(StatusTopicTrigger(kafka_connect_conn_id=conn_id, connector="c",
                                    target_state="PAUSED", expected_tasks=1,
                                    poll_interval=0.05))
    assert events == [{"status": "success", "connector": "c", "target_state": "PAUSED",
                       "message": "the connector and its 1 task(s) are PAUSED", "failed": None,
                       "trace": None, "state": "PAUSED", "tasks": {"0": "PAUSED"},
                       "topics": ["t1", "t2"], "worker_id": "w:8083"}]
    [(settings, target, kwargs)] = FakeWatch.calls
    assert (settings.bootstrap_servers, settings.status_topic) == ("k:9092", "st")
    assert settings.kafka_config == {"sasl.password": "s3cret"}
    assert (target, kwargs) == ("PAUSED", {"wait_for_tasks": True, "expected_tasks": 1,
                                           "poll_timeout": 0.05})


def test_timeout_event_says_what_was_seen(kafka_connect_conn: Callable[..., str],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("airflow_provider.hooks.status_topic.StatusTopicWatch", FakeWatch)
    conn_id = kafka_connect_conn("kc_kafka", host="http://connect:8083",
                                 extra={"bootstrap_servers": "k:9092"})
    events = run(StatusTopicTrigger(kafka_connect_conn_id=conn_id, connector="hangs",
                                    target_state="PAUSED", timeout=0.2))
    assert [e["status"] for e in events] == ["timeout"]
    assert events[0]["message"].startswith("PAUSED not reached within 0.2 s: ")
    assert "RUNNING" in events[0]["message"]


class FlakyWatch(FakeWatch):
    """Kafka unreachable on the first attempt."""

    attempts = 0

    async def until(self, target_state: str, **kwargs: Any) -> Outcome:
        FlakyWatch.attempts += 1
        if FlakyWatch.attempts == 1:
            raise KafkaConnectTransportError("cannot read the status topic: broker down")
        return await super().until(target_state, **kwargs)


def test_unreachable_kafka_is_waited_out(kafka_connect_conn: Callable[..., str],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("airflow_provider.hooks.status_topic.StatusTopicWatch", FlakyWatch)
    monkeypatch.setattr("airflow_provider.triggers.status_topic.RETRY_DELAY_S", 0.01)
    conn_id = kafka_connect_conn("kc_kafka", host="http://connect:8083",
                                 extra={"bootstrap_servers": "k:9092"})
    events = run(StatusTopicTrigger(kafka_connect_conn_id=conn_id, connector="c",
                                    target_state="PAUSED", timeout=30))
    assert [e["status"] for e in events] == ["success"] and FlakyWatch.attempts == 2
