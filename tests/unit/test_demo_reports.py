"""What the demo prints when a DAG run on Airflow's processes fails: the warnings and
errors its failed tasks logged, read from Airflow's JSON task logs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dags.demo.airflow_runs import task_log_problems


def _write_log(path: Path, records: list[dict[str, object]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(record) + "\n" for record in records) + "not json\n",
                    encoding="utf-8")


def test_failed_task_logs_give_warnings_errors_and_exceptions(tmp_path: Path) -> None:
    folder = (tmp_path / "task-logs" / "dag_id=d" / "run_id=r" / "task_id=skip")
    _write_log(folder / "attempt=1.log", [
        {"timestamp": "t1", "level": "info", "event": "Pre Execute"},
        {"timestamp": "t2", "level": "warning", "event": "slow answer"},
        {"timestamp": "t3", "level": "error", "event": "Task failed with exception",
         "error_detail": [{"exc_type": "KafkaConnectError", "exc_value": "HTTP 409",
                           "frames": []}]},
    ])
    _write_log(folder / "attempt=2.log.trigger.1.log", [
        {"timestamp": "t4", "level": "error", "event": "Trigger failed"},
    ])

    report = task_log_problems(tmp_path, "d", "r", ["skip", "other"])

    lines = report.splitlines()
    assert lines[0] == "  skip: 4 warning/error line(s)"
    assert "attempt=1.log t2 warning: slow answer" in lines[1]
    assert lines[3].strip() == "KafkaConnectError: HTTP 409"
    assert "attempt=2.log.trigger.1.log t4 error: Trigger failed" in lines[4]
    assert "Pre Execute" not in report
    assert lines[5].startswith("  other: no warning or error logged in ")


def test_the_report_keeps_the_last_lines(tmp_path: Path) -> None:
    folder = tmp_path / "task-logs" / "dag_id=d" / "run_id=r" / "task_id=t"
    _write_log(folder / "attempt=1.log", [
        {"timestamp": f"t{n}", "level": "error", "event": f"error {n}"} for n in range(30)])

    lines = task_log_problems(tmp_path, "d", "r", ["t"], limit=3).splitlines()

    assert lines[0] == "  t: 30 warning/error line(s)"
    assert [line.rsplit(": ", 1)[1] for line in lines[1:]] == ["error 27", "error 28",
                                                                "error 29"]


# ---------------------------------------------------------------- Spark applications


class _Master:
    """The standalone master's application list as ``SparkStandalone.applications()``
    gives it; each call returns the next listing (the last one repeats)."""

    master_url = "spark://127.0.0.1:7077"

    def __init__(self, *listings: list[dict[str, str]]) -> None:
        self.listings = list(listings)
        self.calls = 0

    def applications(self) -> list[dict[str, str]]:
        self.calls += 1
        return self.listings[min(self.calls, len(self.listings)) - 1]


def _app(name: str, state: str) -> dict[str, str]:
    return {"name": name, "state": state, "section": "completedapps"}


def _live_airflow(tmp_path: Path, master: _Master, topic: str = "orders") -> Any:
    from dags.demo.live_airflow import LiveAirflow

    airflow = LiveAirflow(tmp_path)
    airflow.spark = master
    airflow._topic = topic
    return airflow


def test_finished_applications_count_the_name_the_job_gives_itself() -> None:
    from dags.demo.live_airflow import finished_applications, pipeline_app_name

    apps = [_app("orders-pipeline-orders", "FINISHED"), _app("orders-pipeline-orders", "RUNNING"),
            _app("orders-pipeline", "FINISHED"), _app("orders-pipeline-other", "FINISHED")]

    assert pipeline_app_name("orders") == "orders-pipeline-orders"
    assert finished_applications(apps, pipeline_app_name("orders")) == 1
    assert finished_applications([], pipeline_app_name("orders")) == 0


def test_spark_report_counts_each_run_and_returns_once_they_are_finished(
        tmp_path: Path) -> None:
    master = _Master([_app("orders-pipeline-orders", "RUNNING")],
                     [_app("orders-pipeline-orders", "FINISHED")],
                     [_app("orders-pipeline-orders", "FINISHED"),
                      _app("orders-pipeline-orders", "FINISHED")])
    airflow = _live_airflow(tmp_path, master)

    first = airflow._spark_apps()
    assert first.endswith("1 of 1 orders-pipeline-orders application(s) FINISHED")
    assert master.calls == 2  # waited for the condition, not a fixed time

    assert airflow._spark_apps().endswith("2 of 2 orders-pipeline-orders application(s) "
                                          "FINISHED")
    assert master.calls == 3


def test_spark_report_says_how_many_finished_when_the_master_lags(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import dags.demo.live_airflow as live

    monkeypatch.setattr(live, "SPARK_FINISH_TIMEOUT", 0.0)
    airflow = _live_airflow(tmp_path, _Master([_app("orders-pipeline-orders", "RUNNING")]))

    assert airflow._spark_apps().endswith("0 of 1 orders-pipeline-orders application(s) "
                                          "FINISHED")


def test_no_spark_report_without_a_standalone_master(tmp_path: Path) -> None:
    from dags.demo.live_airflow import LiveAirflow

    assert LiveAirflow(tmp_path, spark="local")._spark_apps() == ""


def test_the_two_demos_keep_to_directories_of_their_own() -> None:
    """``make demo`` wipes its directory whole; the worker-only demo wipes its own files:
    sharing one, each would delete the other's state."""
    import dags.demo.__main__ as story
    import worker.demo as worker_demo

    assert worker_demo.parse_args([]).dir == worker_demo.DEFAULT_DIR
    assert story.DEFAULT_DIR.resolve() != worker_demo.DEFAULT_DIR.resolve()
    assert story.DEFAULT_DIR.resolve() not in worker_demo.DEFAULT_DIR.resolve().parents
