"""``read_kafka`` / ``read_kafka_stream``: Spark's ``format("kafka")`` when its jar is
there, else the ``connect_kafka`` Python data source — same options, same columns.

::

    df = read_kafka(spark, **{"kafka.bootstrap.servers": "kafka:9092",
                              "subscribe": "orders",
                              "startingOffsets": starting, "endingOffsets": ending})

Options are checked on the driver before anything is planned (a ValueError names the bad
option), whichever source is used; only the options both sources understand are
accepted, so a job behaves the same with and without the jar. For the native source,
``connector`` + ``connect.url`` are resolved to ``subscribe`` first (Spark does not know
Kafka Connect), and ``includeHeaders`` defaults to ``true`` so both give the same columns.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from spark_kafka_source.options import KafkaSourceOptions, Mode, normalize, parse_options

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger(__name__)

#: The class behind Spark's ``format("kafka")`` (in ``spark-sql-kafka-0-10``).
NATIVE_PROVIDER = "org.apache.spark.sql.kafka010.KafkaSourceProvider"
NATIVE_FORMAT = "kafka"

# Sessions that already have connect_kafka registered (weak: sessions come and go in tests).
_registered: weakref.WeakSet[Any] = weakref.WeakSet()


def native_kafka_available(spark: SparkSession, class_name: str = NATIVE_PROVIDER) -> bool:
    """Whether the JVM of ``spark`` can load ``class_name`` (Spark's Kafka provider).

    False when there is no JVM gateway (Spark Connect) or the lookup fails for any reason:
    the Python data source is always a safe fallback.
    """
    jvm = getattr(spark, "_jvm", None)
    if jvm is None:
        return False
    try:
        loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
        jvm.java.lang.Class.forName(class_name, False, loader)
        return True
    except Exception:  # Py4JJavaError (ClassNotFoundException), no gateway, ...
        return False


def register_data_source(spark: SparkSession) -> None:
    """Register :class:`KafkaDataSource` with ``spark`` (once per session)."""
    try:
        if spark in _registered:
            return
    except TypeError:  # not weak-referenceable: just register again
        pass
    from spark_kafka_source.kafka_source import KafkaDataSource

    spark.dataSource.register(KafkaDataSource)
    try:
        _registered.add(spark)
    except TypeError:
        pass


def native_options(parsed: KafkaSourceOptions, options: Mapping[str, str]) -> dict[str, str]:
    """``options`` for ``format("kafka")``: the connector resolved to ``subscribe``."""
    native = dict(options)
    if parsed.subscription.kind == "connector":
        from spark_kafka_source.offsets import ClusterLookups, select_topics

        lookups = ClusterLookups(parsed)
        try:
            topics = select_topics(parsed.subscription, lookups, require_existing=False)
        finally:
            lookups.close()
        if not topics:
            raise ValueError(f"option connector: none of the topics of connector "
                             f"{parsed.subscription.connector!r} exists in the cluster")
        for name in ("connector", "connect.url", "connect.username", "connect.password"):
            native.pop(name, None)
        native["subscribe"] = ",".join(topics)
    native.setdefault("includeheaders", "true")
    return native


def _load(spark: SparkSession, options: Mapping[str, Any], mode: Mode) -> DataFrame:
    opts = normalize(options)
    parsed = parse_options(opts, mode)  # ValueError naming the option, before any planning
    builder = spark.readStream if mode == "stream" else spark.read
    if native_kafka_available(spark):
        log.info("Reading Kafka with Spark's format(%r)", NATIVE_FORMAT)
        return builder.format(NATIVE_FORMAT).options(**native_options(parsed, opts)).load()
    from spark_kafka_source.kafka_source import SHORT_NAME

    register_data_source(spark)
    return builder.format(SHORT_NAME).options(**opts).load()


def read_kafka(spark: SparkSession, **options: Any) -> DataFrame:
    """A batch DataFrame of Kafka records (Spark's Kafka columns).

    ``options`` use Spark's Kafka source names (``kafka.bootstrap.servers``, ``subscribe``
    | ``subscribePattern`` | ``connector`` + ``connect.url``, ``startingOffsets``,
    ``endingOffsets``, ``kafka.*``, ...); values may be strings, numbers, booleans or, for
    offsets, dicts. Raises ValueError for bad options.
    """
    return _load(spark, options, "batch")


def read_kafka_stream(spark: SparkSession, **options: Any) -> DataFrame:
    """A streaming DataFrame of Kafka records; ``startingOffsets`` defaults to ``latest``
    and ``maxOffsetsPerTrigger`` caps each micro-batch. Raises ValueError for bad options."""
    return _load(spark, options, "stream")
