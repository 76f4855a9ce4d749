"""Streaming reads: Spark-managed offsets in a checkpoint, ``trigger(availableNow=True)``
runs that each see exactly the records new since the previous run, and
``maxOffsetsPerTrigger`` micro-batches."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession

from spark_kafka_source.reader import read_kafka_stream
from tests.integration.spark._kafka import Record, produce
from tests.support import create_topic

pytestmark = pytest.mark.integration

QUERY_TIMEOUT_S = 120


def records(topic: str, values: range) -> list[Record]:
    return [Record(topic, n % 2, None, b"v%d" % n, 1_767_225_600_000 + n) for n in values]


def run_available_now(spark: SparkSession, options: dict[str, Any], checkpoint: Path
                      ) -> list[list[tuple[int, int, bytes]]]:
    """One availableNow run; the (partition, offset, value) rows of each micro-batch."""
    batches: list[list[tuple[int, int, bytes]]] = []

    def collect(batch: DataFrame, batch_id: int) -> None:
        batches.append(sorted((r.partition, r.offset, r.value) for r in
                              batch.select("partition", "offset", "value").collect()))

    query = (read_kafka_stream(spark, **options).writeStream.foreachBatch(collect)
             .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
    try:
        assert query.awaitTermination(QUERY_TIMEOUT_S), "availableNow run did not finish"
    finally:
        query.stop()
    assert query.exception() is None, query.exception()
    return [b for b in batches if b]


def test_available_now_runs_read_exactly_the_new_records(
        spark: SparkSession, kafka_bootstrap: str, kafka_admin: Any, tmp_path: Path,
        unique_topic: Callable[..., str]) -> None:
    topic = create_topic(kafka_admin, unique_topic("stream"), partitions=2)
    produce(kafka_bootstrap, records(topic, range(6)))
    options = {"kafka.bootstrap.servers": kafka_bootstrap, "subscribe": topic,
               "startingOffsets": "earliest"}
    checkpoint = tmp_path / "checkpoint"

    first = run_available_now(spark, options, checkpoint)
    assert [row for batch in first for row in batch] == sorted(
        (n % 2, n // 2, b"v%d" % n) for n in range(6))

    produce(kafka_bootstrap, records(topic, range(6, 9)))
    second = run_available_now(spark, options, checkpoint)
    assert [row for batch in second for row in batch] == sorted(
        (n % 2, n // 2, b"v%d" % n) for n in range(6, 9))

    assert run_available_now(spark, options, checkpoint) == []  # nothing new


def test_max_offsets_per_trigger_splits_micro_batches(
        spark: SparkSession, kafka_bootstrap: str, kafka_admin: Any, tmp_path: Path,
        unique_topic: Callable[..., str]) -> None:
    topic = create_topic(kafka_admin, unique_topic("limited"), partitions=2)
    produce(kafka_bootstrap, records(topic, range(10)))
    batches = run_available_now(spark, {"kafka.bootstrap.servers": kafka_bootstrap,
                                        "subscribe": topic, "startingOffsets": "earliest",
                                        "maxOffsetsPerTrigger": 4}, tmp_path / "checkpoint")
    assert [len(b) for b in batches] == [4, 4, 2]
    assert sorted(row for b in batches for row in b) == sorted(
        (n % 2, n // 2, b"v%d" % n) for n in range(10))


def test_default_start_is_latest(spark: SparkSession, kafka_bootstrap: str, kafka_admin: Any,
                                 tmp_path: Path, unique_topic: Callable[..., str]) -> None:
    topic = create_topic(kafka_admin, unique_topic("latest"))
    produce(kafka_bootstrap, records(topic, range(0, 6, 2)))  # before the query: not read
    options = {"kafka.bootstrap.servers": kafka_bootstrap, "subscribe": topic}
    checkpoint = tmp_path / "checkpoint"
    assert run_available_now(spark, options, checkpoint) == []
    produce(kafka_bootstrap, records(topic, range(6, 10, 2)))
    assert run_available_now(spark, options, checkpoint) == [[(0, 3, b"v6"), (0, 4, b"v8")]]
