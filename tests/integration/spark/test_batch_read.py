"""Batch reads through the ``connect_kafka`` data source against the session's Kafka.

Records are produced one per request (see ``_kafka.py``), so ``latest`` offsets are record
offsets on the Tansu test broker too.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_kafka_source.kafka_source import (
    KafkaDataSource,
    ranges_to_json,
    resolve_offset_ranges,
)
from spark_kafka_source.offsets import OffsetRange
from spark_kafka_source.reader import native_kafka_available, read_kafka
from tests.integration.spark._kafka import Record, produce
from tests.support import create_topic

pytestmark = pytest.mark.integration

BASE_TS = 1_767_225_600_000  # 2026-01-01T00:00:00Z


def records_for(topics: list[str], per_partition: int = 4) -> list[Record]:
    """Distinct records for partitions 0 and 1 of each topic: some without key or headers."""
    records = []
    for t, topic in enumerate(topics):
        for partition in (0, 1):
            for i in range(per_partition):
                n = (t * 2 + partition) * 100 + i
                records.append(Record(
                    topic, partition, key=None if i == 1 else f"key-{n}".encode(),
                    value=json.dumps({"n": n}).encode(), timestamp_ms=BASE_TS + n,
                    headers=() if i == 2 else (("source", f"s{n}".encode()), ("i", b"%d" % i))))
    return records


def rows(df: DataFrame) -> list[tuple[Any, ...]]:
    """The rows as comparable tuples, ordered by topic, partition and offset."""
    selected = df.select("topic", "partition", "offset", "key", "value",
                         F.unix_millis("timestamp").alias("ts"), "timestampType", "headers")
    return sorted(
        (r.topic, r.partition, r.offset, r.key, r.value, r.ts, r.timestampType,
         None if r.headers is None else tuple((h.key, h.value) for h in r.headers))
        for r in selected.collect())


def expected(records: list[Record], ranges: dict[tuple[str, int], tuple[int, int]]
             ) -> list[tuple[Any, ...]]:
    return sorted(
        (r.topic, r.partition, r.offset, r.key, r.value, r.timestamp_ms, 0, r.headers or None)
        for r in records
        if ranges[(r.topic, r.partition)][0] <= r.offset < ranges[(r.topic, r.partition)][1])


@pytest.fixture
def two_topics(kafka_bootstrap: str, kafka_admin: Any,
               unique_topic: Callable[..., str]) -> tuple[list[str], list[Record]]:
    topics = [create_topic(kafka_admin, unique_topic(f"spark-{n}"), partitions=2)
              for n in ("a", "b")]
    return topics, produce(kafka_bootstrap, records_for(topics))


def test_the_jar_is_absent_so_connect_kafka_is_used(spark: SparkSession) -> None:
    assert not native_kafka_available(spark)
    # The check itself works: a class the JVM does have is found.
    assert native_kafka_available(spark, "org.apache.spark.sql.SparkSession")


def test_exact_ranges_across_topics_and_partitions(
        spark: SparkSession, kafka_bootstrap: str,
        two_topics: tuple[list[str], list[Record]]) -> None:
    (a, b), records = two_topics
    options = {"kafka.bootstrap.servers": kafka_bootstrap, "subscribe": f"{a},{b}",
               "startingOffsets": {a: {"0": 1, "1": -2}, b: {"0": 0, "1": 2}},
               "endingOffsets": {a: {"0": 3, "1": -1}, b: {"0": -1, "1": 3}}}
    got = rows(read_kafka(spark, **options))
    want = expected(records, {(a, 0): (1, 3), (a, 1): (0, 4), (b, 0): (0, 4), (b, 1): (2, 3)})
    assert len(want) == 11
    assert got == want
    # Records without headers have null headers, as in Spark's own source.
    assert any(row[-1] is None for row in got) and any(row[3] is None for row in got)


def test_recorded_ranges_read_the_same_rows_again(
        spark: SparkSession, kafka_bootstrap: str,
        two_topics: tuple[list[str], list[Record]]) -> None:
    (a, b), records = two_topics
    options = {"kafka.bootstrap.servers": kafka_bootstrap, "subscribe": f"{b},{a}"}
    ranges = resolve_offset_ranges(options)
    assert ranges == [OffsetRange(t, p, 0, 4) for t in (a, b) for p in (0, 1)]
    starting, ending = ranges_to_json(ranges)
    assert json.loads(ending) == {a: {"0": 4, "1": 4}, b: {"0": 4, "1": 4}}

    first = rows(read_kafka(spark, **options, startingOffsets=starting, endingOffsets=ending))
    assert first == expected(records, {(r.topic, r.partition): (0, 4) for r in records})
    produce(kafka_bootstrap, [Record(a, 0, b"late", b"late", BASE_TS)])  # after the plan
    again = rows(read_kafka(spark, **options, startingOffsets=starting, endingOffsets=ending))
    assert again == first
    assert len(rows(read_kafka(spark, **options))) == len(first) + 1  # "latest" moved on


def test_counts_and_aggregations_without_collecting_records(
        spark: SparkSession, kafka_bootstrap: str,
        two_topics: tuple[list[str], list[Record]]) -> None:
    (a, b), _ = two_topics
    df = read_kafka(spark, **{"kafka.bootstrap.servers": kafka_bootstrap,
                              "subscribe": f"{a},{b}"})
    assert df.count() == 16
    per_partition = {(r.topic, r.partition): (r["count"], r["max_n"]) for r in
                     df.groupBy("topic", "partition").agg(
                         F.count("*").alias("count"),
                         F.max(F.get_json_object(F.col("value").cast("string"), "$.n")
                               .cast("int")).alias("max_n")).collect()}
    assert per_partition == {(a, 0): (4, 3), (a, 1): (4, 103), (b, 0): (4, 203),
                             (b, 1): (4, 303)}


def test_subscribe_pattern_selects_matching_topics(
        spark: SparkSession, kafka_bootstrap: str, kafka_admin: Any,
        unique_topic: Callable[..., str]) -> None:
    prefix = unique_topic("pattern")
    wanted = [create_topic(kafka_admin, f"{prefix}-x-{n}") for n in (1, 2)]
    other = create_topic(kafka_admin, f"{prefix}-y")
    produce(kafka_bootstrap, [Record(t, 0, None, t.encode(), BASE_TS)
                              for t in [*wanted, other, wanted[0]]])
    df = read_kafka(spark, **{"kafka.bootstrap.servers": kafka_bootstrap,
                              "subscribePattern": rf"{re.escape(prefix)}-x-\d+"})
    got = sorted((r.topic, r.offset) for r in df.select("topic", "offset").collect())
    assert got == [(wanted[0], 0), (wanted[0], 1), (wanted[1], 0)]


@pytest.mark.parametrize(("options", "match"), [
    ({"subscribe": "t", "subscribePattern": "t.*"}, "exactly one of the options subscribe"),
    ({"subscribe": "t", "startingOffsets": "latest"}, "startingOffsets can't be latest"),
    ({"subscribe": "t", "endingOffsets": '{"t": {"0": "x"}}'}, "offset of t-0 must be"),
    ({"subscribe": "t", "kafka.auto.offset.reset": "earliest"}, "kafka.auto.offset.reset"),
    ({"subscribe": "t", "minPartitions": "8"}, "minPartitions"),
])
def test_bad_options_fail_before_reading(spark: SparkSession, kafka_bootstrap: str,
                                         options: dict[str, str], match: str) -> None:
    options = {"kafka.bootstrap.servers": kafka_bootstrap, **options}
    with pytest.raises(ValueError, match=match):
        read_kafka(spark, **options)
    # The same checks run inside Spark when the format is used directly: at load(), or
    # for the batch-only rules when the query is planned (the source learns the mode then).
    spark.dataSource.register(KafkaDataSource)
    with pytest.raises(Exception, match=match):
        spark.read.format("connect_kafka").options(**options).load().count()


def test_cluster_errors_name_the_problem(spark: SparkSession, kafka_bootstrap: str,
                                         two_topics: tuple[list[str], list[Record]]) -> None:
    (a, _), _ = two_topics
    base = {"kafka.bootstrap.servers": kafka_bootstrap}
    with pytest.raises(Exception, match="topics not found in the cluster: no-such-topic"):
        read_kafka(spark, **base, subscribe=f"{a},no-such-topic").count()
    with pytest.raises(Exception, match="missing: .*-1"):
        read_kafka(spark, **base, subscribe=a, startingOffsets={a: {"0": 0}}).count()
    with pytest.raises(Exception, match="no.such.property"):
        read_kafka(spark, **base, subscribe=a, **{"kafka.no.such.property": "1"}).count()
