"""Orders pipeline: JSON order events from a connector's topic → cleaned → per-customer
totals in Parquet.

Reads exactly the offset ranges it is given (Spark's ``startingOffsets``/``endingOffsets``
JSON), so a re-run of the same DAG run reads the same records and writes the same output.

    spark-submit dags/pipelines/orders_job.py --bootstrap-servers localhost:9092 \\
        --topic orders --starting-offsets '{"orders":{"0":0}}' \\
        --ending-offsets '{"orders":{"0":120}}' --output /tmp/out/run-1

Input records are Connect's StringConverter values, one JSON object per record::

    {"order_id": "o-1", "customer": "acme", "amount": 12.5, "currency": "EUR", "ts": 1767225600000}

Cleaning: a record that is not a JSON object, lacks ``order_id``/``customer``/``ts``, has
a missing or non-positive ``amount`` or an unknown currency is dropped; an order read
twice (the same ``order_id``, e.g. replayed after an offsets reset) counts once, as its
first occurrence by topic, partition and offset. The summary (``_run.json`` beside the
Parquet) counts what was read, dropped and kept.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

CURRENCIES = ("EUR", "USD", "GBP")
ORDER_SCHEMA = ("order_id string, customer string, amount double, currency string, "
                "ts long")


def valid_orders(events: Any) -> Any:
    """The well-formed orders of a DataFrame of Kafka records (``value`` binary), with
    the record's ``topic``, ``partition`` and ``offset``."""
    from pyspark.sql import functions as F

    parsed = events.select(
        F.from_json(F.col("value").cast("string"), ORDER_SCHEMA).alias("order"),
        "topic", "partition", "offset")
    return parsed.where(
        F.col("order.order_id").isNotNull() & F.col("order.customer").isNotNull()
        & (F.col("order.amount") > 0) & F.col("order.currency").isin(*CURRENCIES)
        & F.col("order.ts").isNotNull()).select("order.*", "topic", "partition", "offset")


def first_occurrences(orders: Any) -> Any:
    """One row per ``order_id``: the first read (lowest topic, partition, offset), so the
    choice does not depend on how Spark partitioned the work."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    first = Window.partitionBy("order_id").orderBy("topic", "partition", "offset")
    return (orders.withColumn("_n", F.row_number().over(first)).where(F.col("_n") == 1)
            .drop("_n", "topic", "partition", "offset"))


def customer_totals(orders: Any) -> Any:
    """Orders, amount and first/last event time per customer and currency, sorted."""
    from pyspark.sql import functions as F

    return (orders.groupBy("customer", "currency")
            .agg(F.count("*").alias("orders"),
                 F.round(F.sum("amount"), 2).alias("total_amount"),
                 F.min("ts").alias("first_ts"), F.max("ts").alias("last_ts"))
            .orderBy("customer", "currency"))


def read_output(totals: str | Path) -> tuple[Any, dict[bytes, bytes]]:
    """What a run wrote to ``totals``: the table of its single Parquet part file (schema
    metadata included) and the file's key-value metadata. Two runs of the same range give
    equal results. (Not equal bytes: parquet-mr lists each column chunk's encodings in an
    order that varies between JVMs, and part file names carry a per-write id.)"""
    import pyarrow.parquet as pq

    parts = sorted(Path(totals).glob("part-*.parquet"))
    if len(parts) != 1:
        raise ValueError(f"{totals} should hold one Parquet part file, found {len(parts)}")
    parquet = pq.ParquetFile(parts[0])
    return parquet.read(), dict(parquet.metadata.metadata or {})


def same_output(first: tuple[Any, dict[bytes, bytes]],
                second: tuple[Any, dict[bytes, bytes]]) -> bool:
    """Whether two :func:`read_output` results hold the same rows and schema (metadata
    included) and the same Parquet key-value metadata."""
    return first[0].equals(second[0], check_metadata=True) and first[1] == second[1]


def run(bootstrap_servers: str, topic: str, starting: str, ending: str,
        output: Path) -> dict[str, Any]:
    from pyspark.sql import SparkSession

    from spark_kafka_source.reader import read_kafka

    spark = SparkSession.builder.appName(f"orders-pipeline-{topic}").getOrCreate()
    try:
        events = read_kafka(spark, **{"kafka.bootstrap.servers": bootstrap_servers,
                                      "subscribe": topic, "startingOffsets": starting,
                                      "endingOffsets": ending}).cache()
        valid = valid_orders(events).cache()
        orders = first_occurrences(valid)
        totals = customer_totals(orders)
        # One file, rows in a fixed order: the same input gives byte-identical output.
        totals.coalesce(1).write.mode("overwrite").parquet(str(output / "totals"))
        read, kept_records, unique = events.count(), valid.count(), orders.count()
        summary = {"topic": topic, "starting_offsets": json.loads(starting),
                   "ending_offsets": json.loads(ending), "records_read": read,
                   "records_dropped": read - kept_records,
                   "duplicates": kept_records - unique, "orders": unique,
                   "customers": orders.select("customer").distinct().count(),
                   "output": str(output / "totals")}
        (output / "_run.json").write_text(json.dumps(summary, indent=2, sort_keys=True))
        return summary
    finally:
        spark.stop()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--bootstrap-servers", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--starting-offsets", required=True, help="Spark JSON")
    parser.add_argument("--ending-offsets", required=True, help="Spark JSON")
    parser.add_argument("--output", required=True, type=Path)
    args = parser.parse_args(argv)
    for name in ("starting_offsets", "ending_offsets"):
        try:
            json.loads(getattr(args, name))
        except json.JSONDecodeError as exc:
            parser.error(f"--{name.replace('_', '-')} is not JSON: {exc}")
    args.output.mkdir(parents=True, exist_ok=True)
    summary = run(args.bootstrap_servers, args.topic, args.starting_offsets,
                  args.ending_offsets, args.output)
    print(json.dumps(summary, sort_keys=True))


if __name__ == "__main__":
    main()
