"""DAGs whose Kafka Connect operators wait deferred (``deferrable=True``): the tests run
them with ``dag.test()``, which runs each trigger inline and resumes the task with its
event, as the triggerer would. Inputs come from ``params``; the connection is
``kafka_connect_default`` (defined by each test)."""

from __future__ import annotations

import datetime
from typing import Any

from airflow.sdk import DAG

from airflow_provider.operators.connectors import (
    KafkaConnectCreateOrUpdateConnectorOperator,
    KafkaConnectRestartConnectorOperator,
    KafkaConnectResumeConnectorOperator,
    KafkaConnectStopConnectorOperator,
)
from airflow_provider.operators.runbook import KafkaConnectOffsetsRunbookOperator

START = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
COMMON: dict[str, Any] = {"schedule": None, "start_date": START, "catchup": False,
                          "render_template_as_native_obj": True}
DEFERRED: dict[str, Any] = {"deferrable": True, "state_timeout": 120, "poll_interval": 0.5}
PARAMS: dict[str, Any] = {"connector": "", "action": "reset", "offsets": None}

with DAG("kc_runbook_deferred", params=PARAMS, **COMMON):
    KafkaConnectOffsetsRunbookOperator(
        task_id="runbook", connector="{{ params.connector }}", action="{{ params.action }}",
        offsets="{{ params.offsets }}", **DEFERRED)

with DAG("kc_runbook_deferred_short_wait", params=PARAMS, **COMMON):
    KafkaConnectOffsetsRunbookOperator(
        task_id="runbook", connector="{{ params.connector }}", action="{{ params.action }}",
        offsets="{{ params.offsets }}", **{**DEFERRED, "state_timeout": 8})

with DAG("kc_state_changes_deferred", params={"connector": "", "config": {}}, **COMMON):
    connector = "{{ params.connector }}"
    create = KafkaConnectCreateOrUpdateConnectorOperator(
        task_id="create", connector=connector, config="{{ params.config }}",
        initial_state="PAUSED", wait_for_state=True, **DEFERRED)
    resume = KafkaConnectResumeConnectorOperator(task_id="resume", connector=connector,
                                                 **DEFERRED)
    stop = KafkaConnectStopConnectorOperator(task_id="stop", connector=connector, **DEFERRED)
    resume_again = KafkaConnectResumeConnectorOperator(task_id="resume_again",
                                                       connector=connector, **DEFERRED)
    restart = KafkaConnectRestartConnectorOperator(
        task_id="restart", connector=connector, include_tasks=True, wait_for_state=True,
        **DEFERRED)
    create >> resume >> stop >> resume_again >> restart
