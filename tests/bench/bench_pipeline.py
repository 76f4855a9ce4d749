"""Throughput of the worker's source and sink paths against raw confluent-kafka loops.

Every figure is a ratio against a raw client measured in the same round, on the same broker,
with the worker's own producer / consumer settings (``worker.clients.factories``).

Source paths (one-partition topic, 100-byte values):

- ``generator``: SequenceGenerator (StringConverter) → WorkerSourceTask → Kafka, timed from
  the first poll until the stopped task committed the last offset (issue #2's path).
- ``file ...``: FileStreamSource reading a file of N 100-byte lines (plus "\n"), with the
  StringConverter, the JsonConverter (schemas off / on) and JsonConverter with two SMTs
  (HoistField$Value + InsertField$Value), and an ``offset.flush.interval.ms`` sweep (100 ms,
  1 s, 60 s) with the StringConverter. Timed from ``start_task`` (producer creation
  included) until the task's ``source-record-write-total`` reaches N, looked at every
  5 ms: "create to last acknowledged record", read from the metrics (a scrape of the
  collector must show N too). The task is then stopped; its final offset commit must
  write the file's size. (The end offset of the topic cannot serve: Tansu reports it per
  record batch, not per record.)
- raw: a producer built from the worker's producer config sends N pre-built 100-byte values
  with one ``produce()`` per record (the loop a user writes), timed from creating it until
  ``flush()`` returned.
- Like the worker process (``worker.util.collector``), each run freezes what exists before
  it (``gc.freeze()``) so the cyclic collector does not rescan the benchmark's own data, and
  the worker's runs collect the youngest generation every
  ``FIRST_GENERATION_THRESHOLD`` allocations, as the worker process does; the raw loops
  run with the interpreter's default (700), as a hand-written client does.
  ``--raw-gc-threshold`` and ``--worker-gc-threshold`` change either.
- cpu/rec: CPU seconds per record of the sending thread (``time.thread_time()``): the raw
  loop's, and the task thread's from its first poll() to the drained one. Steadier than
  wall time on a small machine where broker, librdkafka and Python share the cores.

Sink paths: WorkerSinkTask with a counting task (StringConverter) and FileStreamSink
(StringConverter, JsonConverter schemas off) reading the topics the file sources wrote,
timed from the first record handed to ``put`` until the N-th; against a raw consumer
(the worker's consumer config) that writes each value plus "\n" to a file, timed from the
first record to the N-th. The consumer-group join is excluded from both. The FileStreamSink
rows' cpu/rec is the consuming thread's over the same span: the raw loop's, and the task
thread's (it consumes, converts and puts; a batch the idle poller read for it, at most one
or two at the start, is not counted).

Run: ``.venv/bin/python tests/bench/bench_pipeline.py [--records N] [--rounds R]
[--only source|sink] [--raw-gc-threshold N] [--worker-gc-threshold N] [--results FILE]`` (uses
KAFKA_BOOTSTRAP_SERVERS when set, else the embedded broker).
Prints a table and writes ``tests/bench/results/pipeline.json``.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from functools import partial
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from saved_results import save  # tests/bench/, this script's directory

from worker.api import SinkConnector, SinkRecord, SinkTask, SourceRecord, Task
from worker.builtin.connectors.file_stream import (
    FileStreamSinkConnector,
    FileStreamSinkTask,
    FileStreamSourceConnector,
    FileStreamSourceTask,
)
from worker.builtin.connectors.generator import SequenceGeneratorConnector, SequenceGeneratorTask
from worker.clients import factories as kafka_clients
from worker.config.worker_config import WorkerConfig
from worker.plugins.registry import PluginType, builtin_registry
from worker.runtime.metrics.collector import ConnectMetricsCollector
from worker.runtime.worker import Worker
from worker.storage.base import TargetState, TaskId
from worker.storage.memory import MemoryOffsetBackingStore, MemoryStatusBackingStore
from worker.testing import EmbeddedBroker
from worker.util.collector import FIRST_GENERATION_THRESHOLD

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.support import wait_until  # noqa: E402

RESULTS = Path(__file__).parent / "results" / "pipeline.json"
STRING = "org.apache.kafka.connect.storage.StringConverter"
JSON = "org.apache.kafka.connect.json.JsonConverter"
VALUE_SIZE = 100
TIMEOUT_S = 300.0
#: How often the source rows look at source-record-write-total for their finish line.
FINISH_POLL_S = 0.005


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


class DrainedFileSourceTask(FileStreamSourceTask):
    """FileStreamSource that, once every line was read and handed to the worker, notes its
    thread's CPU time at the first poll() after the target-th line (the previous batch was
    then fully sent) and from then on returns None every 10 ms."""

    target = 0
    count = 0
    drained = False
    # CPU seconds of the task thread from its first poll() to the drained one: poll, the
    # worker's per-record work and the delivery reports it serves (not librdkafka's threads).
    cpu_start: float | None = None
    cpu_s = 0.0

    def poll(self) -> list[SourceRecord] | None:
        cls = type(self)
        if cls.cpu_start is None:
            cls.cpu_start = time.thread_time()
        if cls.count >= cls.target:
            if not cls.drained:
                cls.cpu_s = time.thread_time() - cls.cpu_start
                cls.drained = True
            self._stopping.wait(0.01)
            return None
        records = super().poll()
        if records:
            cls.count += len(records)
        return records


class DrainedFileSourceConnector(FileStreamSourceConnector):
    def task_class(self) -> type[Task]:
        return DrainedFileSourceTask


class TimedFileSinkTask(FileStreamSinkTask):
    """FileStreamSink, noting when the first and the target-th record arrived."""

    target = 0
    count = 0
    first: float | None = None
    cpu_first = 0.0
    cpu_s = 0.0
    done = threading.Event()

    def put(self, records: list[SinkRecord]) -> None:
        cls = type(self)
        if records and cls.first is None:
            cls.first = time.perf_counter()
            cls.cpu_first = time.thread_time()  # the task thread: it consumes too
        super().put(records)
        if cls.count < cls.target <= cls.count + len(records):
            cls.cpu_s = time.thread_time() - cls.cpu_first
        cls.count += len(records)
        if cls.count >= cls.target:
            cls.done.set()


class TimedFileSinkConnector(FileStreamSinkConnector):
    def task_class(self) -> type[SinkTask]:
        return TimedFileSinkTask


def make_worker(bootstrap: str, flush_ms: int = 60_000
                ) -> tuple[Worker, MemoryOffsetBackingStore]:
    config = WorkerConfig({
        "bootstrap.servers": bootstrap, "key.converter": STRING, "value.converter": STRING,
        "consumer.session.timeout.ms": "6000", "offset.flush.interval.ms": str(flush_ms),
        "topic.tracking.enable": "false"})
    registry = builtin_registry()
    registry.register(CountingSinkConnector, PluginType.SINK)
    registry.register(TimedFileSinkConnector, PluginType.SINK)
    registry.register(DrainedGeneratorConnector, PluginType.SOURCE)
    registry.register(DrainedFileSourceConnector, PluginType.SOURCE)
    offsets = MemoryOffsetBackingStore()
    statuses = MemoryStatusBackingStore()
    offsets.start()
    statuses.start()
    worker = Worker("bench:0", config, registry, offsets, statuses)
    # As the worker process does once started (worker.util.collector): what exists now
    # stays out of the cyclic collector's passes, which the records of every batch trigger.
    gc.freeze()
    return worker, offsets


@contextmanager
def collector_threshold(first: int) -> Iterator[None]:
    """The cyclic collector's first-generation threshold set to ``first`` meanwhile."""
    before = gc.get_threshold()
    gc.set_threshold(first, *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)


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


CPU: dict[str, float] = {}
"""CPU seconds of the last run's sending thread: "raw" (the raw loop) or a file variant."""


def raw_produce(bootstrap: str, topic: str, pairs: list[tuple[bytes, bytes]]) -> float:
    config = WorkerConfig({"bootstrap.servers": bootstrap})
    cpu_started = time.thread_time()
    started = time.perf_counter()
    producer = Producer(kafka_clients.producer_config(config, {}, "bench-raw"))
    produce, poll = producer.produce, producer.poll
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
    CPU["raw"] = time.thread_time() - cpu_started
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
    needs); nothing else. The worker's consumer settings, as for every raw baseline here
    (librdkafka's own fetch.queue.backoff.ms of 1 s held this one back to a quarter)."""
    config = WorkerConfig({"bootstrap.servers": bootstrap, "consumer.session.timeout.ms": "6000"})
    consumer = Consumer(kafka_clients.consumer_config(
        config, {"consumer.override.group.id": f"raw-{uuid.uuid4()}"}, "raw", "bench-raw"))
    consumer.subscribe([topic])
    count, first = 0, None
    positions: dict[tuple[Any, Any], Any] = {}
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


def write_lines(path: Path, records: int) -> int:
    """N lines of VALUE_SIZE bytes plus "\\n"; returns the file size."""
    with open(path, "wb") as out:
        for start in range(0, records, 10_000):
            out.write(b"".join(b"%0*d\n" % (VALUE_SIZE, seq)
                               for seq in range(start, min(records, start + 10_000))))
    return path.stat().st_size


CONVERTERS: dict[str, dict[str, str]] = {
    "string": {"value.converter": STRING},
    "json-off": {"value.converter": JSON, "value.converter.schemas.enable": "false"},
    "json-on": {"value.converter": JSON, "value.converter.schemas.enable": "true"},
    "json-off+2smt": {
        "value.converter": JSON, "value.converter.schemas.enable": "false",
        "transforms": "hoist,insert",
        "transforms.hoist.type": "org.apache.kafka.connect.transforms.HoistField$Value",
        "transforms.hoist.field": "line",
        "transforms.insert.type": "org.apache.kafka.connect.transforms.InsertField$Value",
        "transforms.insert.static.field": "source",
        "transforms.insert.static.value": "bench"},
}


def worker_file_source(bootstrap: str, topic: str, path: Path, size: int, records: int,
                       variant: str, flush_ms: int) -> float:
    worker, offsets = make_worker(bootstrap, flush_ms)
    name = f"bench-file-{uuid.uuid4().hex[:6]}"
    connector_config = {"name": name, "connector.class": f"{__name__}.DrainedFileSourceConnector",
                        "file": str(path), "topic": topic, **CONVERTERS[variant]}
    connector = DrainedFileSourceConnector()
    connector.start(connector_config)
    task_id = TaskId(name, 0)
    cls = DrainedFileSourceTask
    cls.target, cls.count, cls.cpu_start, cls.drained = records, 0, None, False
    started = time.perf_counter()
    worker.start_task(task_id, connector_config, connector.task_configs(1)[0],
                      TargetState.STARTED)
    try:
        # The finish line: the last record acknowledged, as the task's
        # source-record-write-total says (the task loop counts acknowledgements after each
        # poll(), every 10 ms once the file is drained).
        metrics = worker.tasks[task_id].metrics
        wait_until(lambda: metrics.write_total >= records, timeout=TIMEOUT_S,
                   interval=FINISH_POLL_S,
                   message=lambda: f"{metrics.write_total} of {records} acknowledged")
        end = time.perf_counter()
        scraped = source_write_total(worker)
        # The final commit on stop writes the last offset.
        worker.stop_tasks([task_id])
        committed = offsets.get(name, [{"filename": str(path)}])
    finally:
        worker.stop()
    assert scraped == records, (scraped, records)  # what /metrics serves
    assert list(committed.values()) == [{"position": size}], committed
    CPU[variant] = cls.cpu_s
    return end - started


def source_write_total(worker: Worker) -> float:
    """``source-record-write-total`` of the worker's one task, as /metrics serves it."""
    families = ConnectMetricsCollector(worker, time.monotonic).collect()
    return next(sample.value for family in families for sample in family.samples
                if sample.name == "kafka_connect_source_task_metrics_source_record_write_total")


def raw_file_consume(bootstrap: str, topic: str, records: int, out_path: Path) -> float:
    """The hand-written sink: the worker's consumer settings, each value plus "\\n" appended
    to a file, next offsets tracked per partition."""
    config = WorkerConfig({"bootstrap.servers": bootstrap, "consumer.session.timeout.ms": "6000"})
    consumer = Consumer(kafka_clients.consumer_config(
        config, {"consumer.override.group.id": f"raw-{uuid.uuid4()}"}, "raw", "bench-raw"))
    consumer.subscribe([topic])
    count, first, cpu_first = 0, None, 0.0
    positions: dict[tuple[Any, Any], Any] = {}
    deadline = time.monotonic() + TIMEOUT_S
    with open(out_path, "wb") as out:
        while count < records and time.monotonic() < deadline:
            messages = consumer.consume(2000, 0.2)
            if messages and first is None:
                first, cpu_first = time.perf_counter(), time.thread_time()
            lines = []
            for message in messages:
                if message.error() is None:
                    positions[(message.topic(), message.partition())] = message.offset() + 1
                    lines.append(message.value() or b"null")
                    count += 1
            out.write(b"\n".join(lines) + b"\n" if lines else b"")
        out.flush()
    elapsed = time.perf_counter() - (first or time.perf_counter())
    CPU["raw"] = time.thread_time() - cpu_first
    consumer.close()
    assert count >= records, f"raw consumer read {count} of {records}"
    return elapsed


def worker_file_sink(bootstrap: str, topic: str, records: int, variant: str,
                     out_path: Path) -> float:
    worker, _ = make_worker(bootstrap)
    cls = TimedFileSinkTask
    cls.target, cls.count, cls.first = records, 0, None
    cls.done.clear()
    name = f"bench-fsink-{uuid.uuid4().hex[:6]}"
    connector_config = {"name": name, "topics": topic, "file": str(out_path),
                        "connector.class": f"{__name__}.TimedFileSinkConnector",
                        **CONVERTERS[variant]}
    task_config = {**connector_config, "task.class": f"{__name__}.TimedFileSinkTask"}
    worker.start_task(TaskId(name, 0), connector_config, task_config, TargetState.STARTED)
    finished = cls.done.wait(TIMEOUT_S)
    end = time.perf_counter()
    worker.stop()
    assert finished, f"sink read {cls.count} of {records}"
    assert cls.first is not None
    CPU[f"sink {variant}"] = cls.cpu_s
    return end - cls.first


SOURCE_ROWS = [  # (row, variant, offset.flush.interval.ms)
    ("file string", "string", 60_000),
    ("file json schemas off", "json-off", 60_000),
    ("file json schemas on", "json-on", 60_000),
    ("file json off + 2 SMTs", "json-off+2smt", 60_000),
    ("file string flush 100 ms", "string", 100),
    ("file string flush 1 s", "string", 1_000),
]
SINK_ROWS = [("file sink string", "string"), ("file sink json schemas off", "json-off")]
CONVERTERS_READ = {variant for _, variant in SINK_ROWS}


def run_round(bootstrap: str, admin: AdminClient, args: argparse.Namespace,
              pairs: list[tuple[bytes, bytes]], work: Path, size: int
              ) -> dict[str, dict[str, float]]:
    """One round: {row: {"raw_s", "worker_s"}}; every row against its own raw run."""
    n = args.records
    result: dict[str, dict[str, float]] = {}

    def timed(row: str, raw: Callable[[], float], ours: Callable[[], float],
              variant: str | None = None) -> None:
        CPU.clear()
        with collector_threshold(args.raw_gc_threshold):
            raw_s = raw()
        with collector_threshold(args.worker_gc_threshold):
            result[row] = {"raw_s": raw_s, "worker_s": ours()}
        cpu = ""
        if variant is not None and "raw" in CPU and variant in CPU:
            result[row]["raw_cpu_us"] = CPU["raw"] * 1e6 / n
            result[row]["worker_cpu_us"] = CPU[variant] * 1e6 / n
            cpu = (f"  cpu/rec raw {result[row]['raw_cpu_us']:.2f} us task "
                   f"{result[row]['worker_cpu_us']:.2f} us")
        print(f"  {row:<28} raw {result[row]['raw_s']:7.3f} s  worker "
              f"{result[row]['worker_s']:7.3f} s  ratio "
              f"{result[row]['raw_s'] / result[row]['worker_s']:.2f}{cpu}", flush=True)

    topics: dict[str, str] = {}
    for row, variant, flush_ms in SOURCE_ROWS:
        if args.only == "sink" and (variant in topics or variant not in CONVERTERS_READ):
            continue  # a sink-only run still writes the topics the sinks read, once each
        topic = create_topic(admin, 1)
        topics.setdefault(variant, topic)  # the sinks read the first topic of a variant
        timed(row, partial(raw_produce, bootstrap, create_topic(admin, 1), pairs),
              partial(worker_file_source, bootstrap, topic, work / "in.txt", size, n,
                      variant, flush_ms), variant)
    if args.only in (None, "source"):
        topic = create_topic(admin, 1)
        timed("generator string", partial(raw_produce, bootstrap, create_topic(admin, 1), pairs),
              partial(worker_produce, bootstrap, topic, n))
        topics["generator"] = topic
    if args.only in (None, "sink"):
        for row, variant in SINK_ROWS:
            timed(row, partial(raw_file_consume, bootstrap, topics[variant], n,
                               work / "raw-out.txt"),
                  partial(worker_file_sink, bootstrap, topics[variant], n, variant,
                          work / f"out-{variant}.txt"), f"sink {variant}")
        if "generator" in topics:
            timed("counting sink string", partial(raw_consume, bootstrap, topics["generator"], n),
                  partial(worker_consume, bootstrap, topics["generator"], n))
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--only", choices=("source", "sink"), default=None)
    parser.add_argument("--raw-gc-threshold", type=int, default=gc.get_threshold()[0],
                        help="the raw loops' first-generation collector threshold "
                        "(default: the interpreter's)")
    parser.add_argument("--worker-gc-threshold", type=int,
                        default=FIRST_GENERATION_THRESHOLD,
                        help="the worker runs' first-generation collector threshold "
                        "(default: the worker process's)")
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args()
    pairs = expected_pairs(args.records)
    rounds: list[dict[str, dict[str, float]]] = []
    with ExitStack() as stack:
        work = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        size = write_lines(work / "in.txt", args.records)
        bootstrap = os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
        if not bootstrap:
            bootstrap = stack.enter_context(EmbeddedBroker()).bootstrap_servers
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for index in range(args.rounds):
            print(f"round {index + 1}", flush=True)
            rounds.append(run_round(bootstrap, admin, args, pairs, work, size))

    n = args.records
    rows: dict[str, dict[str, Any]] = {}
    for row in rounds[0]:
        raw = statistics.median(r[row]["raw_s"] for r in rounds)
        ours = statistics.median(r[row]["worker_s"] for r in rounds)
        rows[row] = {"raw_rps": n / raw, "worker_rps": n / ours,
                     "ratio": statistics.median(r[row]["raw_s"] / r[row]["worker_s"]
                                                for r in rounds),
                     "ratios": [r[row]["raw_s"] / r[row]["worker_s"] for r in rounds]}
        if "worker_cpu_us" in rounds[0][row]:
            for key in ("raw_cpu_us", "worker_cpu_us"):
                rows[row][key] = statistics.median(r[row][key] for r in rounds)
    save(args.results, {"records": n, "value_bytes": VALUE_SIZE, "rows": rows,
                        "rounds": rounds, "gc_threshold": {
                            "worker": args.worker_gc_threshold,
                            "raw": args.raw_gc_threshold}})
    print(f"\n{'path':<28}{'raw rec/s':>12}{'worker rec/s':>14}{'ratio':>7}"
          f"{'raw cpu us':>11}{'task cpu us':>12}  ratio per round")
    for row, figures in rows.items():
        cpu = (f"{figures['raw_cpu_us']:>11.2f}{figures['worker_cpu_us']:>12.2f}"
               if "worker_cpu_us" in figures else " " * 23)
        print(f"{row:<28}{figures['raw_rps']:>12,.0f}{figures['worker_rps']:>14,.0f}"
              f"{figures['ratio']:>7.2f}{cpu}  "
              + " ".join(f"{r:.2f}" for r in figures["ratios"]))
    print(f"saved {args.results}")


if __name__ == "__main__":
    main()
