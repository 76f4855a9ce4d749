"""DAGs the provider's integration tests run with ``dag.test(run_conf=...)``.

Inputs come from ``params`` (rendered as native objects), the Kafka Connect connection is
``kafka_connect_default`` (defined by the test through an environment variable).
"""

from __future__ import annotations

import datetime
from typing import Any

from airflow.sdk import DAG

from airflow_provider.operators.connectors import (
    KafkaConnectCreateOrUpdateConnectorOperator,
    KafkaConnectDeleteConnectorOperator,
    KafkaConnectPauseConnectorOperator,
    KafkaConnectRestartConnectorOperator,
    KafkaConnectResumeConnectorOperator,
    KafkaConnectStopConnectorOperator,
)
from airflow_provider.operators.offsets import (
    KafkaConnectAlterOffsetsOperator,
    KafkaConnectGetOffsetsOperator,
    KafkaConnectResetOffsetsOperator,
    KafkaConnectResetTopicsOperator,
)
from airflow_provider.operators.runbook import KafkaConnectOffsetsRunbookOperator
from airflow_provider.sensors.connector_state import KafkaConnectConnectorStateSensor

START = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
COMMON: dict[str, Any] = {"schedule": None, "start_date": START, "catchup": False,
                          "render_template_as_native_obj": True}
WAIT = {"state_timeout": 120, "poll_interval": 0.5}


class InjectedFailureRunbook(KafkaConnectOffsetsRunbookOperator):
    """The runbook with a failure injected once the offsets are changed."""

    def on_offsets_applied(self, context, offsets):
        raise RuntimeError(f"injected failure after the offsets became {offsets}")


with DAG("kc_apply", params={"connector": "", "config": {}, "initial_state": None},
         **COMMON):
    KafkaConnectCreateOrUpdateConnectorOperator(
        task_id="apply", connector="{{ params.connector }}", config="{{ params.config }}",
        initial_state="{{ params.initial_state }}")

with DAG("kc_lifecycle", params={"connector": "", "config": {}}, **COMMON):
    connector = "{{ params.connector }}"
    apply = KafkaConnectCreateOrUpdateConnectorOperator(
        task_id="apply", connector=connector, config="{{ params.config }}")
    running = KafkaConnectConnectorStateSensor(
        task_id="running", connector=connector, deferrable=True, poke_interval=0.5,
        timeout=120)
    pause = KafkaConnectPauseConnectorOperator(task_id="pause", connector=connector, **WAIT)
    paused = KafkaConnectConnectorStateSensor(
        task_id="paused", connector=connector, target_state="PAUSED", deferrable=False,
        poke_interval=0.5, timeout=120, mode="poke")
    resume = KafkaConnectResumeConnectorOperator(task_id="resume", connector=connector,
                                                 **WAIT)
    restart = KafkaConnectRestartConnectorOperator(task_id="restart", connector=connector,
                                                   include_tasks=True)
    stop = KafkaConnectStopConnectorOperator(task_id="stop", connector=connector, **WAIT)
    get_offsets = KafkaConnectGetOffsetsOperator(task_id="get_offsets", connector=connector)
    reset_offsets = KafkaConnectResetOffsetsOperator(task_id="reset_offsets",
                                                     connector=connector)
    alter_offsets = KafkaConnectAlterOffsetsOperator(
        task_id="alter_offsets", connector=connector,
        offsets="{{ ti.xcom_pull(task_ids='get_offsets') }}")
    reset_topics = KafkaConnectResetTopicsOperator(task_id="reset_topics", connector=connector)
    delete = KafkaConnectDeleteConnectorOperator(task_id="delete", connector=connector)
    (apply >> running >> pause >> paused >> resume >> restart >> stop >> get_offsets
     >> reset_offsets >> alter_offsets >> reset_topics >> delete)

with DAG("kc_runbook", params={"connector": "", "action": "reset", "offsets": None},
         **COMMON):
    KafkaConnectOffsetsRunbookOperator(
        task_id="runbook", connector="{{ params.connector }}", action="{{ params.action }}",
        offsets="{{ params.offsets }}", **WAIT)

with DAG("kc_runbook_injected_failure",
         params={"connector": "", "action": "reset", "offsets": None}, **COMMON):
    InjectedFailureRunbook(
        task_id="runbook", connector="{{ params.connector }}", action="{{ params.action }}",
        offsets="{{ params.offsets }}", **WAIT)

with DAG("kc_wait_running", params={"connector": ""}, **COMMON):
    KafkaConnectConnectorStateSensor(
        task_id="running", connector="{{ params.connector }}", deferrable=True,
        poke_interval=0.5, timeout=120, emit_topic_assets=True)
