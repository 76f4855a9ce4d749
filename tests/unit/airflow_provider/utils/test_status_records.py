"""Status-topic records as Java's workers write them, and one connector's view of them."""

from __future__ import annotations

import logging

import pytest

from airflow_provider.utils.connector_state import TaskState, Verdict
from airflow_provider.utils.status_records import (
    ConnectorStatusView,
    StatusRecord,
    event_payload,
    parse_status_record,
)

# Bytes of Kafka's JsonConverter (schemas.enable=false), as KafkaStatusBackingStore writes.
RUNNING_V = b'{"state":"RUNNING","trace":null,"worker_id":"10.0.0.1:8083","generation":3}'
TRACE = "org.apache.kafka.connect.errors.ConnectException: boom\n\tat Foo.bar(Foo.java:1)"
FAILED_V = ('{"state":"FAILED","trace":"' + TRACE.replace("\n", "\\n").replace("\t", "\\t")
            + '","worker_id":"10.0.0.2:8083","generation":4}').encode()
ENVELOPE_V = (b'{"schema":{"type":"struct","fields":[{"type":"string","optional":false,'
              b'"field":"state"},{"type":"string","optional":true,"field":"trace"},'
              b'{"type":"string","optional":false,"field":"worker_id"},{"type":"int32",'
              b'"optional":false,"field":"generation"}],"optional":false},'
              b'"payload":{"state":"PAUSED","trace":null,"worker_id":"w:8083",'
              b'"generation":7}}')
TOPIC_V = (b'{"topic":{"name":"orders","connector":"my-conn","task":0,'
           b'"discoverTimestamp":1700000000000}}')


def status(kind: str, connector: str, state: str, *, task: int | None = None,
           worker: str = "w1:8083", generation: int = 1, trace: str | None = None
           ) -> StatusRecord:
    return StatusRecord(kind, connector, task=task, state=state, trace=trace,
                        worker_id=worker, generation=generation)


# ---------------------------------------------------------------------------- parsing


def test_connector_record_as_java_writes_it() -> None:
    assert parse_status_record(b"status-connector-x", RUNNING_V) == StatusRecord(
        "connector", "x", state="RUNNING", trace=None, worker_id="10.0.0.1:8083", generation=3)


def test_task_record_with_trace_and_dashes_in_the_name() -> None:
    record = parse_status_record("status-task-my-conn-v2-12", FAILED_V)
    assert record == StatusRecord("task", "my-conn-v2", task=12, state="FAILED", trace=TRACE,
                                  worker_id="10.0.0.2:8083", generation=4)


def test_schema_payload_envelope_and_extra_fields_are_accepted() -> None:
    assert parse_status_record(b"status-task-c-0", ENVELOPE_V) == StatusRecord(
        "task", "c", task=0, state="PAUSED", worker_id="w:8083", generation=7)
    extra = b'{"state":"RUNNING","worker_id":"w:1","generation":0,"future":{"x":1}}'
    assert parse_status_record(b"status-connector-c", extra).state == "RUNNING"


def test_topic_record_and_tombstones() -> None:
    assert parse_status_record(b"status-topic-orders:connector-my-conn", TOPIC_V) == \
        StatusRecord("topic", "my-conn", topic="orders")
    assert parse_status_record(b"status-topic-orders:connector-my-conn", None) == \
        StatusRecord("topic", "my-conn", topic="orders", deleted=True)
    assert parse_status_record(b"status-connector-x", None) == \
        StatusRecord("connector", "x", deleted=True)
    assert parse_status_record(b"status-task-x-3", None) == \
        StatusRecord("task", "x", task=3, deleted=True)


@pytest.mark.parametrize(("key", "value"), [
    (b"status-task-x", RUNNING_V),  # no task number
    (b"status-task-x-", RUNNING_V),
    (b"status-task--1", RUNNING_V),  # no connector name
    (b"status-task-x-1a", RUNNING_V),
    (b"status-connector-", RUNNING_V),
    (b"status-topic-orders", TOPIC_V),
    (b"status-topic-:connector-c", TOPIC_V),
    (b"connector-x", b'{"properties":{}}'),  # a config-topic key
    (b"something-else", RUNNING_V),
    (None, RUNNING_V),
    (b"status-connector-\xff", RUNNING_V),
    (b"status-connector-x", b"{not json"),
    (b"status-connector-x", b"\xff\xfe"),
    (b"status-connector-x", b'["RUNNING"]'),
    (b"status-connector-x", b'{"state":"SLEEPING","worker_id":"w","generation":1}'),
    (b"status-connector-x", b'{"state":"RUNNING","worker_id":"w"}'),  # no generation
    (b"status-connector-x", b'{"state":"RUNNING","worker_id":"w","generation":"1"}'),
    (b"status-connector-x", b'{"state":"RUNNING","worker_id":"w","generation":true}'),
    (b"status-connector-x", b'{"state":"RUNNING","worker_id":5,"generation":1}'),
    (b"status-connector-x", b'{"state":"RUNNING","trace":[],"worker_id":"w","generation":1}'),
    (b"status-topic-orders:connector-my-conn", b'{"topic":"orders"}'),
    (b"status-topic-other:connector-my-conn", TOPIC_V),  # value does not match its key
])
def test_malformed_or_unrelated_records_are_skipped_with_a_warning(
        key: bytes | None, value: bytes, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="airflow_provider.utils.status_records"):
        assert parse_status_record(key, value) is None
    assert [r.levelno for r in caplog.records] == [logging.WARNING]
    assert "Skipping a status-topic record" in caplog.records[0].getMessage()


# ---------------------------------------------------------------------------- the view


def test_view_ignores_other_connectors() -> None:
    view = ConnectorStatusView("c")
    assert not view.apply(status("connector", "c-2", "RUNNING"))
    assert not view.apply(status("task", "other", "RUNNING", task=0))
    assert view.connector_state is None and view.tasks == {}


def test_stale_generation_from_another_worker_is_ignored() -> None:
    view = ConnectorStatusView("c")
    assert view.apply(status("task", "c", "RUNNING", task=0, worker="w2:8083", generation=5))
    # A zombie worker that missed the rebalance writes with its old generation.
    assert not view.apply(status("task", "c", "FAILED", task=0, worker="w1:8083",
                                 generation=4, trace="zombie"))
    assert view.tasks[0] == TaskState("RUNNING", None, "w2:8083")
    # The same generation, a newer one, or the same worker (Kafka's canWriteSafely) apply.
    assert view.apply(status("task", "c", "PAUSED", task=0, worker="w1:8083", generation=5))
    assert view.apply(status("task", "c", "RUNNING", task=0, worker="w1:8083", generation=2))
    assert view.apply(status("task", "c", "RUNNING", task=0, worker="w3:8083", generation=6))
    assert view.generations[0] == 6
    # Generations are per key: the connector's own status is not compared with its tasks'.
    assert view.apply(status("connector", "c", "RUNNING", worker="w9:8083", generation=1))


def test_tombstones_always_apply_and_a_connector_tombstone_clears_its_tasks() -> None:
    view = ConnectorStatusView("c")
    view.apply(status("connector", "c", "RUNNING", generation=9))
    view.apply(status("task", "c", "RUNNING", task=0, generation=9))
    view.apply(status("task", "c", "RUNNING", task=1, generation=9))
    view.apply(StatusRecord("topic", "c", topic="orders"))
    assert view.apply(StatusRecord("task", "c", task=1, deleted=True))
    assert set(view.tasks) == {0}
    assert view.apply(StatusRecord("connector", "c", deleted=True))
    assert view.connector_state is None and view.tasks == {} and view.generations == {}
    assert view.topics == {"orders"}  # topic statuses have tombstones of their own
    # Re-created (its new statuses may carry any generation, from any worker).
    assert view.apply(status("connector", "c", "RUNNING", worker="w2:8083", generation=1))
    assert view.apply(StatusRecord("topic", "c", topic="orders", deleted=True))
    assert view.topics == set()


R, P, F = "RUNNING", "PAUSED", "FAILED"


@pytest.mark.parametrize(("connector", "tasks", "target", "kwargs", "verdict", "failed"), [
    (None, {}, "RUNNING", {}, Verdict.WAITING, None),  # never seen
    (R, {0: R, 1: R}, "RUNNING", {}, Verdict.MET, None),
    (R, {}, "RUNNING", {}, Verdict.WAITING, None),  # no task seen yet
    (R, {}, "RUNNING", {"wait_for_tasks": False}, Verdict.MET, None),
    (R, {0: R}, "RUNNING", {"expected_tasks": 2}, Verdict.WAITING, None),
    (R, {0: R, 1: R, 2: F}, "RUNNING", {"expected_tasks": 2}, Verdict.MET, None),
    (R, {0: R, 1: "UNASSIGNED"}, "RUNNING", {}, Verdict.WAITING, None),
    (P, {0: R}, "PAUSED", {}, Verdict.WAITING, None),
    (P, {0: P}, "paused", {}, Verdict.MET, None),
    ("STOPPED", {0: R}, "STOPPED", {"expected_tasks": 1}, Verdict.MET, None),  # no tasks
    (R, {0: R}, "STOPPED", {}, Verdict.WAITING, None),
    (F, {0: R}, "RUNNING", {}, Verdict.FAILED, "connector"),
    (R, {0: R, 1: F, 2: F}, "RUNNING", {}, Verdict.FAILED, "task 1"),
    (P, {0: F}, "PAUSED", {}, Verdict.FAILED, "task 0"),
    (R, {0: F}, "RUNNING", {"wait_for_tasks": False}, Verdict.MET, None),  # not considered
    (F, {}, "FAILED", {"wait_for_tasks": False}, Verdict.MET, None),
    (F, {0: F}, "FAILED", {}, Verdict.MET, None),
    (F, {0: R}, "FAILED", {}, Verdict.WAITING, None),
])
def test_evaluate(connector: str | None, tasks: dict[int, str], target: str,
                  kwargs: dict[str, object], verdict: Verdict, failed: str | None) -> None:
    view = ConnectorStatusView("c")
    if connector is not None:
        view.apply(status("connector", "c", connector, trace=f"{connector} trace"))
    for number, state in tasks.items():
        view.apply(status("task", "c", state, task=number, trace=f"task {number} trace"))
    outcome = view.evaluate(target, **{"wait_for_tasks": True, "expected_tasks": None,
                                       **kwargs})  # type: ignore[arg-type]
    assert outcome.verdict is verdict
    assert outcome.failed == failed
    if failed is not None:
        assert outcome.trace == ("FAILED trace" if failed == "connector"
                                 else f"{failed} trace")


def test_evaluate_rejects_an_unknown_target() -> None:
    with pytest.raises(ValueError, match="target_state"):
        ConnectorStatusView("c").evaluate("SLEEPING", wait_for_tasks=True, expected_tasks=None)


def test_event_payload() -> None:
    view = ConnectorStatusView("c")
    view.apply(status("connector", "c", "RUNNING", worker="w1:8083"))
    view.apply(status("task", "c", "RUNNING", task=1))
    view.apply(status("task", "c", "FAILED", task=0, trace="boom"))
    view.apply(StatusRecord("topic", "c", topic="b"))
    view.apply(StatusRecord("topic", "c", topic="a"))
    outcome = view.evaluate("RUNNING", wait_for_tasks=True, expected_tasks=None)
    assert event_payload(view, outcome, "RUNNING") == {
        "status": "failed", "connector": "c", "target_state": "RUNNING",
        "message": "task 0 is FAILED", "failed": "task 0", "trace": "boom",
        "state": "RUNNING", "tasks": {"0": "FAILED", "1": "RUNNING"}, "topics": ["a", "b"],
        "worker_id": "w1:8083"}
