"""``orders_pipeline`` on a real Spark standalone cluster writes what local mode writes.

A master and a worker start from the pyspark wheel (``dags/demo/spark_standalone.py``);
the DAG runs twice with ``dag.test()`` over the same offset range of the same topic —
once with a ``local[2]`` Spark connection, once with a ``spark://127.0.0.1:P`` one —
and the Parquet rows (schema and metadata included) and ``_run.json`` must be equal. The
only field allowed to differ is ``_run.json``'s ``output`` (each run writes under its own
output root). The master's ``/json/`` must list the application as FINISHED.
"""

from __future__ import annotations

import datetime
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from airflow_provider.testing import task_states, xcom
from dags.demo.spark_standalone import SparkStandalone
from dags.pipelines.orders_job import read_output, same_output
from tests.integration.spark._kafka import Record, produce
from tests.support import NO_JAVA, create_topic, unique_name, wait_until

pytestmark = pytest.mark.integration

PIPELINE = Path(__file__).parents[3] / "dags" / "orders_pipeline.py"
LOCAL_RUN = datetime.datetime(2026, 4, 1, 6, tzinfo=datetime.UTC)
CLUSTER_RUN = LOCAL_RUN + datetime.timedelta(hours=1)
# _run.json fields that legitimately differ between the two runs: the output directory.
DIFFERING = {"output"}


def order(n: int, customer: str, amount: float, currency: str = "EUR") -> bytes:
    return json.dumps({"order_id": f"o-{n}", "customer": customer, "amount": amount,
                       "currency": currency, "ts": 1_767_225_600_000 + n}).encode()


def orders(topic: str) -> list[Record]:
    """Good, bad and duplicate orders over two partitions."""
    values = [order(1, "acme", 10.5), order(2, "acme", 4.25), order(3, "globex", 7.0, "USD"),
              b"not json", order(4, "acme", -3.0), order(2, "acme", 4.25),
              order(5, "initech", 1.0, "XYZ"), order(6, "globex", 2.5, "USD"),
              order(7, "hooli", 1.25, "GBP")]
    return [Record(topic, n % 2, None, value, 1_767_225_600_000 + n)
            for n, value in enumerate(values)]


def run_pipeline(airflow_dag: Any, monkeypatch: pytest.MonkeyPatch, conn_id: str,
                 output_root: Path, when: datetime.datetime) -> dict[str, Any]:
    """Parse ``orders_pipeline`` with this Spark connection and output root (the DAG reads
    both when parsed), run it and return the plan, summary and what it wrote."""
    monkeypatch.setenv("CONNECT_PLANE_SPARK_CONN", conn_id)
    monkeypatch.setenv("CONNECT_PLANE_PIPELINE_OUTPUT", str(output_root))
    dag = airflow_dag(PIPELINE, "orders_pipeline")
    run = dag.test(run_after=when, logical_date=when)
    assert task_states(run) == {"plan_offsets": "success", "spark_orders": "success",
                                "report": "success"}, conn_id
    plan, summary = xcom(run, "plan_offsets"), xcom(run, "report")
    run_json = json.loads((Path(plan["output"]) / "_run.json").read_text())
    return {"plan": plan, "summary": summary, "run_json": run_json,
            "parquet": read_output(summary["output"])}


def finished(cluster: SparkStandalone) -> list[dict[str, Any]]:
    """The completed applications, once the master lists no active one."""
    apps = cluster.applications()
    if any(app["section"] == "activeapps" for app in apps):
        return []
    return [app for app in apps if app["section"] == "completedapps"]


def without(summary: dict[str, Any], fields: set[str]) -> dict[str, Any]:
    return {key: value for key, value in summary.items() if key not in fields}


def test_orders_pipeline_on_standalone_cluster_matches_local_mode(
        airflow_dag: Any, kafka_admin: Any, kafka_bootstrap: str,
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    if NO_JAVA:
        pytest.skip(NO_JAVA)
    topic = create_topic(kafka_admin, unique_name("orders"), partitions=2)
    records = produce(kafka_bootstrap, orders(topic))
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}"
                               f"{os.environ.get('PATH', '')}")
    monkeypatch.setenv("PYSPARK_PYTHON", sys.executable)
    monkeypatch.setenv("SPARK_LOCAL_IP", "127.0.0.1")  # driver and executors on loopback
    # Light JVMs for the driver and the executors (C1 only, serial GC): spark-submit reads
    # spark-defaults.conf from SPARK_CONF_DIR; the job's own conf is left as the DAG has it.
    conf_dir = tmp_path / "spark-conf"
    conf_dir.mkdir()
    light = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
    (conf_dir / "spark-defaults.conf").write_text(
        f"spark.driver.extraJavaOptions {light}\nspark.executor.extraJavaOptions {light}\n")
    monkeypatch.setenv("SPARK_CONF_DIR", str(conf_dir))
    monkeypatch.setenv("CONNECT_PLANE_KAFKA_BOOTSTRAP", kafka_bootstrap)
    monkeypatch.setenv("CONNECT_PLANE_ORDERS_TOPIC", topic)
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_LOCAL",
                       json.dumps({"conn_type": "spark", "host": "local[2]"}))

    with SparkStandalone(tmp_path / "spark") as cluster:
        # SparkSubmitHook keeps a host holding "://" as the master and appends the port.
        host, port = cluster.master_url.rsplit(":", 1)
        monkeypatch.setenv("AIRFLOW_CONN_SPARK_STANDALONE",
                           json.dumps({"conn_type": "spark", "host": host, "port": int(port)}))
        on_cluster = run_pipeline(airflow_dag, monkeypatch, "spark_standalone",
                                  tmp_path / "standalone", CLUSTER_RUN)
        # The master files the application under completedapps once its driver is gone.
        apps = wait_until(lambda: finished(cluster), timeout=30,
                          message=lambda: f"app FINISHED at {cluster.ui_url}/json/: "
                                          f"{cluster.applications()}")
    # orders_job.py names its session after the topic.
    assert [(app["name"], app["state"]) for app in apps] == [(f"orders-pipeline-{topic}",
                                                             "FINISHED")]
    local = run_pipeline(airflow_dag, monkeypatch, "spark_local", tmp_path / "local",
                         LOCAL_RUN)

    # The same range: every record produced, from the earliest offsets.
    ends = {str(p): 1 + max(r.offset for r in records if r.partition == p) for p in (0, 1)}
    for result in (local, on_cluster):
        assert json.loads(result["plan"]["starting_offsets"]) == {topic: {"0": 0, "1": 0}}
        assert json.loads(result["plan"]["ending_offsets"]) == {topic: ends}
    assert (local["run_json"]["records_read"], local["run_json"]["orders"]) == (9, 5)
    assert without(on_cluster["run_json"], DIFFERING) == without(local["run_json"], DIFFERING)
    assert on_cluster["summary"] == on_cluster["run_json"]
    assert on_cluster["run_json"]["output"] != local["run_json"]["output"]
    assert same_output(on_cluster["parquet"], local["parquet"])
