"""The runbook's sequencing and its rollback, against an in-memory stand-in for the REST
hook (the real thing is exercised by tests/integration/test_provider_operators.py)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from airflow.sdk.exceptions import TaskDeferralError, TaskDeferred

from airflow_provider.exceptions import NotFoundError, OffsetsShapeError, StateTimeoutError
from airflow_provider.hooks.results import ConnectorOffsets, ConnectorStatus
from airflow_provider.operators.connectors import (
    KafkaConnectRestartConnectorOperator,
    KafkaConnectStopConnectorOperator,
)
from airflow_provider.operators.runbook import KafkaConnectOffsetsRunbookOperator
from airflow_provider.triggers.connector_state import ConnectorStateTrigger
from airflow_provider.triggers.status_topic import StatusTopicTrigger

SOURCE_OFFSETS = [{"partition": {"filename": "f"}, "offset": {"position": 10}}]


class FakeConnect:
    """One connector with a state, a task and offsets; records every call. With ``lag``,
    the first status read after a state change still shows the state before it, as a
    worker's status does while the change is under way."""

    def __init__(self, state: str = "RUNNING", kind: str = "source",
                 offsets: list | None = None, fail_on: str | None = None,
                 lag: bool = False) -> None:
        self.state, self.kind = state, kind
        self.lag, self.stale_state = lag, None
        self.stored = list(SOURCE_OFFSETS if offsets is None else offsets)
        self.calls: list[str] = []
        self.fail_on = fail_on
        self.settings = SimpleNamespace(bootstrap_servers=None)  # the connection's extras

    def _call(self, name: str) -> None:
        self.calls.append(name)
        if self.lag:
            self.stale_state = self.state
        if name == self.fail_on:
            self.fail_on = None  # fail once
            raise RuntimeError(f"{name} failed")

    def get_connector_status(self, connector: str) -> ConnectorStatus:
        if connector != "c":
            raise NotFoundError(404, f"Connector {connector} not found")
        state, self.stale_state = self.stale_state or self.state, None
        tasks = [] if state == "STOPPED" else [{"id": 0, "state": state}]
        return ConnectorStatus.from_json({"name": "c", "type": self.kind,
                                          "connector": {"state": state}, "tasks": tasks})

    def get_offsets(self, connector: str) -> ConnectorOffsets:
        return ConnectorOffsets.from_json({"offsets": list(self.stored)})

    def stop_connector(self, connector: str) -> None:
        self._call("stop")
        self.state = "STOPPED"

    def resume_connector(self, connector: str) -> None:
        self._call("resume")
        self.state = "RUNNING"

    def pause_connector(self, connector: str) -> None:
        self._call("pause")
        self.state = "PAUSED"

    def reset_offsets(self, connector: str) -> None:
        self._call("reset")
        assert self.state == "STOPPED"
        self.stored = []

    def alter_offsets(self, connector: str, offsets: list) -> None:
        self._call("alter")
        assert self.state == "STOPPED"
        keys = {repr(e["partition"]) for e in offsets}
        self.stored = [e for e in self.stored if repr(e["partition"]) not in keys]
        self.stored += [e for e in offsets if e["offset"] is not None]

    def get_connector_topics(self, connector: str) -> list[str]:
        return []


class FakeTI:
    def __init__(self) -> None:
        self.xcom: dict[str, Any] = {}

    def xcom_push(self, key: str, value: Any) -> None:
        self.xcom[key] = value

    def xcom_pull(self, key: str) -> Any:
        return self.xcom.get(key)


def runbook(fake: FakeConnect, **kwargs: Any) -> KafkaConnectOffsetsRunbookOperator:
    op = KafkaConnectOffsetsRunbookOperator(task_id="rb", connector=kwargs.pop("connector", "c"),
                                            poll_interval=0.0, state_timeout=1.0,
                                            emit_topic_assets=False, **kwargs)
    op.__dict__["hook"] = fake  # the cached_property's slot
    return op


def test_reset_stops_resets_and_resumes() -> None:
    fake, ti = FakeConnect(), FakeTI()
    result = runbook(fake, action="reset").execute({"ti": ti})
    assert fake.calls == ["stop", "reset", "resume"]
    assert ti.xcom["offsets_snapshot"] == SOURCE_OFFSETS
    assert (result["before"], result["after"], fake.state) == (SOURCE_OFFSETS, [], "RUNNING")


def test_alter_from_stopped_skips_the_stop_and_can_stay_stopped() -> None:
    fake = FakeConnect(state="STOPPED")
    new = [{"partition": {"filename": "f"}, "offset": {"position": 3}}]
    result = runbook(fake, action="alter", offsets=new, resume=False).execute({"ti": FakeTI()})
    assert fake.calls == ["alter"] and fake.state == "STOPPED"
    assert result["after"] == new


@pytest.mark.parametrize(("kwargs", "error"), [
    ({"action": "rewind"}, ValueError),
    ({"action": "alter"}, ValueError),
    ({"action": "reset", "offsets": SOURCE_OFFSETS}, ValueError),
    ({"action": "alter", "offsets": "{not json"}, ValueError),
    ({"action": "alter", "offsets": [{"partition": {"filename": "f"}}]}, OffsetsShapeError),
    ({"action": "reset", "connector": "missing"}, NotFoundError),
])
def test_bad_requests_change_nothing(kwargs, error) -> None:
    fake, ti = FakeConnect(), FakeTI()
    with pytest.raises(error):
        runbook(fake, **kwargs).execute({"ti": ti})
    assert fake.calls == [] and ti.xcom == {}


def test_sink_offsets_are_checked_against_the_sink_shape() -> None:
    fake = FakeConnect(kind="sink", offsets=[])
    with pytest.raises(OffsetsShapeError, match="kafka_topic and kafka_partition"):
        runbook(fake, action="alter", offsets=SOURCE_OFFSETS).execute({"ti": FakeTI()})
    assert fake.calls == []


@pytest.mark.parametrize("failing", ["reset", "resume"])
def test_a_failure_after_the_stop_restores_offsets_and_state(failing: str) -> None:
    fake = FakeConnect(fail_on=failing)
    with pytest.raises(RuntimeError, match=f"{failing} failed") as info:
        runbook(fake, action="reset").execute({"ti": FakeTI()})
    assert fake.stored == SOURCE_OFFSETS and fake.state == "RUNNING"
    assert any("was restored" in note for note in info.value.__notes__)
    assert fake.calls[-4:] == ["stop", "reset", "alter", "resume"]


def test_a_paused_connector_is_returned_to_paused() -> None:
    fake = FakeConnect(state="PAUSED", fail_on="resume")
    with pytest.raises(RuntimeError):
        runbook(fake, action="reset").execute({"ti": FakeTI()})
    assert fake.state == "PAUSED" and fake.stored == SOURCE_OFFSETS


def test_a_failed_restore_is_reported_on_the_original_error() -> None:
    class Stubborn(FakeConnect):
        def alter_offsets(self, connector: str, offsets: list) -> None:
            raise RuntimeError("broker down")

    fake = Stubborn(fail_on="resume")
    with pytest.raises(RuntimeError, match="resume failed") as info:
        runbook(fake, action="reset").execute({"ti": FakeTI()})
    assert any("Restoring connector 'c' failed too" in note and "broker down" in note
               for note in info.value.__notes__)


# --------------------------------------------------------------------------- deferred


def _success(target: str) -> dict[str, Any]:
    return {"status": "success", "connector": "c", "target_state": target, "state": target}


def test_deferred_runbook_waits_in_the_triggerer_and_returns_the_same_result() -> None:
    fake, ti = FakeConnect(lag=True), FakeTI()
    op = runbook(fake, action="reset", deferrable=True)
    with pytest.raises(TaskDeferred) as stopped:
        op.execute({"ti": ti})
    trigger = stopped.value.trigger
    assert isinstance(trigger, ConnectorStateTrigger) and trigger.target_state == "STOPPED"
    assert stopped.value.method_name == "execute_stopped" and fake.calls == ["stop"]
    assert ti.xcom["runbook_state"]["offsets_touched"] is False

    fresh = runbook(fake, action="reset", deferrable=True)  # a new process resumes
    with pytest.raises(TaskDeferred) as resumed:
        fresh.execute_stopped({"ti": ti}, _success("STOPPED"))
    assert resumed.value.trigger.target_state == "RUNNING"
    assert resumed.value.method_name == "execute_resumed"
    assert fake.calls == ["stop", "reset", "resume"]

    result = runbook(fake, action="reset", deferrable=True).execute_resumed(
        {"ti": ti}, _success("RUNNING"))
    assert (result["before"], result["after"], result["initial_state"]) == (
        SOURCE_OFFSETS, [], "RUNNING")


@pytest.mark.parametrize(("topic_found", "trigger_class"), [
    (True, StatusTopicTrigger), (False, ConnectorStateTrigger)])
def test_deferred_waits_follow_the_status_topic_where_it_exists(
        monkeypatch: pytest.MonkeyPatch, topic_found: bool, trigger_class: type) -> None:
    checked: list[str] = []

    def check(settings: Any) -> tuple[bool, str]:
        checked.append(settings.bootstrap_servers)
        return topic_found, "status topic 'connect-status' does not exist on 127.0.0.1:9092"

    monkeypatch.setattr("airflow_provider.operators._base.check_status_topic", check)
    fake = FakeConnect(lag=True)
    fake.settings = SimpleNamespace(bootstrap_servers="127.0.0.1:9092")
    with pytest.raises(TaskDeferred) as deferred:
        runbook(fake, action="reset", deferrable=True).execute({"ti": FakeTI()})
    trigger = deferred.value.trigger
    assert isinstance(trigger, trigger_class) and trigger.target_state == "STOPPED"
    assert trigger.timeout == 1.0 and checked == ["127.0.0.1:9092"]
    assert deferred.value.timeout.total_seconds() == 61.0  # + the grace for the trigger


def test_a_deferred_wait_that_times_out_restores_the_snapshot() -> None:
    fake, ti = FakeConnect(lag=True), FakeTI()
    op = runbook(fake, action="reset", deferrable=True)
    with pytest.raises(TaskDeferred):
        op.execute({"ti": ti})
    with pytest.raises(TaskDeferred):
        op.execute_stopped({"ti": ti}, _success("STOPPED"))
    assert fake.stored == []
    with pytest.raises(StateTimeoutError, match="not reached") as info:
        op.execute_resumed({"ti": ti}, {"status": "timeout", "connector": "c",
                                        "message": "RUNNING not reached within 1 s"})
    assert fake.stored == SOURCE_OFFSETS and fake.state == "RUNNING"
    assert any("was restored" in note for note in info.value.__notes__)


def test_a_wait_ended_by_airflow_restores_too() -> None:
    fake, ti = FakeConnect(lag=True), FakeTI()
    op = runbook(fake, action="reset", deferrable=True)
    with pytest.raises(TaskDeferred):
        op.execute({"ti": ti})
    with pytest.raises(TaskDeferralError):
        op.resume_execution("__fail__", {"error": "Trigger failure"}, {"ti": ti})
    assert fake.state == "RUNNING" and fake.stored == SOURCE_OFFSETS
    assert fake.calls[-2:] == ["stop", "resume"]  # offsets were never touched


def test_a_failed_event_fails_the_wait_with_the_trace() -> None:
    fake, ti = FakeConnect(lag=True), FakeTI()
    op = runbook(fake, action="reset", deferrable=True)
    with pytest.raises(TaskDeferred):
        op.execute({"ti": ti})
    with pytest.raises(Exception, match="task 0 FAILED") as info:
        op.execute_stopped({"ti": ti}, {"status": "failed", "message": "task 0 FAILED",
                                        "trace": "Traceback ..."})
    assert getattr(info.value, "trace", None) == "Traceback ..."
    assert fake.stored == SOURCE_OFFSETS and fake.state == "RUNNING"


@pytest.mark.parametrize("operator", [KafkaConnectStopConnectorOperator,
                                      KafkaConnectRestartConnectorOperator])
def test_state_change_operators_defer_and_return_the_status_body(operator) -> None:
    fake = FakeConnect(state="PAUSED", lag=True)

    def restart_connector(connector: str, **kwargs: Any) -> None:
        fake._call("restart")
        fake.state = "RUNNING"

    fake.restart_connector = restart_connector
    kwargs = {"wait_for_state": True} if operator is KafkaConnectRestartConnectorOperator \
        else {}
    op = operator(task_id="t", connector="c", deferrable=True, **kwargs)
    op.__dict__["hook"] = fake
    with pytest.raises(TaskDeferred) as deferred:
        op.execute({"ti": FakeTI()})
    target = deferred.value.trigger.target_state
    assert target == ("STOPPED" if operator is KafkaConnectStopConnectorOperator
                      else "RUNNING")
    result = op.execute_complete({"ti": FakeTI()}, _success(target))
    assert result["connector"]["state"] == fake.state


def test_a_target_already_met_is_not_deferred() -> None:
    """The status is read before deferring: a runbook on a STOPPED connector changes its
    offsets in the same process and defers only for RUNNING."""
    fake, ti = FakeConnect(state="STOPPED", lag=True), FakeTI()
    with pytest.raises(TaskDeferred) as resumed:
        runbook(fake, action="reset", deferrable=True).execute({"ti": ti})
    assert resumed.value.trigger.target_state == "RUNNING"
    assert fake.calls == ["reset", "resume"]


def test_a_failed_connector_fails_before_deferring() -> None:
    fake = FakeConnect(state="FAILED")
    op = KafkaConnectRestartConnectorOperator(task_id="t", connector="c", deferrable=True,
                                              wait_for_state=True)
    op.__dict__["hook"] = fake
    fake.restart_connector = lambda connector, **kwargs: fake.calls.append("restart")
    with pytest.raises(Exception, match="FAILED"):
        op.execute({"ti": FakeTI()})
    assert fake.calls == ["restart"]
