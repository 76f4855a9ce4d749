"""KafkaConnectStatusTopicSensor without Kafka: the status-topic read is faked."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from airflow.sdk import PokeReturnValue
from airflow.sdk.exceptions import TaskDeferred

from airflow_provider.exceptions import (
    ConnectorFailedError,
    KafkaConnectError,
    KafkaConnectTransportError,
    NotFoundError,
    StateTimeoutError,
)
from airflow_provider.hooks.status_topic import KafkaConnectStatusTopicHook
from airflow_provider.sensors.status_topic import KafkaConnectStatusTopicSensor
from airflow_provider.utils.connector_state import TaskState
from airflow_provider.utils.status_records import ConnectorStatusView
from tests.unit.airflow_provider._fakes import FakeTI


@pytest.fixture
def context() -> dict[str, Any]:
    return {"ti": FakeTI()}


@pytest.fixture(autouse=True)
def conn(kafka_connect_conn: Callable[..., str]) -> str:
    return kafka_connect_conn(host="http://connect:8083",
                              extra={"bootstrap_servers": "k:9092", "status_topic": "st"})


def view(connector: str = "c", state: str | None = "RUNNING", tasks: dict[int, str] | None = None,
         topics: set[str] | None = None, trace: str | None = None) -> ConnectorStatusView:
    v = ConnectorStatusView(connector)
    if state is not None:
        v.connector_status = TaskState(state, trace, "w:8083")
    v.tasks = {n: TaskState(s, trace) for n, s in (tasks or {}).items()}
    v.topics = set(topics or ())
    return v


class FakeReader:
    """Each read of the status topic returns the next queued view (caught up)."""

    def __init__(self, queued: list[Any]) -> None:
        self.queued = queued
        self.closed = False

    def read(self, timeout: float | None = None) -> tuple[ConnectorStatusView, bool]:
        item = self.queued.pop(0)
        if isinstance(item, BaseException):
            raise item
        return item, True

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def readers() -> list[FakeReader]:
    return []


@pytest.fixture
def topic_reads(monkeypatch: pytest.MonkeyPatch, readers: list[FakeReader]) -> list[Any]:
    """Queued views (or errors) for the status-topic reads; one reader per sensor try."""
    queued: list[Any] = []

    def reader(hook: KafkaConnectStatusTopicHook, connector: str) -> FakeReader:
        settings = hook.settings  # the sensor's connection, through the status-topic hook
        assert (settings.bootstrap_servers, settings.status_topic) == ("k:9092", "st")
        readers.append(FakeReader(queued))
        return readers[-1]

    monkeypatch.setattr(KafkaConnectStatusTopicHook, "reader", reader)
    return queued


def sensor(**kwargs: Any) -> KafkaConnectStatusTopicSensor:
    return KafkaConnectStatusTopicSensor(task_id="wait", connector="c", **kwargs)


def test_poke_waits_then_succeeds_with_the_summary_and_topics(
        topic_reads: list[Any], context: dict[str, Any]) -> None:
    s = sensor(expected_tasks=2)
    topic_reads += [view(tasks={0: "RUNNING"}),
                    view(tasks={0: "RUNNING", 1: "RUNNING"}, topics={"b", "a"})]
    assert s.poke(context) is False
    result = s.poke(context)
    assert isinstance(result, PokeReturnValue) and result.is_done
    assert result.xcom_value["tasks"] == {"0": "RUNNING", "1": "RUNNING"}
    assert context["ti"].pushed == {"topics": ["a", "b"]}


def test_poke_raises_on_failed_with_the_trace(topic_reads: list[Any],
                                              context: dict[str, Any]) -> None:
    topic_reads.append(view(state="FAILED", trace="java.lang.Boom"))
    with pytest.raises(ConnectorFailedError, match="connector is FAILED") as info:
        sensor(expected_tasks=1).poke(context)
    assert info.value.trace == "java.lang.Boom" and info.value.connector == "c"


def test_deferrable_checks_once_then_defers(topic_reads: list[Any],
                                            context: dict[str, Any]) -> None:
    topic_reads.append(view(state="RUNNING", tasks={0: "RUNNING"}))
    s = sensor(target_state="paused", expected_tasks=1, deferrable=True, timeout=90)
    with pytest.raises(TaskDeferred) as info:
        s.execute(context)
    assert info.value.method_name == "execute_complete"
    assert info.value.timeout is not None and info.value.timeout.total_seconds() == 90
    assert info.value.trigger.serialize() == (
        "airflow_provider.triggers.status_topic.StatusTopicTrigger",
        {"kafka_connect_conn_id": "kafka_connect_default", "connector": "c",
         "target_state": "PAUSED", "wait_for_tasks": True, "expected_tasks": 1,
         "timeout": 90.0, "poll_interval": 0.1})


def test_deferrable_returns_at_once_when_already_met(topic_reads: list[Any],
                                                     context: dict[str, Any]) -> None:
    topic_reads.append(view(state="STOPPED"))
    result = sensor(target_state="STOPPED", deferrable=True).execute(context)
    assert (result["status"], result["state"]) == ("success", "STOPPED")


def test_execute_complete(context: dict[str, Any]) -> None:
    s = sensor()
    event = {"status": "success", "connector": "c", "state": "RUNNING", "topics": ["t"]}
    assert s.execute_complete(context, event) == event
    assert context["ti"].pushed == {"topics": ["t"]}
    with pytest.raises(ConnectorFailedError) as info:
        s.execute_complete(context, {"status": "failed", "message": "task 1 is FAILED",
                                     "failed": "task 1", "trace": "T"})
    assert info.value.trace == "T" and "task 1 is FAILED" in str(info.value)
    with pytest.raises(StateTimeoutError, match="not reached"):
        s.execute_complete(context, {"status": "timeout", "message": "RUNNING not reached"})
    with pytest.raises(KafkaConnectError, match="no such topic") as error:
        s.execute_complete(context, {"status": "error", "message": "no such topic"})
    assert str(error.value) == "watching the status topic for 'c' failed: no such topic"


class FakeHook:
    tasks: Any = []

    def __init__(self, kafka_connect_conn_id: str) -> None:
        self.conn_id = kafka_connect_conn_id

    def __enter__(self) -> FakeHook:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def list_tasks(self, connector: str) -> list[Any]:
        if isinstance(self.tasks, Exception):
            raise self.tasks
        return self.tasks


@pytest.mark.parametrize(("kwargs", "rest_tasks", "expected"), [
    ({"expected_tasks": 3}, None, 3),
    ({"expected_tasks": "3"}, None, 3),  # rendered from a template
    ({"expected_tasks": "None"}, [{}, {}], 2),
    ({}, [{}, {}], 2),
    ({}, [], None),  # no tasks yet (being created, or STOPPED): count unknown
    ({}, NotFoundError(404, "no such connector"), None),
    ({"target_state": "STOPPED"}, None, None),  # STOPPED never waits for tasks
    ({"wait_for_tasks": False}, None, None),
])
def test_expected_task_count(monkeypatch: pytest.MonkeyPatch, kwargs: dict[str, Any],
                             rest_tasks: Any, expected: int | None) -> None:
    import airflow_provider.hooks.kafka_connect as hooks

    FakeHook.tasks = rest_tasks if rest_tasks is not None else AssertionError("no REST")
    monkeypatch.setattr(hooks, "KafkaConnectHook", FakeHook)
    assert sensor(**kwargs)._expected() == expected


def test_unreachable_kafka_is_not_yet(topic_reads: list[Any],
                                      context: dict[str, Any]) -> None:
    topic_reads.append(KafkaConnectTransportError("cannot read the status topic: broker down"))
    assert sensor(expected_tasks=1).poke(context) is False


def test_pokes_share_one_reader_closed_when_the_try_ends(
        topic_reads: list[Any], readers: list[FakeReader], context: dict[str, Any]) -> None:
    """Poke mode keeps its position: one reader for every poke of a try, then closed."""
    topic_reads += [view(tasks={0: "UNASSIGNED"}), view(tasks={0: "RUNNING"})]
    result = sensor(expected_tasks=1, poke_interval=0, mode="poke").execute(context)
    assert result["tasks"] == {"0": "RUNNING"} and topic_reads == []
    assert len(readers) == 1 and readers[0].closed
