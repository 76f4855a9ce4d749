"""How fast a raw consumer reads a topic for each ``fetch.queue.backoff.ms``.

librdkafka (2.4 and later) stops fetching for a partition whose local queue holds
``queued.min.messages`` records and looks again only after ``fetch.queue.backoff.ms``
(1 s by default). This benchmark is why the worker's consumers default to 100 ms
(``worker.clients.consumer_defaults``): it writes N 100-byte records to a one-partition
topic, then reads them with a consumer built from the worker's sink consumer settings
(``worker.clients.factories.consumer_config``) for each value in ``--values``, timed
from the first record to the N-th, and reports the broker's and this process's CPU time
during each read (the read is not CPU-bound with the long backoff).

Run: ``.venv/bin/python tests/bench/bench_fetch_backoff.py [--records N]
[--values 1000,250,100,50,10,1,0] [--results FILE]`` (uses KAFKA_BOOTSTRAP_SERVERS when
set, else the embedded broker; broker CPU only for the embedded one).
Prints a table and writes ``tests/bench/results/fetch_backoff.json``.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
import uuid
from contextlib import ExitStack
from pathlib import Path

from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient

sys.path.insert(0, str(Path(__file__).parent))
from bench_pipeline import create_topic, expected_pairs, raw_produce  # noqa: E402
from saved_results import save  # noqa: E402

from worker.clients import factories as kafka_clients  # noqa: E402
from worker.config.worker_config import WorkerConfig  # noqa: E402
from worker.testing import EmbeddedBroker  # noqa: E402

RESULTS = Path(__file__).parent / "results" / "fetch_backoff.json"
TIMEOUT_S = 120.0


def read_all(bootstrap: str, topic: str, records: int, backoff_ms: int) -> float:
    """Seconds from the first record read to the N-th."""
    worker = WorkerConfig({"bootstrap.servers": bootstrap,
                           "consumer.session.timeout.ms": "6000",
                           "consumer.fetch.queue.backoff.ms": str(backoff_ms)})
    conf = kafka_clients.consumer_config(
        worker, {"consumer.override.group.id": f"bench-{uuid.uuid4().hex}"}, "bench",
        "bench-backoff")
    consumer = Consumer(conf)
    consumer.subscribe([topic])
    count, first = 0, None
    deadline = time.monotonic() + TIMEOUT_S
    try:
        while count < records and time.monotonic() < deadline:
            messages = consumer.consume(2000, 0.2)
            if messages and first is None:
                first = time.perf_counter()
            count += sum(1 for m in messages if m.error() is None)
        elapsed = time.perf_counter() - (first or time.perf_counter())
    finally:
        consumer.close()
    assert count >= records, f"read {count} of {records}"
    return elapsed


def cpu_s(pid: int | None) -> float:
    """User + system CPU seconds of process ``pid`` (NaN without one), from /proc."""
    if pid is None:
        return float("nan")
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def self_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--values", default="1000,250,100,50,10,1,0")
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args()
    values = [int(v) for v in args.values.split(",")]
    rows = []
    with ExitStack() as stack:
        bootstrap = os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
        broker: int | None = None
        if not bootstrap:
            embedded = stack.enter_context(EmbeddedBroker())
            bootstrap = embedded.bootstrap_servers
            broker = embedded.pid
        topic = create_topic(AdminClient({"bootstrap.servers": bootstrap}), 1)
        raw_produce(bootstrap, topic, expected_pairs(args.records))
        for value in values:
            broker_before, self_before = cpu_s(broker), self_cpu_s()
            elapsed = read_all(bootstrap, topic, args.records, value)
            rows.append({"fetch.queue.backoff.ms": value, "seconds": elapsed,
                         "records_per_s": args.records / elapsed,
                         "broker_cpu_s": cpu_s(broker) - broker_before,
                         "consumer_process_cpu_s": self_cpu_s() - self_before})
            print(f"fetch.queue.backoff.ms={value:<5} {elapsed:6.2f} s "
                  f"{args.records / elapsed:>12,.0f} rec/s  broker cpu "
                  f"{rows[-1]['broker_cpu_s']:.2f} s  consumer process cpu "
                  f"{rows[-1]['consumer_process_cpu_s']:.2f} s", flush=True)
    save(args.results, {"records": args.records, "rows": rows})
    print(f"saved {args.results}")


if __name__ == "__main__":
    main()
