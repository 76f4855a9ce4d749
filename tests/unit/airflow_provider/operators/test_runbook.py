"""The runbook's sequencing and its rollback, against an in-memory stand-in for the REST
hook (the real thing is exercised by tests/integration/test_provider_operators.py)."""

from __future__ import annotations

from typing import Any

import pytest

from airflow_provider.exceptions import NotFoundError, OffsetsShapeError
from airflow_provider.hooks.results import ConnectorOffsets, ConnectorStatus
from airflow_provider.operators.runbook import KafkaConnectOffsetsRunbookOperator

SOURCE_OFFSETS = [{"partition": {"filename": "f"}, "offset": {"position": 10}}]


class FakeConnect:
    """One connector with a state, a task and offsets; records every call."""

    def __init__(self, state: str = "RUNNING", kind: str = "source",
                 offsets: list | None = None, fail_on: str | None = None) -> None:
        self.state, self.kind = state, kind
        self.stored = list(SOURCE_OFFSETS if offsets is None else offsets)
        self.calls: list[str] = []
        self.fail_on = fail_on

    def _call(self, name: str) -> None:
        self.calls.append(name)
        if name == self.fail_on:
            self.fail_on = None  # fail once
            raise RuntimeError(f"{name} failed")

    def get_connector_status(self, connector: str) -> ConnectorStatus:
        if connector != "c":
            raise NotFoundError(404, f"Connector {connector} not found")
        tasks = [] if self.state == "STOPPED" else [{"id": 0, "state": self.state}]
        return ConnectorStatus.from_json({"name": "c", "type": self.kind,
                                          "connector": {"state": self.state}, "tasks": tasks})

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
