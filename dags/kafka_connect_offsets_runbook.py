"""Offset runbooks for Kafka Connect (KIP-875), as DAGs an operator triggers by hand.

* ``kafka_connect_replay_source``: stop a source connector, move its offsets back (or reset
  them), resume it, and check it runs — e.g. to re-publish a file after a downstream bug.
* ``kafka_connect_skip_poison_record``: a sink task failed on a record it cannot convert;
  check where the sink's consumer group stands, move it one past that record, resume.

Both wait deferred (in the triggerer: on Connect's status topic when the connection's
Kafka holds it, else over REST) and use the ``kafka_connect_default`` connection; set its
``bootstrap_servers`` extra so the runbook emits Asset events for the connector's topics
(downstream DAGs scheduled on them, such as ``orders_pipeline``, then run on the replayed
data). Trigger with a config,
e.g. ``airflow dags trigger kafka_connect_skip_poison_record --conf '{"connector":
"orders-archive", "topic": "orders", "partition": 0, "poison_offset": 17}'``.
"""

from __future__ import annotations

import datetime
import logging
from typing import Any

from airflow.sdk import DAG, Param, task

from airflow_provider.operators.runbook import KafkaConnectOffsetsRunbookOperator
from airflow_provider.sensors.connector_state import KafkaConnectConnectorStateSensor

START = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
# Deferred tasks: one retry. Airflow <= 3.3.2's scheduler can fail a task whose trigger
# fires within seconds of its deferral, before the scheduler has seen the deferring
# process exit (apache/airflow#67287, #72716: fixed there for the "scheduled" state only).
# Every task here is safe to run again: its end state is the same.
RETRY = {"retries": 1, "retry_delay": datetime.timedelta(seconds=5)}
log = logging.getLogger(__name__)

# [START howto_operator_kafka_connect_replay_source]
with DAG(
    "kafka_connect_replay_source",
    default_args=RETRY,
    schedule=None,
    start_date=START,
    catchup=False,
    render_template_as_native_obj=True,
    tags=["kafka-connect", "runbook"],
    params={
        "connector": Param("orders-source", type="string"),
        "action": Param("alter", enum=["alter", "reset"]),
        # FileStreamSource offsets: {"filename": <file>} → {"position": <byte>}.
        "offsets": Param([{"partition": {"filename": "/data/orders.jsonl"},
                           "offset": {"position": 0}}], type=["array", "null"]),
    },
):
    replay = KafkaConnectOffsetsRunbookOperator(
        task_id="replay",
        connector="{{ params.connector }}",
        action="{{ params.action }}",
        offsets="{{ params.offsets if params.action == 'alter' else None }}",
        state_timeout=300,
        deferrable=True,  # waits for STOPPED and RUNNING in the triggerer
    )
    # The runbook already waited for RUNNING; this re-checks a little later, deferred (no
    # worker slot held), so a task that fails on the replayed data fails the DAG run.
    still_running = KafkaConnectConnectorStateSensor(
        task_id="still_running",
        connector="{{ params.connector }}",
        target_state="RUNNING",
        deferrable=True,
        poke_interval=5,
        timeout=600,
    )
    replay >> still_running
# [END howto_operator_kafka_connect_replay_source]

# [START howto_operator_kafka_connect_skip_poison_record]
with DAG(
    "kafka_connect_skip_poison_record",
    default_args=RETRY,
    schedule=None,
    start_date=START,
    catchup=False,
    render_template_as_native_obj=True,
    tags=["kafka-connect", "runbook"],
    params={
        "connector": Param("orders-archive", type="string"),
        "topic": Param("orders", type="string"),
        "partition": Param(0, type="integer", minimum=0),
        # The poison record's offset (the failed task's trace names it on connect-plane
        # workers); the sink resumes at the record after it.
        "poison_offset": Param(0, type="integer", minimum=0),
    },
):

    @task
    def check_position(params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Where the sink's group stands on the partition; refuse a record already passed.

        On connect-plane workers the group's offset is the poison record's own (everything
        before it was delivered). Apache Kafka Connect drops the whole failed batch, so its
        offset may be lower: the records in between are skipped too, and logged here.
        """
        from airflow_provider.hooks.kafka_connect import KafkaConnectHook

        assert params is not None
        name, topic, partition = params["connector"], params["topic"], params["partition"]
        poison = params["poison_offset"]
        with KafkaConnectHook() as hook:
            offsets = hook.get_offsets(name).offsets
        wanted = {"kafka_topic": topic, "kafka_partition": partition}
        committed: int | None = next((entry.offset["kafka_offset"] for entry in offsets
                                      if entry.partition == wanted and entry.offset), None)
        skipped: int | None = None
        if committed is None:
            log.warning("%s has no committed offset on %s-%d: every record before %d it "
                        "has not delivered is skipped too", name, topic, partition, poison)
        elif committed > poison:
            raise ValueError(f"{name} has already read past offset {poison} of "
                             f"{topic}-{partition} (its group is at {committed}): "
                             "nothing to skip")
        else:
            skipped = poison + 1 - committed
            if skipped > 1:
                log.warning("The group of %s is at offset %d: records %d..%d of %s-%d are "
                            "skipped with the poison record", name, committed, committed,
                            poison - 1, topic, partition)
        return {"committed": committed, "records_skipped": skipped}

    skip = KafkaConnectOffsetsRunbookOperator(
        task_id="skip_poison_record",
        connector="{{ params.connector }}",
        action="alter",
        offsets=[{"partition": {"kafka_topic": "{{ params.topic }}",
                                "kafka_partition": "{{ params.partition }}"},
                  "offset": {"kafka_offset": "{{ params.poison_offset + 1 }}"}}],
        state_timeout=300,
        deferrable=True,
    )
    check_position() >> skip
# [END howto_operator_kafka_connect_skip_poison_record]
