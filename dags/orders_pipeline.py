"""The Spark pipeline downstream of a connector, scheduled on its topic's Asset.

A source connector (``orders-source``, FileStreamSource) publishes JSON order events to
the ``orders`` topic. Two DAGs:

* ``orders_source_check`` (every 15 minutes) waits until the connector and its tasks are
  RUNNING and then emits an Asset event for each of its active topics (KIP-558). The
  offsets runbooks emit the same events after a replay.
* ``orders_pipeline`` is scheduled on the ``orders`` topic's Asset. Each run:

  1. ``plan_offsets`` decides the exact offset range to read: from where the previous run
     stopped (the earliest offset on the first run) to the current end of every
     partition, and records it under ``{output_root}/ranges/{run_id}.json`` — unless
     this run already has a recorded range (a re-run), which is then reused as is;
  2. ``spark_orders`` runs ``dags/pipelines/orders_job.py`` with ``SparkSubmitOperator``:
     it reads exactly that range, cleans and aggregates the orders and writes Parquet
     under ``{output_root}/runs/{run_id}/totals``;
  3. ``report`` returns the job's summary (records read, dropped, orders, output path).

Re-running a DAG run therefore reads the same records and writes identical output.
Settings come from the environment when the DAG file is parsed:
``CONNECT_PLANE_KAFKA_BOOTSTRAP`` (default ``localhost:9092``), ``CONNECT_PLANE_ORDERS_TOPIC``
(``orders``), ``CONNECT_PLANE_ORDERS_CONNECTOR`` (``orders-source``),
``CONNECT_PLANE_PIPELINE_OUTPUT`` (``/tmp/connect-plane/pipeline``) and
``CONNECT_PLANE_SPARK_CONN`` (``spark_default``). Spark's Python workers use
``PYSPARK_PYTHON``, else the interpreter that parsed this file: it needs pyspark, pyarrow
and connect-plane.
"""

from __future__ import annotations

import datetime
import json
import os
import sys
from pathlib import Path
from typing import Any, cast

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import DAG, task

from airflow_provider.sensors.connector_state import KafkaConnectConnectorStateSensor
from airflow_provider.utils.assets import topic_asset

BOOTSTRAP = os.environ.get("CONNECT_PLANE_KAFKA_BOOTSTRAP", "localhost:9092")
TOPIC = os.environ.get("CONNECT_PLANE_ORDERS_TOPIC", "orders")
CONNECTOR = os.environ.get("CONNECT_PLANE_ORDERS_CONNECTOR", "orders-source")
OUTPUT_ROOT = os.environ.get("CONNECT_PLANE_PIPELINE_OUTPUT", "/tmp/connect-plane/pipeline")
SPARK_CONN = os.environ.get("CONNECT_PLANE_SPARK_CONN", "spark_default")
JOB = str(Path(__file__).parent / "pipelines" / "orders_job.py")
START = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)


def _safe(run_id: str) -> str:
    """``run_id`` as a file name (run ids hold ``:`` and ``+``)."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in run_id)


# [START howto_sensor_emit_topic_assets]
with DAG(
    "orders_source_check",
    schedule=datetime.timedelta(minutes=15),
    start_date=START,
    catchup=False,
    tags=["kafka-connect"],
):
    # Uses the kafka_connect_default connection; its bootstrap_servers extra names the
    # Kafka cluster in the Asset URIs (kafka://<first server>/<topic>).
    KafkaConnectConnectorStateSensor(
        task_id="source_running",
        connector=CONNECTOR,
        target_state="RUNNING",
        emit_topic_assets=True,
        deferrable=True,
        poke_interval=10,
        timeout=600,
    )
# [END howto_sensor_emit_topic_assets]


# [START howto_spark_pipeline_on_topic_asset]
with DAG(
    "orders_pipeline",
    schedule=[topic_asset(TOPIC, bootstrap_servers=BOOTSTRAP)],
    start_date=START,
    catchup=False,
    max_active_runs=1,  # each run starts where the previous one stopped
    tags=["kafka-connect", "spark"],
):

    @task
    def plan_offsets(run_id: str | None = None) -> dict[str, str]:
        """The exact range this run reads, recorded before Spark runs."""
        from spark_kafka_source.offsets import next_ranges, ranges_to_json

        ledger = Path(OUTPUT_ROOT) / "ranges"
        ledger.mkdir(parents=True, exist_ok=True)
        recorded = ledger / f"{_safe(run_id or 'manual')}.json"
        if recorded.exists():  # a re-run: read exactly what the first try read
            return json.loads(recorded.read_text())
        earlier = sorted((p for p in ledger.glob("*.json") if p != recorded),
                         key=lambda p: p.stat().st_mtime_ns)
        previous_end = json.loads(earlier[-1].read_text())["ending_offsets"] if earlier else None
        ranges = next_ranges({"kafka.bootstrap.servers": BOOTSTRAP, "subscribe": TOPIC},
                             previous_end)
        starting, ending = ranges_to_json(ranges)
        plan = {"starting_offsets": starting, "ending_offsets": ending,
                "output": str(Path(OUTPUT_ROOT) / "runs" / _safe(run_id or "manual"))}
        partial = recorded.with_suffix(".tmp")
        partial.write_text(json.dumps(plan, sort_keys=True))
        partial.replace(recorded)  # atomic: a crash never leaves half a plan
        return plan

    plan = plan_offsets()

    spark_orders = SparkSubmitOperator(
        task_id="spark_orders",
        conn_id=SPARK_CONN,
        application=JOB,
        name="orders-pipeline",
        application_args=[
            "--bootstrap-servers", BOOTSTRAP, "--topic", TOPIC,
            "--starting-offsets", "{{ ti.xcom_pull(task_ids='plan_offsets')['starting_offsets'] }}",
            "--ending-offsets", "{{ ti.xcom_pull(task_ids='plan_offsets')['ending_offsets'] }}",
            "--output", "{{ ti.xcom_pull(task_ids='plan_offsets')['output'] }}",
        ],
        conf={"spark.sql.shuffle.partitions": "4", "spark.ui.enabled": "false",
              "spark.sql.session.timeZone": "UTC"},
        env_vars={"PYSPARK_PYTHON": os.environ.get("PYSPARK_PYTHON", sys.executable)},
    )

    @task
    def report(plan: dict[str, str]) -> dict[str, Any]:
        summary = json.loads((Path(plan["output"]) / "_run.json").read_text())
        print(f"Read {summary['records_read']} records ({summary['records_dropped']} dropped, "
              f"{summary['duplicates']} duplicates): {summary['orders']} orders of "
              f"{summary['customers']} customers; Parquet at {summary['output']}")
        return summary

    # TaskFlow takes plan_offsets' XComArg here and passes its value at run time; the
    # decorated signature only knows the value's type.
    plan >> spark_orders >> report(cast("dict[str, str]", plan))
# [END howto_spark_pipeline_on_topic_asset]
