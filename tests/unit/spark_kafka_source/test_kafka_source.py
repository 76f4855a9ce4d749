"""The data source and its readers with a fake cluster (no JVM): schema, batch partitions,
Spark-managed streaming offsets, rate limits and availableNow."""

from __future__ import annotations

import json
import pickle
from typing import Any

import pytest
from pyspark.sql.datasource import InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows
from pyspark.sql.types import StringType, StructField, StructType

from spark_kafka_source.kafka_source import (
    KafkaBatchReader,
    KafkaDataSource,
    KafkaInputPartition,
    KafkaStreamReader,
    kafka_schema,
)
from spark_kafka_source.offsets import ClusterLookups, KafkaSourceError
from spark_kafka_source.options import parse_options
from tests.unit.spark_kafka_source._fakes import FakeLookups

BOOTSTRAP = {"kafka.bootstrap.servers": "k:9092"}


def cluster() -> FakeLookups:
    return FakeLookups(topic_partitions={"a": 2, "b": 1},
                       earliest={("a", 0): 2}, latest={("a", 0): 10, ("a", 1): 4, ("b", 0): 0},
                       connectors={"files": ["a"]})


def stream(lookups: FakeLookups, **options: Any) -> KafkaStreamReader:
    parsed = parse_options({**BOOTSTRAP, **options}, "stream")
    return KafkaStreamReader(parsed, kafka_schema(), lookups)


def test_name_and_schema() -> None:
    assert KafkaDataSource.name() == "connect_kafka"
    schema = KafkaDataSource({**BOOTSTRAP, "subscribe": "a"}).schema()
    assert schema.simpleString() == (
        "struct<key:binary,value:binary,topic:string,partition:int,offset:bigint,"
        "timestamp:timestamp,timestampType:int,headers:array<struct<key:string,value:binary>>>")
    without = KafkaDataSource({**BOOTSTRAP, "subscribe": "a", "includeheaders": "false"})
    assert without.schema().fieldNames()[-1] == "timestampType"


def test_bad_options_fail_in_schema_before_any_read() -> None:
    with pytest.raises(ValueError, match="exactly one of the options subscribe"):
        KafkaDataSource(dict(BOOTSTRAP)).schema()
    with pytest.raises(ValueError, match="endingOffsets is not allowed in streaming"):
        KafkaDataSource({**BOOTSTRAP, "subscribe": "a", "endingoffsets": "latest"}).streamReader(
            kafka_schema())


def test_a_user_schema_is_refused() -> None:
    source = KafkaDataSource({**BOOTSTRAP, "subscribe": "a"})
    with pytest.raises(ValueError, match="fixed schema"):
        source.reader(StructType([StructField("value", StringType())]))


def test_batch_partitions_skip_empty_ranges() -> None:
    lookups = cluster()
    reader = KafkaBatchReader(parse_options({**BOOTSTRAP, "subscribe": "a,b"}, "batch"),
                              kafka_schema(), lookups)
    assert reader.partitions() == [KafkaInputPartition("a", 0, 2, 10),
                                   KafkaInputPartition("a", 1, 0, 4)]
    assert lookups.closed == 1


def test_placeholder_partition_reads_nothing() -> None:
    reader = KafkaBatchReader(parse_options({**BOOTSTRAP, "subscribe": "a"}, "batch"),
                              kafka_schema(), cluster())
    assert list(reader.read(InputPartition(None))) == []


def test_readers_and_partitions_pickle_without_live_clients() -> None:
    options = parse_options({**BOOTSTRAP, "subscribe": "a"}, "stream")
    reader = KafkaStreamReader(options, kafka_schema())
    assert isinstance(reader._lookups, ClusterLookups)
    reader._lookups._admin = object()  # as if a look-up had run
    copy = pickle.loads(pickle.dumps(reader))
    assert copy._lookups._admin is None
    partition = KafkaInputPartition("a", 0, 1, 2)
    assert pickle.loads(pickle.dumps(partition)) == partition


def test_initial_offset_defaults_to_latest() -> None:
    assert stream(cluster(), subscribe="a,b").initialOffset() == {
        "a": {"0": 10, "1": 4}, "b": {"0": 0}}
    assert stream(cluster(), subscribe="a", startingOffsets="earliest").initialOffset() == {
        "a": {"0": 2, "1": 0}}
    assert stream(cluster(), subscribe="a",
                  startingOffsets='{"a": {"0": 5, "1": -1}}').initialOffset() == {
        "a": {"0": 5, "1": 4}}


def test_latest_offset_and_partitions() -> None:
    lookups = cluster()
    reader = stream(lookups, subscribe="a", startingOffsets="earliest")
    start = reader.initialOffset()
    end = reader.latestOffset(start, ReadAllAvailable())
    assert end == {"a": {"0": 10, "1": 4}}
    assert reader.partitions(start, end) == [KafkaInputPartition("a", 0, 2, 10),
                                             KafkaInputPartition("a", 1, 0, 4)]
    assert reader.latestOffset(end, ReadAllAvailable()) == end  # nothing new: same offsets
    assert reader.partitions(end, end) == []
    lookups.latest[("a", 1)] = 6
    assert reader.partitions(end, reader.latestOffset(end, ReadAllAvailable())) == [
        KafkaInputPartition("a", 1, 4, 6)]


def test_max_offsets_per_trigger_is_the_default_read_limit() -> None:
    assert stream(cluster(), subscribe="a").getDefaultReadLimit() == ReadAllAvailable()
    reader = stream(cluster(), subscribe="a", maxOffsetsPerTrigger="6")
    assert reader.getDefaultReadLimit() == ReadMaxRows(6)
    start = {"a": {"0": 2, "1": 0}}  # 8 + 4 available
    assert reader.latestOffset(start, ReadMaxRows(6)) == {"a": {"0": 6, "1": 2}}
    # The engine may ask for everything (e.g. at the end of availableNow): obey it.
    assert reader.latestOffset(start, ReadAllAvailable()) == {"a": {"0": 10, "1": 4}}


def test_available_now_stops_at_the_offsets_seen_when_it_started() -> None:
    lookups = cluster()
    reader = stream(lookups, subscribe="a", startingOffsets="earliest")
    start = reader.initialOffset()
    reader.prepareForTriggerAvailableNow()
    lookups.latest[("a", 0)] = 99  # written after the query started
    end = reader.latestOffset(start, ReadAllAvailable())
    assert end == {"a": {"0": 10, "1": 4}}
    assert reader.latestOffset(end, ReadAllAvailable()) == end


def test_new_partitions_and_topics_start_at_earliest() -> None:
    lookups = cluster()
    reader = stream(lookups, subscribePattern="a|c")
    start = reader.initialOffset()
    assert start == {"a": {"0": 10, "1": 4}}
    lookups.topic_partitions.update({"a": 3, "c": 1})
    lookups.earliest.update({("a", 2): 1, ("c", 0): 0})
    lookups.latest.update({("a", 2): 3, ("c", 0): 2})
    end = reader.latestOffset(start, ReadAllAvailable())
    assert end == {"a": {"0": 10, "1": 4, "2": 3}, "c": {"0": 2}}
    assert reader.partitions(start, end) == [KafkaInputPartition("a", 2, 1, 3),
                                             KafkaInputPartition("c", 0, 0, 2)]


def test_connector_topics_are_looked_up_once_per_query() -> None:
    lookups = cluster()
    reader = stream(lookups, connector="files", **{"connect.url": "http://connect:8083"})
    start = reader.initialOffset()
    lookups.connectors["files"] = ["a", "b"]
    assert reader.latestOffset(start, ReadAllAvailable()) == {"a": {"0": 10, "1": 4}}
    assert sum(1 for c in lookups.calls if c[0] == "connector_topics") == 1


def test_offsets_going_back_are_data_loss() -> None:
    lookups = cluster()
    reader = stream(lookups, subscribe="a")
    start = reader.initialOffset()
    lookups.latest[("a", 0)] = 3
    with pytest.raises(KafkaSourceError, match="a-0 went back from 10 to 3"):
        reader.latestOffset(start, ReadAllAvailable())
    tolerant = stream(lookups, subscribe="a", failOnDataLoss="false")
    end = tolerant.latestOffset(start, ReadAllAvailable())
    assert end == {"a": {"0": 3, "1": 4}}
    assert tolerant.partitions(start, end) == []


def test_offsets_are_json_text_stable() -> None:
    # Spark compares offsets as JSON text: the same offsets must serialise identically.
    reader = stream(cluster(), subscribe="b,a")
    first = reader.initialOffset()
    again = reader.latestOffset(json.loads(json.dumps(first)), ReadAllAvailable())
    assert json.dumps(again) == json.dumps(first)
