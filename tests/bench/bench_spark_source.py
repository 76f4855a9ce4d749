"""Read rate of the ``connect_kafka`` Spark data source against a raw confluent-kafka loop.

N records (~200-byte JSON values, short keys, one header) are produced in batches to a
topic of P partitions. The exact end offset of every partition is then found by consuming
the topic once (untimed): on the Tansu test broker the high watermark counts produce
batches, not records (docs/architecture.md §6), so the reads below are given ``endingOffsets`` JSON
instead of ``latest``. Each round then times, on the same ranges:

* **raw** — a plain confluent-kafka ``Consumer`` per partition, assigned at the range's
  start, partitions one after the other, taking key, value, offset, timestamp and headers
  of each record until the range is done: the least a Python reader can do. (One consumer
  assigned to all partitions was 3× slower on Tansu, so it is not the baseline.)
* **read_range** — this project's range reader (``spark_kafka_source.consumer``) in
  this process, one partition after the other: the data source's per-record work
  (Arrow batches) without Spark;
* **spark count** — ``read_kafka(...).count()`` on a local Spark session (``--master``,
  default ``local[2]``), one Spark task per partition;
* **spark aggregate** — ``groupBy("partition").agg(count, sum(length(value)),
  max(offset))``: every column crosses from the Python reader to the JVM, nothing is
  collected but the per-partition result.

Spark times include planning (offset resolution on the driver) and the Python workers'
start-up, which is kept low by an untimed warm-up read first.

Run: ``.venv/bin/python tests/bench/bench_spark_source.py [--records 200000]
[--partitions 2] [--rounds 3]`` (``KAFKA_BOOTSTRAP_SERVERS`` selects a real Kafka;
otherwise the embedded Tansu broker). Prints a table and writes
``tests/bench/results/spark_source.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
import uuid
from contextlib import ExitStack
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "tests" / "bench" / "results" / "spark_source.json"
sys.path.insert(0, str(ROOT))

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from spark_kafka_source.consumer import (  # noqa: E402
    FETCH_QUEUE_BACKOFF_MS,
    arrow_schema,
    consumer_config,
    read_range,
)
from spark_kafka_source.kafka_source import kafka_schema  # noqa: E402
from worker.testing import EmbeddedBroker  # noqa: E402

TIMEOUT_S = 300.0
Ranges = dict[int, tuple[int, int]]  # partition → [start, end)


def make_value(n: int, size: int) -> bytes:
    body = {"order_id": f"o-{n:09d}", "customer": f"c-{n % 997:04d}", "amount": n % 1000 / 7,
            "currency": ("EUR", "USD", "GBP")[n % 3], "ts": 1_767_225_600_000 + n}
    text = json.dumps(body, separators=(",", ":"))
    return (text[:-1] + ',"pad":"' + "x" * max(0, size - len(text) - 9) + '"}').encode()


def produce(bootstrap: str, topic: str, records: int, partitions: int, size: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20,
                         "batch.num.messages": 10_000, "compression.type": "none"})
    for n in range(records):
        while True:
            try:
                producer.produce(topic, make_value(n, size), f"k{n}".encode(),
                                 partition=n % partitions, headers=[("source", b"bench")])
                break
            except BufferError:
                producer.poll(0.05)
        if n % 10_000 == 0:
            producer.poll(0)
    assert producer.flush(TIMEOUT_S) == 0


def discover_ranges(bootstrap: str, topic: str, partitions: int, records: int) -> Ranges:
    """``[0, last offset + 1)`` per partition, found by reading every record once."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{uuid.uuid4()}",
                         "enable.partition.eof": True, "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    last: dict[int, int] = {}
    seen, at_eof = 0, set()
    deadline = time.monotonic() + TIMEOUT_S
    while (seen < records or len(at_eof) < partitions) and time.monotonic() < deadline:
        for message in consumer.consume(10_000, 0.5):
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    at_eof.add(message.partition())
                continue
            at_eof.discard(message.partition())
            last[message.partition()] = message.offset()
            seen += 1
    consumer.close()
    assert seen == records, f"found {seen} of {records} records"
    return {p: (0, last[p] + 1) for p in sorted(last)}


def raw_read(bootstrap: str, topic: str, ranges: Ranges) -> tuple[float, int]:
    """One assigned consumer per partition, one partition after the other (as a Spark task
    reads one range): per record, key, value, offset, timestamp and headers are taken.
    The consumer has the range reader's ``fetch.queue.backoff.ms``."""
    count = 0
    start = time.perf_counter()
    for partition, (first, end) in ranges.items():
        # The reader's fetch.queue.backoff.ms: librdkafka's own 1 s would idle this loop.
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"raw-{uuid.uuid4()}",
                             "enable.auto.commit": False, "enable.partition.eof": True,
                             "fetch.queue.backoff.ms": FETCH_QUEUE_BACKOFF_MS})
        consumer.assign([TopicPartition(topic, partition, first)])
        received: list[Any] = []
        done = first >= end
        deadline = time.monotonic() + TIMEOUT_S
        while not done and time.monotonic() < deadline:
            for message in consumer.consume(10_000, 0.5):
                if message.error() is not None or message.offset() >= end:
                    continue
                received.append((message.key(), message.value(), message.offset(),
                                 message.timestamp(), message.headers()))
                count += 1
                done = done or message.offset() >= end - 1
            received.clear()
        consumer.close()
    return time.perf_counter() - start, count


def range_reader_read(bootstrap: str, topic: str, ranges: Ranges) -> tuple[float, int]:
    config = consumer_config({"bootstrap.servers": bootstrap}, group_id_prefix="bench",
                             fail_on_data_loss=True)
    schema = arrow_schema(kafka_schema())
    start = time.perf_counter()
    count = sum(batch.num_rows for p, (s, e) in ranges.items()
                for batch in read_range(config, topic, p, s, e, schema, poll_timeout_ms=60_000))
    return time.perf_counter() - start, count


def spark_options(bootstrap: str, topic: str, ranges: Ranges) -> dict[str, str]:
    return {"kafka.bootstrap.servers": bootstrap, "subscribe": topic,
            "startingOffsets": json.dumps({topic: {str(p): s for p, (s, _) in ranges.items()}}),
            "endingOffsets": json.dumps({topic: {str(p): e for p, (_, e) in ranges.items()}})}


def spark_count(spark: Any, options: dict[str, str]) -> tuple[float, int]:
    from spark_kafka_source.reader import read_kafka

    start = time.perf_counter()
    count = read_kafka(spark, **options).count()
    return time.perf_counter() - start, count


def spark_aggregate(spark: Any, options: dict[str, str]) -> tuple[float, int]:
    from pyspark.sql import functions as F

    from spark_kafka_source.reader import read_kafka

    start = time.perf_counter()
    result = (read_kafka(spark, **options).groupBy("partition")
              .agg(F.count("*").alias("n"), F.sum(F.length("value")).alias("bytes"),
                   F.max("offset").alias("last")).collect())
    return time.perf_counter() - start, sum(row["n"] for row in result)


def make_spark(master: str) -> Any:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master(master).appName("bench-spark-source")
             .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
             .config("spark.pyspark.python", sys.executable).getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--value-bytes", type=int, default=200)
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--master", default="local[2]")
    args = parser.parse_args()
    paths = ("raw", "read_range", "spark_count", "spark_aggregate")
    rounds: list[dict[str, float]] = []
    with ExitStack() as stack:
        bootstrap = os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
        if not bootstrap:
            bootstrap = stack.enter_context(EmbeddedBroker()).bootstrap_servers
        admin = AdminClient({"bootstrap.servers": bootstrap})
        topic = f"bench-spark-{uuid.uuid4().hex[:8]}"
        admin.create_topics([NewTopic(topic, args.partitions, 1)])[topic].result(30)
        time.sleep(1.0)  # metadata propagation
        produce(bootstrap, topic, args.records, args.partitions, args.value_bytes)
        ranges = discover_ranges(bootstrap, topic, args.partitions, args.records)
        options = spark_options(bootstrap, topic, ranges)
        spark = make_spark(args.master)
        stack.callback(spark.stop)
        spark_count(spark, {**options, "endingOffsets": json.dumps(  # warm-up, untimed
            {topic: {str(p): min(e, s + 100) for p, (s, e) in ranges.items()}})})
        for index in range(args.rounds):
            result: dict[str, float] = {}
            for name, run in (("raw", lambda: raw_read(bootstrap, topic, ranges)),
                              ("read_range", lambda: range_reader_read(bootstrap, topic, ranges)),
                              ("spark_count", lambda: spark_count(spark, options)),
                              ("spark_aggregate", lambda: spark_aggregate(spark, options))):
                elapsed, count = run()
                assert count == args.records, f"{name} read {count} of {args.records}"
                result[f"{name}_s"] = elapsed
            rounds.append(result)
            print(f"round {index + 1}: " + ", ".join(f"{k}={v:.3f}" for k, v in result.items()))
        spark_version = spark.version

    n = args.records
    rates = {name: n / statistics.median(r[f"{name}_s"] for r in rounds) for name in paths}
    summary = {
        "records": n, "value_bytes": args.value_bytes, "partitions": args.partitions,
        "master": args.master, "rounds": rounds,
        **{f"{name}_rps": rate for name, rate in rates.items()},
        **{f"{name}_ratio": rates[name] / rates["raw"] for name in paths[1:]},
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, "
                   f"Python {platform.python_version()}, Spark {spark_version}",
        "broker": "KAFKA_BOOTSTRAP_SERVERS" if os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
                  else "embedded Tansu",
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(summary, indent=2) + "\n")
    print(f"\n{'path':<18}{'rec/s':>12}{'ratio to raw':>14}")
    for name in paths:
        print(f"{name:<18}{rates[name]:>12,.0f}{rates[name] / rates['raw']:>14.2f}")
    print(f"saved {RESULTS}")


if __name__ == "__main__":
    main()
