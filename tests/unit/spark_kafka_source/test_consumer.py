"""Reading one range with a scripted consumer: where it stops, what it yields, errors."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import confluent_kafka
import pyarrow as pa
import pytest
from confluent_kafka import KafkaError, Message

from spark_kafka_source.consumer import (
    KafkaReadError,
    arrow_schema,
    consumer_config,
    read_range,
)
from spark_kafka_source.kafka_source import kafka_schema
from tests.unit.spark_kafka_source._fakes import message

SCHEMA = arrow_schema(kafka_schema())


class ScriptedConsumer:
    """Returns one scripted list of messages per ``consume()``, then nothing."""

    instances: list[ScriptedConsumer] = []
    script: list[list[Message]] = []

    def __init__(self, config: dict[str, Any]) -> None:
        self.config = config
        self.assigned: list[Any] = []
        self.closed = False
        self._batches: Iterator[list[Message]] = iter(list(type(self).script))
        type(self).instances.append(self)

    def assign(self, partitions: list[Any]) -> None:
        self.assigned = partitions

    def consume(self, num_messages: int, timeout: float) -> list[Message]:
        return next(self._batches, [])

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def consumer(monkeypatch: pytest.MonkeyPatch) -> type[ScriptedConsumer]:
    ScriptedConsumer.instances = []
    ScriptedConsumer.script = []
    monkeypatch.setattr(confluent_kafka, "Consumer", ScriptedConsumer)
    return ScriptedConsumer


def records(*offsets: int) -> list[Message]:
    return [message(o, key=f"k{o}".encode(), value=f"v{o}".encode()) for o in offsets]


def read(start: int, end: int, **kwargs: Any) -> list[pa.RecordBatch]:
    config = consumer_config({"bootstrap.servers": "k:9092"}, group_id_prefix="p",
                             fail_on_data_loss=True)
    return list(read_range(config, "t", 3, start, end, SCHEMA,
                           poll_timeout_ms=kwargs.pop("poll_timeout_ms", 60_000), **kwargs))


def offsets(batches: list[pa.RecordBatch]) -> list[int]:
    return [o for b in batches for o in b.column("offset").to_pylist()]


def test_consumer_config_owns_commits_eof_and_reset() -> None:
    config = consumer_config({"bootstrap.servers": "k", "security.protocol": "SSL"},
                             group_id_prefix="jobs", fail_on_data_loss=True)
    assert config["group.id"].startswith("jobs-")
    assert config["security.protocol"] == "SSL"
    assert (config["enable.auto.commit"], config["enable.partition.eof"]) == (False, True)
    assert config["auto.offset.reset"] == "error"
    tolerant = consumer_config({"bootstrap.servers": "k", "group.id": "mine"},
                               group_id_prefix="jobs", fail_on_data_loss=False)
    assert (tolerant["group.id"], tolerant["auto.offset.reset"]) == ("mine", "earliest")


def test_consumer_config_fetches_again_soon_after_a_full_queue_unless_told_otherwise() -> None:
    # librdkafka's own 1 s would idle a reader that drains its queue faster than that.
    assert consumer_config({"bootstrap.servers": "k"}, group_id_prefix="j",
                           fail_on_data_loss=True)["fetch.queue.backoff.ms"] == 100
    mine = consumer_config({"bootstrap.servers": "k", "fetch.queue.backoff.ms": "7"},
                           group_id_prefix="j", fail_on_data_loss=True)
    assert mine["fetch.queue.backoff.ms"] == "7"


def test_reads_until_the_last_offset_of_the_range(consumer: type[ScriptedConsumer]) -> None:
    consumer.script = [records(5, 6), records(7, 8, 9)]  # 8 and 9 are past the range
    batches = read(5, 8)
    assert offsets(batches) == [5, 6, 7]
    only = consumer.instances[0]
    assert [(p.topic, p.partition, p.offset) for p in only.assigned] == [("t", 3, 5)]
    assert only.closed


def test_rows_have_sparks_kafka_columns(consumer: type[ScriptedConsumer]) -> None:
    consumer.script = [[
        message(0, key=None, value=b"v", timestamp=(1, 1_700_000_000_123),
                headers=[("h", b"1"), ("n", None)]),
        message(1, key=b"k", value=None, timestamp=(2, 5), headers=[]),
        message(2, timestamp=(0, -1)),
    ]]
    (batch,) = read(0, 3)
    assert batch.schema.equals(SCHEMA)
    rows = batch.to_pylist()
    assert [(r["key"], r["value"], r["topic"], r["partition"]) for r in rows] == [
        (None, b"v", "t", 3), (b"k", None, "t", 3), (None, None, "t", 3)]
    assert [r["timestampType"] for r in rows] == [0, 1, -1]  # CreateTime, LogAppendTime, none
    stamps = batch.column("timestamp").cast(pa.int64()).to_pylist()
    assert stamps == [1_700_000_000_123_000, 5_000, None]
    assert rows[0]["headers"] == [{"key": "h", "value": b"1"}, {"key": "n", "value": None}]
    assert rows[1]["headers"] is None and rows[2]["headers"] is None


def test_partition_eof_ends_the_range_early(consumer: type[ScriptedConsumer]) -> None:
    consumer.script = [records(0, 1) + [message(error=KafkaError(KafkaError._PARTITION_EOF))]]
    assert offsets(read(0, 10)) == [0, 1]


def test_gaps_in_offsets_are_fine(consumer: type[ScriptedConsumer]) -> None:
    consumer.script = [records(0, 4), records(9)]  # compacted away in between
    assert offsets(read(0, 10)) == [0, 4, 9]


def test_batches_are_cut_at_batch_rows(consumer: type[ScriptedConsumer]) -> None:
    consumer.script = [records(0, 1, 2), records(3, 4)]
    batches = read(0, 5, batch_rows=3)
    assert [b.num_rows for b in batches] == [3, 2]


def test_empty_range_opens_no_consumer(consumer: type[ScriptedConsumer]) -> None:
    assert read(4, 4) == []
    assert consumer.instances == []


def test_missing_records_fail_with_the_data_loss_hint(consumer: type[ScriptedConsumer]) -> None:
    consumer.script = [[message(error=KafkaError(KafkaError._AUTO_OFFSET_RESET))]]
    with pytest.raises(KafkaReadError, match="no longer in Kafka.*failOnDataLoss=false"):
        read(0, 10)
    assert consumer.instances[0].closed


def test_transient_errors_are_retried_fatal_ones_raise(consumer: type[ScriptedConsumer]) -> None:
    consumer.script = [[message(error=KafkaError(KafkaError._TRANSPORT))], records(0)]
    assert offsets(read(0, 1)) == [0]
    consumer.script = [[message(error=KafkaError(KafkaError._FATAL, fatal=True))]]
    with pytest.raises(KafkaReadError, match="reading t-3"):
        read(0, 1)


def test_silence_past_the_poll_timeout_fails(consumer: type[ScriptedConsumer]) -> None:
    consumer.script = [records(0)]
    with pytest.raises(KafkaReadError, match=r"kafkaConsumer.pollTimeoutMs.*\[0, 5\)"):
        read(0, 5, poll_timeout_ms=1)
