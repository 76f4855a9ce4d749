"""Throughput of the worker's source and sink paths against raw confluent-kafka loops.

Source: SequenceGenerator (100-byte values, StringConverter) → WorkerSourceTask → Kafka,
with Kafka's default ``offset.flush.interval.ms`` (60 s), timed from the first poll until the
generator has emitted every record and the stopped task has flushed the producer and
committed the last offset (so every record was acknowledged), against a raw producer loop
sending the same pre-built keys and values with the same producer settings.
Sink: Kafka → WorkerSinkTask (StringConverter) → a counting SinkTask, against a raw
consumer loop reading the same topic; both timed from the first record to the last, so
the consumer-group join (≈3 s on the test broker) is excluded from both.

Run: ``.venv/bin/python tests/bench/bench_pipeline.py [--records N] [--rounds R]``
(uses KAFKA_BOOTSTRAP_SERVERS when set, else the embedded broker). Prints a table and
writes ``tests/bench/results/pipeline.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import threading
import time
import uuid
from collections.abc import Mapping
from contextlib import ExitStack
from pathlib import Path

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from worker.api import SinkConnector, SinkRecord, SinkTask
from worker.config.worker_config import WorkerConfig
from worker.connectors.generator import SequenceGeneratorConnector, SequenceGeneratorTask
from worker.plugins.registry import PluginType, builtin_registry
from worker.runtime import kafka_clients
from worker.runtime.worker import Worker
from worker.storage.base import TargetState, TaskId
from worker.storage.memory import MemoryOffsetBackingStore, MemoryStatusBackingStore
from worker.testing import EmbeddedBroker

RESULTS = Path(__file__).parent / "results" / "pipeline.json"
STRING = "org.apache.kafka.connect.storage.StringConverter"
VALUE_SIZE = 100
TIMEOUT_S = 300.0


class DrainedGeneratorTask(SequenceGeneratorTask):
    """The generator, signalling when it has nothing left to emit (count reached)."""

    drained = threading.Event()
    first_poll: float | None = None

    def poll(self):  # type: ignore[no-untyped-def]
        if type(self).first_poll is None:
            type(self).first_poll = time.perf_counter()
        records = super().poll()
        if records is None:
            type(self).drained.set()
        return records


class DrainedGeneratorConnector(SequenceGeneratorConnector):
    def task_class(self) -> type[SequenceGeneratorTask]:
        return DrainedGeneratorTask


class CountingSinkTask(SinkTask):
    """Counts records; notes when the first and the target-th arrived."""

    target = 0
    count = 0
    first: float | None = None
    done = threading.Event()

    def start(self, props: Mapping[str, str]) -> None:
        pass

    def put(self, records: list[SinkRecord]) -> None:
        if not records:
            return
        cls = type(self)
        if cls.first is None:
            cls.first = time.perf_counter()
        cls.count += len(records)
        if cls.count >= cls.target:
            cls.done.set()

    def stop(self) -> None:
        pass


class CountingSinkConnector(SinkConnector):
    def start(self, props: Mapping[str, str]) -> None:
        self.props = dict(props)

    def task_class(self) -> type[SinkTask]:
        return CountingSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self.props)]

    def stop(self) -> None:
        pass


def make_worker(bootstrap: str) -> tuple[Worker, MemoryOffsetBackingStore]:
    config = WorkerConfig({
        "bootstrap.servers": bootstrap, "key.converter": STRING, "value.converter": STRING,
        "consumer.session.timeout.ms": "6000",
        "topic.tracking.enable": "false"})
    registry = builtin_registry()
    registry.register(CountingSinkConnector, PluginType.SINK)
    registry.register(DrainedGeneratorConnector, PluginType.SOURCE)
    offsets = MemoryOffsetBackingStore()
    statuses = MemoryStatusBackingStore()
    offsets.start()
    statuses.start()
    return Worker("bench:0", config, registry, offsets, statuses), offsets


def create_topic(admin: AdminClient, partitions: int) -> str:
    name = f"bench-{uuid.uuid4().hex[:10]}"
    for future in admin.create_topics([NewTopic(name, partitions, 1)]).values():
        future.result(30)
    return name


def expected_pairs(records: int) -> list[tuple[bytes, bytes]]:
    """The exact keys and values the generator's task 0 produces (built before timing)."""
    pairs = []
    for seq in range(records):
        prefix = f"0-{seq:012d}-"
        pairs.append((b"0", (prefix + "x" * (VALUE_SIZE - len(prefix))).encode()))
    return pairs


def raw_produce(bootstrap: str, topic: str, pairs: list[tuple[bytes, bytes]]) -> float:
    config = WorkerConfig({"bootstrap.servers": bootstrap})
    producer = Producer(kafka_clients.producer_config(config, {}, "bench-raw"))
    produce, poll = producer.produce, producer.poll
    started = time.perf_counter()
    for i, (key, value) in enumerate(pairs):
        while True:
            try:
                produce(topic, value, key)
                break
            except BufferError:
                poll(0.05)
        if i % 1000 == 0:
            poll(0)
    remaining = producer.flush(TIMEOUT_S)
    elapsed = time.perf_counter() - started
    assert remaining == 0, f"{remaining} records were not acknowledged"
    return elapsed


def worker_produce(bootstrap: str, topic: str, records: int) -> float:
    worker, offsets = make_worker(bootstrap)
    connector_config = {"name": "bench-source",
                        "connector.class": f"{__name__}.DrainedGeneratorConnector",
                        "topic": topic, "count": str(records),
                        "message.size": str(VALUE_SIZE), "batch.size": "1000"}
    connector = DrainedGeneratorConnector()
    connector.start(connector_config)
    task_config = connector.task_configs(1)[0]
    task_id = TaskId("bench-source", 0)
    DrainedGeneratorTask.drained.clear()
    DrainedGeneratorTask.first_poll = None
    worker.start_task(task_id, connector_config, task_config, TargetState.STARTED)
    if not DrainedGeneratorTask.drained.wait(TIMEOUT_S):
        raise TimeoutError("the generator did not emit every record")
    worker.stop_tasks([task_id])  # flushes the producer and commits the final offset
    # Timed from the first poll: task start-up (client creation) is latency, not throughput.
    assert DrainedGeneratorTask.first_poll is not None
    elapsed = time.perf_counter() - DrainedGeneratorTask.first_poll
    committed = offsets.get("bench-source", [{"task": 0}])
    worker.stop()
    assert list(committed.values()) == [{"seq": records - 1}], committed
    return elapsed


def raw_consume(bootstrap: str, topic: str, records: int) -> float:
    """The hand-written consumer a sink replaces: per record it takes the key, value and
    coordinates and tracks the next offset per partition (what an at-least-once commit
    needs); nothing else."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"raw-{uuid.uuid4()}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": "false",
                         "session.timeout.ms": "6000"})
    consumer.subscribe([topic])
    count, first = 0, None
    positions: dict[tuple[str, int], int] = {}
    received: list[tuple[bytes | None, bytes | None]] = []
    deadline = time.monotonic() + TIMEOUT_S
    while count < records and time.monotonic() < deadline:
        messages = consumer.consume(2000, 0.2)
        if messages and first is None:
            first = time.perf_counter()
        for message in messages:
            if message.error() is None:
                positions[(message.topic(), message.partition())] = message.offset() + 1
                received.append((message.key(), message.value()))
                count += 1
        received.clear()
    elapsed = time.perf_counter() - (first or time.perf_counter())
    consumer.close()
    assert count >= records, f"raw consumer read {count} of {records}"
    return elapsed


def worker_consume(bootstrap: str, topic: str, records: int) -> float:
    worker, _ = make_worker(bootstrap)
    CountingSinkTask.target, CountingSinkTask.count, CountingSinkTask.first = records, 0, None
    CountingSinkTask.done.clear()
    name = f"bench-sink-{uuid.uuid4().hex[:6]}"
    connector_config = {"name": name, "topics": topic,
                        "connector.class": f"{__name__}.CountingSinkConnector"}
    task_config = {**connector_config, "task.class": f"{__name__}.CountingSinkTask"}
    worker.start_task(TaskId(name, 0), connector_config, task_config, TargetState.STARTED)
    finished = CountingSinkTask.done.wait(TIMEOUT_S)
    end = time.perf_counter()
    worker.stop()
    assert finished, f"sink read {CountingSinkTask.count} of {records}"
    assert CountingSinkTask.first is not None
    return end - CountingSinkTask.first


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    pairs = expected_pairs(args.records)
    rounds = []
    with ExitStack() as stack:
        bootstrap = os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
        if not bootstrap:
            bootstrap = stack.enter_context(EmbeddedBroker()).bootstrap_servers
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for index in range(args.rounds):
            raw_topic, our_topic = create_topic(admin, 1), create_topic(admin, 1)
            result = {
                "raw_produce_s": raw_produce(bootstrap, raw_topic, pairs),
                "worker_produce_s": worker_produce(bootstrap, our_topic, args.records),
                "raw_consume_s": raw_consume(bootstrap, our_topic, args.records),
                "worker_consume_s": worker_consume(bootstrap, our_topic, args.records),
            }
            rounds.append(result)
            print(f"round {index + 1}: " + ", ".join(f"{k}={v:.3f}" for k, v in result.items()))

    def median(key: str) -> float:
        return statistics.median(r[key] for r in rounds)

    n = args.records
    summary = {
        "records": n, "value_bytes": VALUE_SIZE, "rounds": rounds,
        "raw_produce_rps": n / median("raw_produce_s"),
        "worker_produce_rps": n / median("worker_produce_s"),
        "raw_consume_rps": n / median("raw_consume_s"),
        "worker_consume_rps": n / median("worker_consume_s"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, "
                   f"Python {platform.python_version()}",
        "broker": "KAFKA_BOOTSTRAP_SERVERS" if os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
                  else "embedded Tansu",
    }
    summary["source_ratio"] = summary["worker_produce_rps"] / summary["raw_produce_rps"]
    summary["sink_ratio"] = summary["worker_consume_rps"] / summary["raw_consume_rps"]
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(summary, indent=2) + "\n")
    print(f"\n{'path':<8}{'raw rec/s':>14}{'worker rec/s':>14}{'ratio':>8}  (target >= 0.5)")
    print(f"{'source':<8}{summary['raw_produce_rps']:>14,.0f}"
          f"{summary['worker_produce_rps']:>14,.0f}{summary['source_ratio']:>8.2f}")
    print(f"{'sink':<8}{summary['raw_consume_rps']:>14,.0f}"
          f"{summary['worker_consume_rps']:>14,.0f}{summary['sink_ratio']:>8.2f}")
    print(f"saved {RESULTS}")


if __name__ == "__main__":
    main()
