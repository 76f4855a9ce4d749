"""DAGs for ``tests/integration/test_airflow_processes.py`` and
``tests/bench/bench_airflow_pickup.py``, parsed by a real dag-processor and run by a real
scheduler and triggerer: every wait deferred, on the ``kafka_connect_default`` connection.

* ``live_wait_running``: a sensor waiting for the connector to be RUNNING (the test
  resumes it and measures how long Airflow takes to notice and finish the task);
* ``live_runbook``: the offsets runbook, two minutes per wait;
* ``live_runbook_short_wait``: the same with 8 s per wait (a wait that times out in the
  triggerer);
* ``live_emit`` emits an Asset event that schedules ``live_on_asset`` (the scheduler's
  pick-up time).
"""

from __future__ import annotations

import datetime

from airflow.providers.standard.operators.empty import EmptyOperator
from airflow.sdk import DAG, Asset, Param

from airflow_provider.operators.runbook import KafkaConnectOffsetsRunbookOperator
from airflow_provider.sensors.connector_state import KafkaConnectConnectorStateSensor

START = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
# Deferred tasks: one retry. Airflow <= 3.3.2's scheduler can fail a task whose trigger
# fires within seconds of its deferral, before the scheduler has seen the deferring
# process exit (apache/airflow#67287, #72716: fixed there for the "scheduled" state only).
# Every task here is safe to run again: its end state is the same.
RETRY = {"retries": 1, "retry_delay": datetime.timedelta(seconds=5)}
PARAMS = {"connector": Param("", type="string"),
          "action": Param("alter", enum=["alter", "reset"]),
          "offsets": Param(None, type=["array", "null"])}

with DAG("live_wait_running", schedule=None, start_date=START, catchup=False, default_args=RETRY,
         params={"connector": Param("", type="string")}):
    KafkaConnectConnectorStateSensor(task_id="wait_running", connector="{{ params.connector }}",
                                     target_state="RUNNING", deferrable=True,
                                     poke_interval=0.2, timeout=120)

# Not the short wait: its retry would start the task again and succeed.
for dag_id, state_timeout, retry in (("live_runbook", 120, RETRY),
                                     ("live_runbook_short_wait", 8, {})):
    with DAG(dag_id, schedule=None, start_date=START, catchup=False, params=PARAMS,
             default_args=retry,
             render_template_as_native_obj=True):
        KafkaConnectOffsetsRunbookOperator(
            task_id="runbook", connector="{{ params.connector }}",
            action="{{ params.action }}", offsets="{{ params.offsets }}",
            state_timeout=state_timeout, poll_interval=0.2, deferrable=True)

# An Asset event and the DAG scheduled on it: how soon the scheduler starts that run.
PICKUP_ASSET = Asset("connect_plane_live_pickup")

with DAG("live_emit", schedule=None, start_date=START, catchup=False):
    EmptyOperator(task_id="emit", outlets=[PICKUP_ASSET])

with DAG("live_on_asset", schedule=[PICKUP_ASSET], start_date=START, catchup=False):
    EmptyOperator(task_id="consume")
