"""A PySpark Python Data Source for Kafka topics, backed by confluent-kafka.

``spark-sql-kafka`` (Spark's ``format("kafka")``) is a jar that cannot always be
downloaded; this source reads the same columns with the same option names (see
:mod:`spark_kafka_source.options`), so a job switches by changing the format — or lets
:func:`spark_kafka_source.reader.read_kafka` choose. Register it once per session::

    spark.dataSource.register(KafkaDataSource)
    df = (spark.read.format("connect_kafka")
          .option("kafka.bootstrap.servers", "kafka:9092").option("subscribe", "orders")
          .option("startingOffsets", '{"orders": {"0": 100}}')
          .option("endingOffsets", '{"orders": {"0": 200}}').load())

**Batch**: offsets are resolved on the driver into one ``[start, end)`` per partition
(:func:`resolve_offset_ranges`); each non-empty range is one Spark task that reads it with
an assigned consumer. Nothing is committed to Kafka.

**Streaming**: Spark owns the offsets (its checkpoint); they are
``{"topic": {"partition": offset}}`` dicts. ``startingOffsets`` (default ``latest``) gives
the first, each micro-batch ends at the current end offsets, capped by
``maxOffsetsPerTrigger``; ``trigger(availableNow=True)`` reads up to the end offsets seen
when the query starts. Topics matched by ``subscribePattern`` and partitions added later
are read from their earliest offset; a ``connector``'s topics are looked up once per query.

End offsets come from the partition's high watermark, which the Tansu test broker counts
in produce *batches* (docs/architecture.md §6): there, ``latest`` is exact only when each produce
request held one record. The reader does not correct for it; against Apache Kafka it is
exact.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    InputPartition,
)
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from spark_kafka_source.consumer import arrow_schema, consumer_config, read_range
from spark_kafka_source.offsets import (
    ClusterLookups,
    KafkaLookups,
    KafkaSourceError,
    OffsetRange,
    TopicPartitionKey,
    offsets_from_json_dict,
    offsets_to_json_dict,
    ranges_to_json,
    rate_limit,
    resolve_offset_ranges,
    resolve_spec,
    select_topics,
    topic_partitions,
)
from spark_kafka_source.options import KafkaSourceOptions, Subscription, parse_options

__all__ = [
    "SHORT_NAME",
    "KafkaBatchReader",
    "KafkaDataSource",
    "KafkaInputPartition",
    "KafkaStreamReader",
    "OffsetRange",
    "kafka_schema",
    "ranges_to_json",
    "resolve_offset_ranges",
]

#: The format name: ``spark.read.format("connect_kafka")``.
SHORT_NAME = "connect_kafka"


def kafka_schema(include_headers: bool = True) -> StructType:
    """The columns of Spark's Kafka source (``headers`` only with ``includeHeaders``)."""
    fields = [
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", TimestampType()),
        StructField("timestampType", IntegerType()),
    ]
    if include_headers:
        fields.append(StructField("headers", ArrayType(StructType([
            StructField("key", StringType()), StructField("value", BinaryType())]))))
    return StructType(fields)


@dataclass
class KafkaInputPartition(InputPartition):
    """One Spark task: the offsets ``[start, end)`` of one topic-partition."""

    topic: str
    partition: int
    start: int
    end: int


class _RangeReader:
    """``read()`` shared by the batch and the stream reader."""

    def __init__(self, options: KafkaSourceOptions, schema: StructType,
                 lookups: KafkaLookups | None) -> None:
        expected = kafka_schema(options.include_headers)
        if schema != expected:
            raise ValueError("the connect_kafka source has a fixed schema (Spark's Kafka "
                             f"columns): {expected.simpleString()}; got {schema.simpleString()}")
        self._options = options
        self._schema = schema
        self._lookups: KafkaLookups = lookups if lookups is not None else ClusterLookups(options)

    def read(self, partition: InputPartition) -> Iterator[Any]:
        """Records of the partition's range, as Arrow record batches."""
        if not isinstance(partition, KafkaInputPartition):
            return iter(())  # Spark's placeholder when there is nothing to read
        config = consumer_config(self._options.client_config,
                                 group_id_prefix=self._options.group_id_prefix,
                                 fail_on_data_loss=self._options.fail_on_data_loss)
        return read_range(config, partition.topic, partition.partition, partition.start,
                          partition.end, arrow_schema(self._schema),
                          poll_timeout_ms=self._options.poll_timeout_ms)


class KafkaBatchReader(_RangeReader, DataSourceReader):
    """Batch reads: one input partition per topic-partition with a non-empty range."""

    def ranges(self) -> list[OffsetRange]:
        """Every subscribed partition's resolved range (empty ones included)."""
        return resolve_offset_ranges(self._options, lookups=self._lookups)

    def partitions(self) -> list[InputPartition]:
        try:
            return [KafkaInputPartition(r.topic, r.partition, r.start, r.end)
                    for r in self.ranges() if not r.is_empty]
        finally:
            self._lookups.close()


class KafkaStreamReader(_RangeReader, DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batch reads with Spark-managed offsets ``{"topic": {"partition": offset}}``."""

    def __init__(self, options: KafkaSourceOptions, schema: StructType,
                 lookups: KafkaLookups | None = None) -> None:
        super().__init__(options, schema, lookups)
        self._subscription: Subscription | None = None
        self._target: dict[TopicPartitionKey, int] | None = None

    def _partitions(self) -> list[TopicPartitionKey]:
        """The subscribed partitions now (new topics and partitions included)."""
        if self._subscription is None:
            subscription = self._options.subscription
            if subscription.kind == "connector":
                # Looked up once: a running query keeps reading the topics it started with.
                topics = select_topics(subscription, self._lookups, require_existing=False)
                subscription = Subscription("subscribe", topics=tuple(topics))
            self._subscription = subscription
        return topic_partitions(select_topics(self._subscription, self._lookups,
                                              require_existing=False))

    def _with_earliest(self, offsets: dict[TopicPartitionKey, int],
                       partitions: Sequence[TopicPartitionKey]) -> dict[TopicPartitionKey, int]:
        """``offsets`` plus the earliest offset of each partition it lacks (new ones)."""
        new = [tp for tp in partitions if tp not in offsets]
        return {**offsets, **self._lookups.offsets(new, "earliest")} if new else offsets

    def initialOffset(self) -> dict:
        partitions = self._partitions()
        start = resolve_spec("startingOffsets", self._options.starting, partitions,
                             self._lookups)
        return offsets_to_json_dict(start)

    def getDefaultReadLimit(self) -> ReadLimit:
        limit = self._options.max_offsets_per_trigger
        return ReadMaxRows(limit) if limit else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        # availableNow reads what exists now and no more: remember where that ends.
        self._target = dict(self._lookups.offsets(self._partitions(), "latest"))

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        partitions = self._partitions()
        begin = self._with_earliest(offsets_from_json_dict(start), partitions)
        latest = dict(self._lookups.offsets(partitions, "latest"))
        if self._target is not None:
            latest = {tp: min(end, self._target.get(tp, begin[tp]))
                      for tp, end in latest.items()}
        for tp, end in latest.items():
            if end < begin[tp] and self._options.fail_on_data_loss:
                raise KafkaSourceError(
                    f"the end offset of {tp[0]}-{tp[1]} went back from {begin[tp]} to {end} "
                    "(topic re-created or records deleted?); set failOnDataLoss=false to go on")
        if isinstance(limit, ReadMaxRows):
            latest = rate_limit(begin, latest, limit.max_rows)
        return offsets_to_json_dict(latest)

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        stop = offsets_from_json_dict(end)
        begin = self._with_earliest(offsets_from_json_dict(start), list(stop))
        return [KafkaInputPartition(topic, partition, begin[(topic, partition)], offset)
                for (topic, partition), offset in sorted(stop.items())
                if offset > begin[(topic, partition)]]

    def commit(self, end: dict) -> None:
        """Nothing to do: Spark's checkpoint holds the offsets; none go to Kafka."""

    def stop(self) -> None:
        self._lookups.close()


class KafkaDataSource(DataSource):
    """``format("connect_kafka")``: Spark's Kafka source columns and option names."""

    @classmethod
    def name(cls) -> str:
        return SHORT_NAME

    def schema(self) -> StructType:
        # Spark asks for the schema at load(): bad options fail here, before any read.
        return kafka_schema(parse_options(self.options).include_headers)

    def reader(self, schema: StructType) -> DataSourceReader:
        return KafkaBatchReader(parse_options(self.options, "batch"), schema, None)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return KafkaStreamReader(parse_options(self.options, "stream"), schema)
