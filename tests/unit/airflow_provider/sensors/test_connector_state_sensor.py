"""KafkaConnectConnectorStateSensor without a worker: the REST hook is a stand-in returning
typed statuses; the resume from its trigger is the one both sensors share."""

from __future__ import annotations

from typing import Any

import pytest

from airflow_provider.exceptions import (
    WAIT_OUT_ERRORS,
    ConnectorFailedError,
    KafkaConnectError,
    KafkaConnectTransportError,
    NotFoundError,
    RebalanceInProgressError,
    StateTimeoutError,
)
from airflow_provider.hooks.results import ConnectorStatus
from airflow_provider.sensors.connector_state import KafkaConnectConnectorStateSensor
from airflow_provider.sensors.status_topic import KafkaConnectStatusTopicSensor
from airflow_provider.utils.events import ConnectorStateEventMixin
from tests.unit.airflow_provider._fakes import FakeTI


class FakeHook:
    """Answers ``get_connector_status`` from a queue (an error is raised)."""

    def __init__(self, *answers: ConnectorStatus | Exception) -> None:
        self.answers = list(answers)

    def get_connector_status(self, connector: str) -> ConnectorStatus:
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    def get_connector_topics(self, connector: str) -> list[str]:
        return ["t2", "t1"]


def status(state: str, *tasks: str, trace: str | None = None) -> ConnectorStatus:
    return ConnectorStatus.from_json({
        "name": "c", "type": "source", "connector": {"state": state, "worker_id": "w:8083"},
        "tasks": [{"id": n, "state": s, "worker_id": "w:8083", **({"trace": trace} if trace
                                                                  else {})}
                  for n, s in enumerate(tasks)]})


def sensor(hook: FakeHook, **kwargs: Any) -> KafkaConnectConnectorStateSensor:
    s = KafkaConnectConnectorStateSensor(task_id="wait", connector="c", **kwargs)
    s.__dict__["hook"] = hook  # the cached_property's slot
    return s


def test_both_sensors_resume_with_the_one_shared_implementation() -> None:
    for cls in (KafkaConnectConnectorStateSensor, KafkaConnectStatusTopicSensor):
        assert issubclass(cls, ConnectorStateEventMixin)
        assert cls.execute_complete is ConnectorStateEventMixin.execute_complete


@pytest.mark.parametrize("cls", [KafkaConnectConnectorStateSensor, KafkaConnectStatusTopicSensor])
def test_both_sensors_read_default_deferrable_when_constructed(
        cls: type[Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """``[operators] default_deferrable`` is read by the constructor, as the operators read
    it, not when the module was imported: a change after import is followed; an explicit
    ``deferrable`` wins."""
    for setting in ("True", "False"):
        monkeypatch.setenv("AIRFLOW__OPERATORS__DEFAULT_DEFERRABLE", setting)
        assert cls(task_id="wait", connector="c").deferrable is (setting == "True")
        assert cls(task_id="wait", connector="c", deferrable=setting != "True").deferrable \
            is (setting != "True")


@pytest.mark.parametrize("error", [NotFoundError(404, "not yet"), RebalanceInProgressError(
    409, "rebalancing"), KafkaConnectTransportError("refused")])
def test_poke_waits_out_what_passes(error: Exception) -> None:
    assert isinstance(error, WAIT_OUT_ERRORS)
    s = sensor(FakeHook(error, status("RUNNING", "UNASSIGNED"), status("RUNNING", "RUNNING")))
    context = {"ti": FakeTI()}
    assert s.poke(context) is False  # the error
    assert s.poke(context) is False  # a task not RUNNING yet
    assert s.poke(context) is True
    assert s.on_state_reached(context, s._event) == {
        "connector": "c", "target_state": "RUNNING", "status": "success",
        "message": "the connector and its 1 task(s) are RUNNING", "failed": None,
        "trace": None, "type": "source", "state": "RUNNING", "tasks": {"0": "RUNNING"}}
    assert context["ti"].pushed == {"topics": ["t1", "t2"]}


def test_poke_fails_at_once_with_the_trace() -> None:
    s = sensor(FakeHook(status("RUNNING", "RUNNING", "FAILED", trace="java.lang.Boom")))
    with pytest.raises(ConnectorFailedError) as info:
        s.poke({"ti": FakeTI()})
    assert str(info.value) == "connector 'c': task 1 is FAILED\njava.lang.Boom"
    assert (info.value.connector, info.value.trace) == ("c", "java.lang.Boom")


def test_execute_complete() -> None:
    s, context = sensor(FakeHook(), target_state="PAUSED"), {"ti": FakeTI()}
    event = {"status": "success", "connector": "c", "state": "PAUSED", "tasks": {}}
    assert s.execute_complete(context, event) == event
    assert context["ti"].pushed == {}  # topics only when RUNNING was awaited
    with pytest.raises(ConnectorFailedError) as failed:
        s.execute_complete(context, {"status": "failed", "message": "the connector is FAILED",
                                     "trace": "T"})
    assert str(failed.value) == "connector 'c': the connector is FAILED\nT"
    with pytest.raises(StateTimeoutError, match="^PAUSED not reached$"):
        s.execute_complete(context, {"status": "timeout", "message": "PAUSED not reached"})
    with pytest.raises(KafkaConnectError) as error:
        s.execute_complete(context, {"status": "error", "message": "KafkaConnectConfigError"})
    assert str(error.value) == "waiting for 'c' failed: KafkaConnectConfigError"
