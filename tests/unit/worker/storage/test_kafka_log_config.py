"""worker.storage.kafka.log: the internal topics' consumer starts from the worker's reader
defaults (worker.clients.consumer_defaults), which the worker's consumer settings override."""

from __future__ import annotations

from worker.storage.kafka.log import KafkaBasedLog


def _log(consumer_config: dict[str, str]) -> KafkaBasedLog:
    return KafkaBasedLog("t", producer_config={}, consumer_config=consumer_config,
                         admin_config={}, on_record=lambda record: None)


def test_reading_an_internal_topic_to_its_end_does_not_stall_on_a_full_queue() -> None:
    # librdkafka's own 1 s would pause a read-to-end of a long offsets topic every
    # 100,000 records.
    config = _log({"client.id": "c"})._consumer_config
    assert config["fetch.queue.backoff.ms"] == "100"
    assert config["fetch.wait.max.ms"] == 50


def test_the_workers_consumer_settings_win() -> None:
    config = _log({"client.id": "c", "fetch.queue.backoff.ms": "5"})._consumer_config
    assert config["fetch.queue.backoff.ms"] == "5"
