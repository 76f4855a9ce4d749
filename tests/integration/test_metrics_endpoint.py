"""``/metrics`` of a real worker process while a pipeline runs, read with the Prometheus
client's own parser.

One worker serves the module: ``SequenceGenerator`` → a topic → ``FileStreamSink`` with
``errors.tolerance=all`` and a dead letter queue; one record in the topic is not JSON, so
the sink's converter fails on it, the task-error metrics count it and it goes to the dead
letter queue. Two scrapes, some seconds apart, must show
Kafka Connect's named metrics moving, with the ``connector`` and ``task`` labels, and the
task clients' own metrics (the producers' from librdkafka's statistics, every second here:
the worker's ``metrics.sample.window.ms`` is 1 s, with 30 samples so that the windowed
metrics still span 30 s; the sink's consumer's from its task, which reads the lag without
statistics). A second worker with ``rest.metrics.enabled=false`` answers 404.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from confluent_kafka import Producer
from prometheus_client.parser import text_string_to_metric_families

from tests.integration._rest_helpers import start_worker
from tests.support import (
    WorkerProcess,
    create_topic,
    unique_name,
    wait_for_connector_state,
    wait_until,
)

pytestmark = pytest.mark.integration

SOURCE, SINK = unique_name("metrics-src"), unique_name("metrics-sink")
TOPIC = unique_name("metrics")
DLQ = unique_name("metrics-dlq")
# The task producers' statistics.interval.ms defaults to metrics.sample.window.ms.
WORKER_OVERRIDES = {"metrics.sample.window.ms": 1000, "metrics.num.samples": 30}
Samples = dict[str, dict[tuple[tuple[str, str], ...], float]]


def scrape(client: httpx.Client) -> Samples:
    """Every sample of ``/metrics``, by sample name, then by sorted labels."""
    response = client.get("/metrics")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    samples: Samples = {}
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            samples.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = \
                sample.value
    return samples


def task_value(samples: Samples, name: str, connector: str, task: int = 0) -> float:
    return samples[f"kafka_connect_{name}"][(("connector", connector), ("task", str(task)))]


@pytest.fixture(scope="module")
def pipeline(worker: WorkerProcess, kafka_admin: Any, kafka_bootstrap: str,
             tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    client = worker.client
    topic = create_topic(kafka_admin, TOPIC)
    sink_file = tmp_path_factory.mktemp("metrics") / "sink.txt"
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    producer.produce(topic, b"{not json")  # the sink's JsonConverter fails on it
    assert producer.flush(10) == 0
    for name, config in {
        SOURCE: {"connector.class": "SequenceGenerator", "topic": topic, "tasks.max": "1",
                 "rate": "200", "batch.size": "20", "count": "-1"},
        SINK: {"connector.class": "FileStreamSink", "topics": topic, "file": str(sink_file),
               "errors.tolerance": "all", "errors.log.enable": "true",
               "errors.deadletterqueue.topic.name": DLQ,
               "errors.deadletterqueue.topic.replication.factor": "1"},
    }.items():
        response = client.put(f"/connectors/{name}/config", json=config)
        assert response.status_code == 201, response.text
    for name in (SOURCE, SINK):
        wait_for_connector_state(client, name, "RUNNING", tasks_state="RUNNING", timeout=30)
    yield client
    for name in (SOURCE, SINK):
        client.delete(f"/connectors/{name}")


def test_sink_worker_and_error_metrics_move_as_the_pipeline_runs(
        pipeline: httpx.Client) -> None:
    # The first scrape once the sink has read something and committed once.
    def sink_started() -> Samples | None:
        samples = scrape(pipeline)
        done = task_value(samples, "sink_task_metrics_offset_commit_completion_total", SINK)
        return samples if done >= 1 else None

    first = wait_until(sink_started, timeout=15, message="a sink offset commit",
                       ignore=(KeyError,))
    read = task_value(first, "sink_task_metrics_sink_record_read_total", SINK)
    sent = task_value(first, "sink_task_metrics_sink_record_send_total", SINK)
    assert read >= 1 and sent >= 1
    def read_more() -> Samples | None:
        samples = scrape(pipeline)
        more = task_value(samples, "sink_task_metrics_sink_record_read_total", SINK)
        return samples if more > read + 50 else None

    second = wait_until(read_more, timeout=15, message="the sink reading more records")
    assert task_value(second, "sink_task_metrics_sink_record_send_total", SINK) > sent
    assert task_value(second, "sink_task_metrics_sink_record_read_rate", SINK) > 0
    assert task_value(second, "sink_task_metrics_partition_count", SINK) == 1
    assert task_value(second, "sink_task_metrics_put_batch_avg_time_ms", SINK) >= 0
    assert task_value(second, "connector_task_metrics_offset_commit_success_percentage",
                      SINK) == 1.0
    # Every commit attempt takes a sequence number; synchronous commits are never skipped.
    assert task_value(second, "sink_task_metrics_offset_commit_seq_no", SINK) >= \
        task_value(second, "sink_task_metrics_offset_commit_completion_total", SINK) >= 1
    assert task_value(second, "sink_task_metrics_offset_commit_skip_total", SINK) == 0
    assert task_value(second, "sink_task_metrics_offset_commit_skip_rate", SINK) == 0
    assert task_value(second, "connector_task_metrics_batch_size_max", SINK) >= 1
    assert 0 < task_value(second, "connector_task_metrics_running_ratio", SINK) <= 1
    # The record that is not JSON: failed for good, skipped (errors.tolerance=all), logged.
    for name in ("total_record_errors", "total_records_skipped", "total_errors_logged",
                 "deadletterqueue_produce_requests"):
        assert task_value(second, f"task_error_metrics_{name}", SINK) == 1, name
    assert task_value(second, "task_error_metrics_last_error_timestamp", SINK) > 0
    # Both tasks run here: worker counts, startups, statuses, connector info.
    worker = {name.removeprefix("kafka_connect_connect_worker_metrics_"): value
              for name, values in second.items() for labels, value in values.items()
              if name.startswith("kafka_connect_connect_worker_metrics_") and not labels}
    assert worker["connector_count"] == 2 and worker["task_count"] == 2
    assert worker["task_startup_success_total"] >= 2
    assert worker["connector_startup_success_total"] >= 2
    running = second["kafka_connect_connect_worker_metrics_connector_running_task_count"]
    assert running[(("connector", SINK),)] == 1 and running[(("connector", SOURCE),)] == 1
    for name, kind in ((SOURCE, "source"), (SINK, "sink")):
        assert second["kafka_connect_connector_task_metrics_status"][
            (("connector", name), ("status", "running"), ("task", "0"))] == 1
        assert second["kafka_connect_connector_metrics_connector_type"][
            (("connector", name), ("connector_type", kind))] == 1
        assert second["kafka_connect_connector_metrics_status"][
            (("connector", name), ("status", "running"))] == 1


def test_source_metrics_move_as_the_pipeline_runs(pipeline: httpx.Client) -> None:
    first = scrape(pipeline)
    polled = task_value(first, "source_task_metrics_source_record_poll_total", SOURCE)
    assert polled > 0  # the source has been running for seconds
    wait_until(lambda: task_value(scrape(pipeline), "source_task_metrics_source_record_"
                                  "write_total", SOURCE) > polled, timeout=10,
               message="source records written")
    second = scrape(pipeline)
    assert task_value(second, "source_task_metrics_source_record_poll_total", SOURCE) > polled
    assert task_value(second, "source_task_metrics_source_record_poll_rate", SOURCE) > 0
    # The generator waits for its rate inside poll(); the worker commits every second.
    assert task_value(second, "source_task_metrics_poll_batch_avg_time_ms", SOURCE) > 0
    assert task_value(second, "connector_task_metrics_offset_commit_avg_time_ms",
                      SOURCE) > 0
    assert task_value(second, "connector_task_metrics_offset_commit_success_percentage",
                      SOURCE) == 1.0
    assert task_value(second, "source_task_metrics_source_record_write_total", SOURCE) <= \
        task_value(second, "source_task_metrics_source_record_poll_total", SOURCE)


def client_value(samples: Samples, name: str, client_id: str, connector: str,
                 **more: str) -> float:
    labels = {"client_id": client_id, "connector": connector, "task": "0", **more}
    return samples[name][tuple(sorted(labels.items()))]


CONSUMER = "kafka_consumer_consumer_fetch_manager_metrics_"
PRODUCER = "kafka_producer_producer_metrics_"


def test_task_clients_metrics(pipeline: httpx.Client) -> None:
    consumer, producer = f"connector-consumer-{SINK}-0", f"connector-producer-{SOURCE}-0"

    def totals(samples: Samples) -> tuple[float, float]:
        return (client_value(samples, CONSUMER + "records_consumed_total", consumer, SINK),
                client_value(samples, PRODUCER + "record_send_total", producer, SOURCE))

    # The producer's first statistics come one interval (1 s) after it starts.
    def both_reported() -> Samples | None:
        samples = scrape(pipeline)
        return samples if all(totals(samples)) else None

    consumed, sent = totals(wait_until(both_reported, timeout=15, ignore=(KeyError,),
                                       message="both clients' statistics"))

    def both_moved() -> Samples | None:
        samples = scrape(pipeline)
        now_consumed, now_sent = totals(samples)
        return samples if now_consumed > consumed and now_sent > sent else None

    second = wait_until(both_moved, timeout=15, message="the client totals moving")
    # Consumer lag: per partition of the sink's topic, and the largest of them.
    lags = {labels: value for labels, value in second[CONSUMER + "records_lag"].items()
            if ("connector", SINK) in labels}
    assert list(lags) == [tuple(sorted({"client_id": consumer, "connector": SINK,
                                        "task": "0", "topic": TOPIC,
                                        "partition": "0"}.items()))]
    lag = next(iter(lags.values()))
    assert lag >= 0
    assert client_value(second, CONSUMER + "records_lag_max", consumer, SINK) == lag
    # The consumer builds no statistics by default, and only they know the bytes.
    assert CONSUMER + "bytes_consumed_total" not in second
    assert client_value(second, PRODUCER + "outgoing_byte_total", producer, SOURCE) > 0
    latency = client_value(second, PRODUCER + "request_latency_avg", producer, SOURCE)
    assert latency != latency or latency > 0  # NaN: no request answered in the interval
    # Each task reports its own clients only: the sink's one producer is its dead letter
    # queue's, which sent the record that is not JSON; no consumer series for the source.
    dlq_producer = f"connector-dlq-producer-{SINK}-0"

    def dlq_reported() -> Samples | None:
        # Its statistics are served after a commit attempt, one interval after it started.
        samples = scrape(pipeline)
        sent = client_value(samples, PRODUCER + "record_send_total", dlq_producer, SINK)
        return samples if sent else None

    third = wait_until(dlq_reported, timeout=15, ignore=(KeyError,),
                       message="the dead letter queue's send")
    assert client_value(third, PRODUCER + "record_send_total", dlq_producer, SINK) == 1
    assert [dict(labels)["client_id"] for labels in third[PRODUCER + "record_send_total"]
            if ("connector", SINK) in labels] == [dlq_producer]
    assert not any(("connector", SOURCE) in labels
                   for labels in second[CONSUMER + "records_consumed_total"])


def test_switched_off_is_404(tmp_path: Path, kafka_bootstrap: str) -> None:
    worker = start_worker(tmp_path, kafka_bootstrap, {"rest.metrics.enabled": "false"})
    try:
        response = worker.client.get("/metrics")
        assert response.status_code == 404
        assert "rest.metrics.enabled=false" in response.json()["message"]
    finally:
        worker.close()
