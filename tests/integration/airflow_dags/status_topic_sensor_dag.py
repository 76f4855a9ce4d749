"""The status-topic sensor in both modes, for ``dag.test(run_conf=...)``.

``wait_deferred`` (deferrable: checks once, then the trigger follows the topic; emits
the connector's topic Assets) then
``wait_poke`` (poke mode: reads the topic on each poke). Inputs come from ``params``; the
connection is ``kafka_connect_default`` (an environment variable set by the test).
"""

from __future__ import annotations

import datetime

from airflow.sdk import DAG

from airflow_provider.sensors.status_topic import KafkaConnectStatusTopicSensor

with DAG("kc_status_topic_sensor", schedule=None, catchup=False,
         start_date=datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC),
         render_template_as_native_obj=True,
         params={"connector": "", "target_state": "RUNNING", "expected_tasks": None}):
    common = {"connector": "{{ params.connector }}",
              "target_state": "{{ params.target_state }}",
              "expected_tasks": "{{ params.expected_tasks }}",
              "timeout": 120, "poke_interval": 0.5}
    wait_deferred = KafkaConnectStatusTopicSensor(task_id="wait_deferred", deferrable=True,
                                                  emit_topic_assets=True, **common)
    wait_poke = KafkaConnectStatusTopicSensor(task_id="wait_poke", deferrable=False,
                                              mode="poke", **common)
    wait_deferred >> wait_poke
