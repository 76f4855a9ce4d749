from __future__ import annotations

import pytest

from airflow_provider.hooks.results import ConnectorStatus
from airflow_provider.utils.connector_state import (
    TaskState,
    Verdict,
    check_target_state,
    evaluate,
    evaluate_rest_status,
)

RUNNING = TaskState("RUNNING")


def test_target_state_is_normalised_and_checked() -> None:
    assert check_target_state(" paused ") == "PAUSED"
    with pytest.raises(ValueError, match="target_state must be one of"):
        check_target_state("RESTARTING")


@pytest.mark.parametrize(("target", "connector", "tasks", "kwargs", "verdict", "detail"), [
    ("RUNNING", None, {}, {}, Verdict.WAITING, "no status yet"),
    ("RUNNING", RUNNING, {0: RUNNING, 1: RUNNING}, {}, Verdict.MET, "2 task(s) are RUNNING"),
    ("RUNNING", RUNNING, {0: RUNNING, 1: TaskState("UNASSIGNED")}, {}, Verdict.WAITING,
     "task 1 is UNASSIGNED"),
    ("RUNNING", RUNNING, {}, {}, Verdict.WAITING, "no tasks yet"),
    ("RUNNING", RUNNING, {}, {"wait_for_tasks": False}, Verdict.MET, "connector is RUNNING"),
    ("RUNNING", RUNNING, {0: RUNNING}, {"expected_tasks": 2}, Verdict.WAITING,
     "task 1 is not reported"),
    ("RUNNING", RUNNING, {0: RUNNING, 1: RUNNING, 5: TaskState("FAILED")},
     {"expected_tasks": 2}, Verdict.MET, "2 task(s)"),
    ("RUNNING", TaskState("PAUSED"), {0: RUNNING}, {}, Verdict.WAITING, "PAUSED, not RUNNING"),
    ("STOPPED", TaskState("STOPPED"), {0: RUNNING}, {}, Verdict.MET, "connector is STOPPED"),
    ("PAUSED", TaskState("PAUSED"), {0: TaskState("PAUSED")}, {}, Verdict.MET, "PAUSED"),
    ("FAILED", TaskState("FAILED", "boom"), {}, {"wait_for_tasks": False}, Verdict.MET,
     "FAILED"),
])
def test_evaluate(target, connector, tasks, kwargs, verdict, detail) -> None:
    outcome = evaluate(target, connector, tasks, **kwargs)
    assert outcome.verdict is verdict
    assert detail in outcome.detail


def test_a_failed_connector_fails_at_once_with_its_trace() -> None:
    outcome = evaluate("RUNNING", TaskState("FAILED", "java.lang.Boom\n\tat x"), {0: RUNNING})
    assert (outcome.verdict, outcome.failed, outcome.trace) == (
        Verdict.FAILED, "connector", "java.lang.Boom\n\tat x")


def test_a_failed_task_fails_even_before_the_connector_reaches_the_target() -> None:
    outcome = evaluate("RUNNING", TaskState("UNASSIGNED"),
                       {0: RUNNING, 1: TaskState("FAILED", "trace-1")})
    assert (outcome.verdict, outcome.failed, outcome.trace) == (
        Verdict.FAILED, "task 1", "trace-1")


def test_rest_status_body() -> None:
    body = {"name": "c", "type": "sink",
            "connector": {"state": "RUNNING", "worker_id": "w:8083"},
            "tasks": [{"id": 0, "state": "RUNNING", "worker_id": "w:8083"},
                      {"id": 1, "state": "FAILED", "worker_id": "w:8083", "trace": "t"}]}
    outcome = evaluate_rest_status(ConnectorStatus.from_json(body), "RUNNING")
    assert (outcome.verdict, outcome.failed, outcome.trace) == (Verdict.FAILED, "task 1", "t")
    body["tasks"][1]["state"] = "RUNNING"
    assert evaluate_rest_status(ConnectorStatus.from_json(body), "running").verdict \
        is Verdict.MET


def test_over_rest_stopped_means_no_tasks_listed() -> None:
    body = {"name": "c", "connector": {"state": "STOPPED"},
            "tasks": [{"id": 0, "state": "RUNNING"}]}
    status = ConnectorStatus.from_json(body)
    outcome = evaluate_rest_status(status, "STOPPED")
    assert outcome.verdict is Verdict.WAITING and "1 task(s) are still listed" in outcome.detail
    assert evaluate_rest_status(status, "STOPPED", wait_for_tasks=False).verdict is Verdict.MET
    body["tasks"] = []
    assert evaluate_rest_status(ConnectorStatus.from_json(body), "STOPPED").verdict \
        is Verdict.MET
