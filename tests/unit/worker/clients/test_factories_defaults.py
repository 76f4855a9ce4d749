"""worker.clients.factories: the task clients' defaults that differ from librdkafka's."""

from __future__ import annotations

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient

from worker.clients import factories as kafka_clients
from worker.config.worker_config import WorkerConfig


def worker_config(**props: str) -> WorkerConfig:
    return WorkerConfig({"bootstrap.servers": "127.0.0.1:1", **props})


def configs(worker: WorkerConfig, connector: dict[str, str] | None = None
            ) -> dict[str, dict[str, str]]:
    connector = connector or {}
    return {
        "producer": kafka_clients.producer_config(worker, connector, "p", statistics=True),
        "consumer": kafka_clients.consumer_config(worker, connector, "c", "c-0"),
        "admin": dict(kafka_clients.admin_config(worker, connector)),
    }


def test_task_clients_push_no_client_metrics_to_the_broker_by_default() -> None:
    for role, conf in configs(worker_config()).items():
        assert conf["enable.metrics.push"] == "false", role


def test_librdkafka_takes_the_default() -> None:
    # A key this librdkafka did not know would fail here, as at a task's start.
    built = configs(worker_config())
    Producer(built["producer"]).flush(0)
    Consumer(built["consumer"]).close()
    AdminClient(built["admin"])


def test_a_worker_key_turns_the_push_back_on() -> None:
    worker = worker_config(**{"producer.enable.metrics.push": "true",
                              "consumer.enable.metrics.push": "true",
                              "admin.enable.metrics.push": "true"})
    for role, conf in configs(worker).items():
        assert conf["enable.metrics.push"] == "true", role


def test_a_connector_override_turns_the_push_back_on() -> None:
    override = {f"{role}.override.enable.metrics.push": "true"
                for role in ("producer", "consumer", "admin")}
    for role, conf in configs(worker_config(), override).items():
        assert conf["enable.metrics.push"] == "true", role


def test_sink_consumers_fetch_again_a_tenth_of_a_second_after_a_full_queue() -> None:
    # librdkafka's own 1 s kept a sink that drains its queue quickly idle (150k → 560k
    # records/s in tests/bench/bench_pipeline.py).
    assert configs(worker_config())["consumer"]["fetch.queue.backoff.ms"] == "100"


def test_a_worker_key_or_a_connector_override_sets_the_fetch_queue_backoff() -> None:
    worker = worker_config(**{"consumer.fetch.queue.backoff.ms": "20"})
    assert configs(worker)["consumer"]["fetch.queue.backoff.ms"] == "20"
    override = {"consumer.override.fetch.queue.backoff.ms": "5"}
    assert configs(worker, override)["consumer"]["fetch.queue.backoff.ms"] == "5"
