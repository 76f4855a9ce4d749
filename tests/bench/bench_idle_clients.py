"""What an idle task client costs: librdkafka's wake-ups per thread, and memory with and
without statistics.

Why a worker's idle CPU grows with its tasks even when no task does anything: each task
owns a librdkafka client (a source task's producer, a sink task's consumer), and each
client's threads wake on their own timers. This script builds one producer and one
consumer with the worker's task-client settings (``worker.clients.factories``: the
producer with statistics, as for ``/metrics``, the consumer without), lets the consumer
join its group on a topic with no traffic, serves both every 100 ms without waiting (as the
worker's idle poller does), and counts each librdkafka thread's context switches over ``--seconds``.

Memory: ``--clients`` N producers (each sends one record to its own topic) and N consumers
(each assigned its own topic), built with statistics (``statistics.interval.ms`` as the
worker sets it for task clients, with a ``stats_cb``) and then, in a fresh process, without;
the growth of this process's RSS divided by N, after 10 s of serving them.

Run: ``.venv/bin/python tests/bench/bench_idle_clients.py [--seconds 10] [--clients 50]
[--results FILE]`` (uses KAFKA_BOOTSTRAP_SERVERS when set, else the embedded broker).
Prints tables and writes ``tests/bench/results/idle_clients.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
import uuid
from contextlib import ExitStack
from pathlib import Path

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from saved_results import save  # tests/bench/, this script's directory

from worker.clients import factories as kafka_clients
from worker.config.worker_config import WorkerConfig
from worker.testing import EmbeddedBroker

RESULTS = Path(__file__).parent / "results" / "idle_clients.json"


def switches() -> dict[str, tuple[str, int]]:
    """Thread id → (name, voluntary + involuntary context switches) of this process."""
    out = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            name = Path(f"/proc/self/task/{tid}/comm").read_text().strip()
            status = Path(f"/proc/self/task/{tid}/status").read_text()
        except OSError:
            continue  # the thread ended
        counts = [int(line.split()[1]) for line in status.splitlines()
                  if "ctxt_switches:" in line]
        out[tid] = (name, sum(counts))
    return out


def rss_kb() -> int:
    status = Path("/proc/self/status").read_text()
    return int(next(line for line in status.splitlines() if line.startswith("VmRSS")).split()[1])


def memory_per_client(bootstrap: str, clients: int, statistics: bool) -> dict[str, float]:
    """kB of RSS per idle producer and per idle assigned consumer (this process)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topics = [f"bench-mem-{uuid.uuid4().hex[:8]}" for _ in range(clients)]
    for future in admin.create_topics([NewTopic(t, 1, 1) for t in topics]).values():
        future.result(30)
    worker = WorkerConfig({"bootstrap.servers": bootstrap,
                           "consumer.session.timeout.ms": "6000"})
    stats: dict[str, object] = {"stats_cb": ignore} if statistics else {}
    before = rss_kb()
    producers = []
    for i, topic in enumerate(topics):
        producer = Producer({**kafka_clients.producer_config(
            worker, {}, f"bench-p{i}", statistics=statistics), **stats})
        producer.produce(topic, b"x")
        producers.append(producer)
    for producer in producers:
        assert producer.flush(30) == 0
    with_producers = rss_kb()
    consumers = []
    for i, topic in enumerate(topics):
        conf = kafka_clients.consumer_config(
            worker, {"consumer.override.group.id": f"bench-{uuid.uuid4().hex}"}, "bench",
            f"bench-c{i}")
        if statistics:  # asked for explicitly: sink tasks' consumers have none by default
            conf["statistics.interval.ms"] = str(kafka_clients.statistics_interval_ms(worker))
        consumer = Consumer({**conf, **stats})
        consumer.subscribe([topic])
        consumers.append(consumer)
    read = serve_rounds(consumers, producers, 60.0, until_read=clients)
    assert read >= clients, f"{read} of {clients} consumers read their record"
    serve_rounds(consumers, producers, 10.0)  # the measured window: 10 s of idle rounds
    after = rss_kb()
    for consumer in consumers:
        consumer.close()
    return {"producer_kb": (with_producers - before) / clients,
            "consumer_kb": (after - with_producers) / clients}


def serve_rounds(consumers: list[Consumer], producers: list[Producer], seconds: float,
                 until_read: int | None = None) -> int:
    """Serve every client without waiting once per 100 ms round, as the worker's idle
    poller does, for ``seconds`` or until ``until_read`` records were consumed (each
    consumer's topic holds one); returns the records consumed."""
    rounds, read = threading.Event(), 0  # never set: its wait() paces the rounds
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and (until_read is None or read < until_read):
        for consumer in consumers:
            read += sum(1 for m in consumer.consume(10, 0) if m.error() is None)
        for producer in producers:
            producer.poll(0)
        rounds.wait(0.1)
    return read


def ignore(_stats: str) -> None:
    """The statistics callback: the worker parses them; that cost is not measured here."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--memory-only", choices=("with", "without"), default=None,
                        help=argparse.SUPPRESS)  # the child process of the memory figures
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args()
    if args.memory_only:
        print(json.dumps(memory_per_client(os.environ["KAFKA_BOOTSTRAP_SERVERS"], args.clients,
                                           args.memory_only == "with")))
        return
    with ExitStack() as stack:
        bootstrap = os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
        if not bootstrap:
            bootstrap = stack.enter_context(EmbeddedBroker()).bootstrap_servers
        admin = AdminClient({"bootstrap.servers": bootstrap})
        topic = f"bench-wakes-{uuid.uuid4().hex[:8]}"
        for future in admin.create_topics([NewTopic(topic, 1, 1)]).values():
            future.result(30)
        worker = WorkerConfig({"bootstrap.servers": bootstrap,
                               "consumer.session.timeout.ms": "6000"})
        producer_conf = kafka_clients.producer_config(worker, {}, "bench-p", statistics=True)
        consumer_conf = kafka_clients.consumer_config(
            worker, {"consumer.override.group.id": f"bench-{uuid.uuid4().hex}"}, "bench",
            "bench-c")
        threads_before = set(os.listdir("/proc/self/task"))
        producer = Producer({**producer_conf, "stats_cb": ignore})
        producer.produce(topic, b"x")
        assert producer.flush(30) == 0
        producer_threads = set(os.listdir("/proc/self/task")) - threads_before
        consumer = Consumer(consumer_conf)
        consumer.subscribe([topic])
        # Assigned and past its first fetch: it read the topic's one record.
        read = serve_rounds([consumer], [producer], 60.0, until_read=1)
        assert read == 1, "the consumer did not read its topic's record"
        try:
            start = switches()
            serve_rounds([consumer], [producer], args.seconds)  # the measured window
            end = switches()
        finally:
            consumer.close()
        memory = {}  # each in a fresh process, so that one does not reuse the other's memory
        for mode in ("with", "without"):
            child = subprocess.run(
                [sys.executable, __file__, "--memory-only", mode, "--clients", str(args.clients)],
                env={**os.environ, "KAFKA_BOOTSTRAP_SERVERS": bootstrap}, capture_output=True,
                text=True, timeout=300, check=True)
            memory[f"{mode} statistics"] = json.loads(child.stdout.strip().splitlines()[-1])
    rows = []
    for tid, (name, count) in sorted(end.items(), key=lambda item: item[1][0]):
        if tid in start and tid not in threads_before and name.startswith("rdk:"):
            client = "producer" if tid in producer_threads else "consumer"
            rows.append({"client": client, "thread": name,
                         "wakes_per_s": (count - start[tid][1]) / args.seconds})
    for client in ("producer", "consumer"):
        mine = [r for r in rows if r["client"] == client]
        for row in mine:
            print(f"{client:<9} {row['thread']:<16} {row['wakes_per_s']:6.1f} wakes/s")
        print(f"{client:<9} {'total':<16} {sum(r['wakes_per_s'] for r in mine):6.1f} wakes/s")
    for mode, figures in memory.items():
        print(f"{mode:<18} producer {figures['producer_kb']:6.0f} kB, "
              f"consumer {figures['consumer_kb']:6.0f} kB per idle client")
    save(args.results, {"seconds": args.seconds, "rows": rows, "clients": args.clients,
                        "memory_kb_per_client": memory})
    print(f"saved {args.results}")


if __name__ == "__main__":
    main()
