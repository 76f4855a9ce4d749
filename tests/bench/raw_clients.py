"""The raw baseline of ``bench_scale.py``: the Kafka clients and traffic of the worker's N
tasks, without the worker.

For each topic of ``--topics``: one producer sending a record a second to it (as a
``SequenceGenerator`` task at ``rate=1``) and one consumer in a group of its own reading
it (as a ``FileStreamSink`` task), both built with the worker's task-client settings
(``worker.clients.factories``, the producers with statistics as the worker asks for
them). All of them are served from this one thread every 100 ms without waiting, as the
worker's idle poller serves idle sinks: no task threads, no conversion, no REST server.
Its CPU is the floor under the worker's CPU with the same clients.

Prints ``ready`` once every consumer has read a record (its group joined), then keeps
serving until ``--seconds`` have passed or its standard input closes.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
import uuid
from pathlib import Path

from confluent_kafka import Consumer, Producer

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from worker.clients import factories as kafka_clients  # noqa: E402
from worker.config.worker_config import WorkerConfig  # noqa: E402

ROUND_S = 0.1


def ignore(_stats: str) -> None:
    """The producers' statistics callback (the worker parses them; not measured here)."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topics", required=True, help="comma-separated")
    parser.add_argument("--seconds", type=float, default=600.0, help="the longest it runs")
    args = parser.parse_args()
    topics = [t for t in args.topics.split(",") if t]
    worker = WorkerConfig({"bootstrap.servers": args.bootstrap})
    run = uuid.uuid4().hex[:8]
    producers = [Producer({**kafka_clients.producer_config(worker, {}, f"raw-p{i}",
                                                           statistics=True),
                           "stats_cb": ignore}) for i in range(len(topics))]
    consumers = []
    for i, topic in enumerate(topics):
        consumer = Consumer(kafka_clients.consumer_config(
            worker, {"consumer.override.group.id": f"raw-{run}-{i}"}, "raw", f"raw-c{i}"))
        consumer.subscribe([topic])
        consumers.append(consumer)
    stop = threading.Event()

    def stop_at_end_of_input() -> None:
        sys.stdin.read()
        stop.set()

    threading.Thread(target=stop_at_end_of_input, daemon=True).start()
    deadline = time.monotonic() + args.seconds
    next_send = [time.monotonic()] * len(producers)
    have_read = [False] * len(consumers)
    ready = False
    value = b"x" * 40
    try:
        while not stop.is_set() and time.monotonic() < deadline:
            for i, consumer in enumerate(consumers):
                if any(m.error() is None for m in consumer.consume(100, 0)):
                    have_read[i] = True
            now = time.monotonic()
            for i, producer in enumerate(producers):
                if now >= next_send[i]:
                    producer.produce(topics[i], value)
                    next_send[i] += 1.0
                producer.poll(0)
            if not ready and all(have_read):
                ready = True
                print("ready", flush=True)
            stop.wait(ROUND_S)
    finally:
        for consumer in consumers:
            consumer.close()
        for producer in producers:
            producer.flush(5)


if __name__ == "__main__":
    main()
