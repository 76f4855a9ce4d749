"""How often an idle task client's librdkafka threads wake up, per thread.

Why a worker's idle CPU grows with its tasks even when no task does anything: each task
owns a librdkafka client (a source task's producer, a sink task's consumer), and each
client's threads wake on their own timers. This script builds one producer and one
consumer with the worker's task-client settings (``worker.runtime.kafka_clients``,
statistics on, as for ``/metrics``), lets the consumer join its group on a topic with no
traffic, serves both every 100 ms without waiting (as the worker's idle poller does),
and counts each librdkafka thread's context switches over ``--seconds``.

Run: ``.venv/bin/python tests/bench/bench_client_wakes.py [--seconds 10]
[--results FILE]`` (uses KAFKA_BOOTSTRAP_SERVERS when set, else the embedded broker).
Prints a table and writes ``tests/bench/results/client_wakes.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import threading
import time
import uuid
from contextlib import ExitStack
from pathlib import Path

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from worker.config.worker_config import WorkerConfig
from worker.runtime import kafka_clients
from worker.testing import EmbeddedBroker

RESULTS = Path(__file__).parent / "results" / "client_wakes.json"


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


def ignore(_stats: str) -> None:
    """The statistics callback: the worker parses them; that cost is not measured here."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args()
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
            "bench-c", statistics=True)
        threads_before = set(os.listdir("/proc/self/task"))
        producer = Producer({**producer_conf, "stats_cb": ignore})
        producer.produce(topic, b"x")
        assert producer.flush(30) == 0
        producer_threads = set(os.listdir("/proc/self/task")) - threads_before
        consumer = Consumer({**consumer_conf, "stats_cb": ignore})
        consumer.subscribe([topic])
        deadline = time.monotonic() + 60
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.consume(10, 0.2)
        assert consumer.assignment(), "the consumer was not assigned its partition"
        stop = threading.Event()

        def serve() -> None:
            while not stop.is_set():
                consumer.consume(100, 0)
                producer.poll(0)
                stop.wait(0.1)

        server = threading.Thread(target=serve, name="serve")
        server.start()
        try:
            time.sleep(3)  # the assignment's first fetches and commits settle
            start = switches()
            time.sleep(args.seconds)
            end = switches()
        finally:
            stop.set()
            server.join(10)
            consumer.close()
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
    summary = {"seconds": args.seconds, "rows": rows,
               "machine": f"{platform.machine()}, {os.cpu_count()} cores, "
                          f"Python {platform.python_version()}",
               "broker": "KAFKA_BOOTSTRAP_SERVERS" if os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
                         else "embedded Tansu"}
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(summary, indent=2) + "\n")
    print(f"saved {args.results}")


if __name__ == "__main__":
    main()
