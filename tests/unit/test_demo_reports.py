"""What the demo prints when a DAG run on Airflow's processes fails: the warnings and
errors its failed tasks logged, read from Airflow's JSON task logs."""

from __future__ import annotations

import json
from pathlib import Path

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
