"""Every example DAG in ``dags/`` through a real ``dag.test()``, against a real worker, the
test broker and — for the pipeline — ``spark-submit`` from this virtualenv in local mode.

* ``orders_pipeline`` reads exactly the range it planned, cleans and aggregates the orders
  into Parquet; re-running the same DAG run writes byte-identical Parquet although the
  topic grew meanwhile; the next run reads only what is new;
* ``orders_source_check`` emits the Asset event that schedules ``orders_pipeline``;
* ``kafka_connect_replay_source`` re-publishes a source's file;
* ``kafka_connect_skip_poison_record`` gets a failed sink past the record it cannot
  convert, and refuses an offset the sink has already passed.
"""

from __future__ import annotations

import datetime
import json
import os
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from confluent_kafka import Producer

from airflow_provider.testing import (
    asset_events,
    queued_asset_runs,
    task_states,
    xcom,
)
from dags.pipelines.orders_job import read_output, same_output
from tests.integration._rest_helpers import STRING_CONVERTER, path, read_values
from tests.support import (
    NO_JAVA,
    create_topic,
    unique_name,
    wait_for_connector_state,
    wait_until,
)

pytestmark = pytest.mark.integration

DAGS = Path(__file__).parents[2] / "dags"
RUNBOOKS = DAGS / "kafka_connect_offsets_runbook.py"
PIPELINE = DAGS / "orders_pipeline.py"
JSON_CONVERTER = "org.apache.kafka.connect.json.JsonConverter"
# One record per produce request: the Tansu test broker's high watermark counts batches,
# and the pipeline plans its ranges up to the watermark (docs/architecture.md §6).
WORKER_PROPS = {"key.converter": STRING_CONVERTER, "value.converter": STRING_CONVERTER,
                "producer.batch.num.messages": 1}
FIRST_RUN = datetime.datetime(2026, 3, 1, 6, tzinfo=datetime.UTC)


@pytest.fixture
def worker(standalone_worker, kafka_connect_conn, kafka_bootstrap: str):
    worker = standalone_worker(WORKER_PROPS)
    kafka_connect_conn(host=worker.url, extra={"bootstrap_servers": kafka_bootstrap})
    return worker


def create(client: httpx.Client, name: str, config: dict[str, str], *,
           tasks_state: str = "RUNNING") -> dict[str, Any]:
    response = client.put(f"{path(name)}/config", json=config)
    assert response.status_code == 201, response.text
    return wait_for_connector_state(client, name, "RUNNING", tasks_state=tasks_state)


def order(n: int, customer: str, amount: float, currency: str = "EUR") -> str:
    return json.dumps({"order_id": f"o-{n}", "customer": customer, "amount": amount,
                       "currency": currency, "ts": 1_767_225_600_000 + n})


# --- orders_pipeline: Spark through SparkSubmitOperator ----------------------------------


@pytest.fixture
def spark_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """``spark_default`` in local mode, and this virtualenv's ``spark-submit`` on PATH."""
    if NO_JAVA:
        pytest.skip(NO_JAVA)
    venv_bin = str(Path(sys.executable).parent)
    monkeypatch.setenv("PATH", f"{venv_bin}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT",
                       json.dumps({"conn_type": "spark", "host": "local[2]"}))
    monkeypatch.setenv("PYSPARK_PYTHON", sys.executable)


def run_at(dag: Any, when: datetime.datetime) -> Any:
    """The DAG run of ``when`` (its run id is ``manual__<when>``); called again, it clears
    that run's tasks and runs them again, as "Clear" in the UI does."""
    return dag.test(run_after=when, logical_date=when)


def parquet_rows(output: str) -> list[dict[str, Any]]:
    import pyarrow.parquet as pq

    return pq.read_table(output).to_pylist()


def test_orders_pipeline_reads_planned_ranges_and_reruns_identically(
        worker, spark_env, airflow_dag, kafka_admin, kafka_bootstrap: str,
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    topic = create_topic(kafka_admin, unique_name("orders"), partitions=1)
    output_root = tmp_path / "pipeline"
    monkeypatch.setenv("CONNECT_PLANE_KAFKA_BOOTSTRAP", kafka_bootstrap)
    monkeypatch.setenv("CONNECT_PLANE_ORDERS_TOPIC", topic)
    monkeypatch.setenv("CONNECT_PLANE_PIPELINE_OUTPUT", str(output_root))
    lines = [order(1, "acme", 10.5), order(2, "acme", 4.25), order(3, "globex", 7.0, "USD"),
             "not json", order(4, "acme", -3.0), order(2, "acme", 4.25),  # bad, bad, dup
             json.dumps({"order_id": "o-5", "customer": "initech", "amount": 1.0,
                         "currency": "XYZ", "ts": 1}), order(6, "globex", 2.5, "USD")]
    source_file = tmp_path / "orders.jsonl"
    source_file.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    create(worker.client, unique_name("orders-source"),
           {"connector.class": "FileStreamSource", "file": str(source_file), "topic": topic})
    assert read_values(kafka_bootstrap, topic, len(lines)) == lines

    dag = airflow_dag(PIPELINE, "orders_pipeline")
    first = run_at(dag, FIRST_RUN)
    assert task_states(first) == {"plan_offsets": "success", "spark_orders": "success",
                                  "report": "success"}
    plan = xcom(first, "plan_offsets")
    assert json.loads(plan["starting_offsets"]) == {topic: {"0": 0}}
    assert json.loads(plan["ending_offsets"]) == {topic: {"0": len(lines)}}
    summary = xcom(first, "report")
    assert {k: summary[k] for k in ("records_read", "records_dropped", "duplicates", "orders",
                                    "customers")} == {"records_read": 8, "records_dropped": 3,
                                                      "duplicates": 1, "orders": 4,
                                                      "customers": 2}
    totals = summary["output"]
    assert first.run_id == "manual__2026-03-01T06:00:00+00:00"
    assert totals == str(output_root / "runs" / "manual__2026-03-01T06_00_00_00_00" / "totals")
    assert parquet_rows(totals) == [
        {"customer": "acme", "currency": "EUR", "orders": 2, "total_amount": 14.75,
         "first_ts": 1_767_225_600_001, "last_ts": 1_767_225_600_002},
        {"customer": "globex", "currency": "USD", "orders": 2, "total_amount": 9.5,
         "first_ts": 1_767_225_600_003, "last_ts": 1_767_225_600_006}]
    written = read_output(totals)

    # More orders arrive; re-running the same DAG run still reads the planned range.
    more = [order(7, "acme", 100.0), order(8, "hooli", 1.25, "GBP")]
    with source_file.open("a", encoding="utf-8") as handle:
        handle.write("".join(f"{line}\n" for line in more))
    assert read_values(kafka_bootstrap, topic, len(lines) + 2) == lines + more
    again = run_at(dag, FIRST_RUN)
    assert again.run_id == first.run_id
    assert task_states(again)["spark_orders"] == "success"
    assert xcom(again, "plan_offsets") == plan
    assert same_output(read_output(totals), written)

    # The next run reads only the new records.
    second = run_at(dag, FIRST_RUN + datetime.timedelta(hours=1))
    assert json.loads(xcom(second, "plan_offsets")["starting_offsets"]) == {topic: {"0": 8}}
    summary = xcom(second, "report")
    assert (summary["records_read"], summary["orders"]) == (2, 2)
    assert [(r["customer"], r["total_amount"]) for r in parquet_rows(summary["output"])] == [
        ("acme", 100.0), ("hooli", 1.25)]


def test_orders_source_check_emits_the_asset_the_pipeline_is_scheduled_on(
        worker, airflow_dag, kafka_admin, kafka_bootstrap: str,
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    topic = create_topic(kafka_admin, unique_name("orders"))
    name = unique_name("orders-source")
    monkeypatch.setenv("CONNECT_PLANE_KAFKA_BOOTSTRAP", kafka_bootstrap)
    monkeypatch.setenv("CONNECT_PLANE_ORDERS_TOPIC", topic)
    monkeypatch.setenv("CONNECT_PLANE_ORDERS_CONNECTOR", name)
    source_file = tmp_path / "orders.jsonl"
    source_file.write_text(f"{order(1, 'acme', 1.0)}\n", encoding="utf-8")
    create(worker.client, name, {"connector.class": "FileStreamSource",
                                 "file": str(source_file), "topic": topic})
    assert read_values(kafka_bootstrap, topic, 1, settle=0)

    dag_run = airflow_dag(PIPELINE, "orders_source_check").test()
    assert task_states(dag_run) == {"source_running": "success"}
    uri = f"kafka://{kafka_bootstrap.split(',')[0]}/{topic}"
    assert [e["source_task_id"] for e in asset_events(uri)] == ["source_running"]
    # Airflow queued a run of orders_pipeline for it (a scheduler would start it now).
    assert uri in queued_asset_runs("orders_pipeline")


# --- the runbooks ------------------------------------------------------------------------


def test_replay_source_republishes_the_file(worker, airflow_dag, kafka_admin,
                                            kafka_bootstrap: str, tmp_path: Path) -> None:
    topic = create_topic(kafka_admin, unique_name("replay"))
    name = unique_name("orders-source")
    lines = [order(n, "acme", float(n)) for n in range(1, 5)]
    source_file = tmp_path / "orders.jsonl"
    source_file.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    create(worker.client, name, {"connector.class": "FileStreamSource",
                                 "file": str(source_file), "topic": topic})
    assert read_values(kafka_bootstrap, topic, 4) == lines
    committed = [{"partition": {"filename": str(source_file)},
                  "offset": {"position": source_file.stat().st_size}}]
    wait_until(lambda: worker.client.get(f"{path(name)}/offsets").json()["offsets"]
               == committed, timeout=60, message="the source to commit its position")

    # From the third line on: its byte position.
    position = len(f"{lines[0]}\n{lines[1]}\n".encode())
    dag_run = airflow_dag(RUNBOOKS, "kafka_connect_replay_source").test(run_conf={
        "connector": name, "action": "alter",
        "offsets": [{"partition": {"filename": str(source_file)},
                     "offset": {"position": position}}]})
    assert task_states(dag_run) == {"replay": "success", "still_running": "success"}
    assert xcom(dag_run, "replay", "offsets_snapshot") == committed
    assert read_values(kafka_bootstrap, topic, 6) == lines + lines[2:]
    uri = f"kafka://{kafka_bootstrap.split(',')[0]}/{topic}"
    assert [e["extra"]["connector"] for e in asset_events(uri)] == [name]


@pytest.fixture
def poisoned_sink(worker, kafka_admin, kafka_bootstrap: str, tmp_path: Path
                  ) -> tuple[str, str, Path]:
    """A FileStreamSink (JsonConverter) whose task failed on offset 2 of its topic."""
    topic = create_topic(kafka_admin, unique_name("poison"))
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    for value in (order(1, "a", 1.0), order(2, "b", 2.0), "{truncated", order(4, "c", 4.0)):
        producer.produce(topic, value.encode(), partition=0)
    assert producer.flush(30) == 0
    name, out = unique_name("orders-archive"), tmp_path / "archive.txt"
    status = create(worker.client, name, {
        "connector.class": "FileStreamSink", "topics": topic, "file": str(out),
        "value.converter": JSON_CONVERTER, "value.converter.schemas.enable": "false"},
        tasks_state="FAILED")
    assert f"offset 2 of {topic}-0" in status["tasks"][0]["trace"]
    assert len(out.read_text().splitlines()) == 2
    return name, topic, out


def skip_poison_record(airflow_dag, connector: str, topic: str, poison_offset: int) -> Any:
    return airflow_dag(RUNBOOKS, "kafka_connect_skip_poison_record").test(run_conf={
        "connector": connector, "topic": topic, "partition": 0,
        "poison_offset": poison_offset})


def test_skip_poison_record_resumes_the_sink_after_it(worker, airflow_dag, poisoned_sink,
                                                      kafka_bootstrap: str) -> None:
    name, topic, out = poisoned_sink
    dag_run = skip_poison_record(airflow_dag, name, topic, 2)
    assert task_states(dag_run) == {"check_position": "success",
                                    "skip_poison_record": "success"}
    assert xcom(dag_run, "check_position") == {"committed": 2, "records_skipped": 1}
    assert xcom(dag_run, "skip_poison_record")["after"] == [
        {"partition": {"kafka_topic": topic, "kafka_partition": 0},
         "offset": {"kafka_offset": 3}}]
    wait_until(lambda: len(out.read_text().splitlines()) == 3, timeout=60,
               message=lambda: f"the record after the poison one in {out.read_text()!r}")
    assert "'order_id': 'o-4'" in out.read_text().splitlines()[2]
    status = worker.client.get(f"{path(name)}/status").json()
    assert [t["state"] for t in status["tasks"]] == ["RUNNING"]
    # The sink's topic is its input: nothing new in it, no Asset event to start the
    # pipelines scheduled on it.
    assert asset_events(f"kafka://{kafka_bootstrap.split(',')[0]}/{topic}") == []


def test_skip_poison_record_refuses_an_offset_already_passed(worker, airflow_dag,
                                                             poisoned_sink) -> None:
    name, topic, _ = poisoned_sink
    dag_run = skip_poison_record(airflow_dag, name, topic, 1)
    assert task_states(dag_run) == {"check_position": "failed",
                                    "skip_poison_record": "upstream_failed"}
    # Nothing changed: still failed at the poison record, offset untouched.
    status = worker.client.get(f"{path(name)}/status").json()
    assert [t["state"] for t in status["tasks"]] == ["FAILED"]
    assert worker.client.get(f"{path(name)}/offsets").json()["offsets"] == [
        {"partition": {"kafka_topic": topic, "kafka_partition": 0},
         "offset": {"kafka_offset": 2}}]
