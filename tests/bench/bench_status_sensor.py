"""Latency of the status-topic trigger: from a status change to its TriggerEvent.

* **hand-written record** — each round a fresh connector's history (RUNNING, 1 task) is on
  a 3-partition compacted status topic that also holds other connectors' records;
  ``StatusTopicTrigger(target_state="PAUSED", wait_for_tasks=False)`` is started and has
  caught up (every partition read to its end once; its INFO log line says so), then
  ``status-connector-{c}`` → PAUSED is produced (the clock starts just before
  ``produce()``) and the round ends when the trigger's event arrives.
* **raw baseline**, in alternating rounds on the same topic: a plain
  ``confluent_kafka.Consumer`` with the trigger's own librdkafka settings, assigned to every
  partition at the end (positioned: EOF seen on all), receives the same kind of record in a
  plain ``poll(0.1)`` loop. Ratio = trigger / raw: what the trigger adds (AIOConsumer's
  thread hops, parsing, evaluation, the event) on top of Kafka delivery.
* **real worker** — a ``connect-distributed`` worker runs a FileStreamSource (1 task);
  ``PUT /connectors/{c}/pause`` starts the clock, which stops when a caught-up trigger's
  event says PAUSED (connector and its task); then resume, untimed. Raw baseline in
  alternating rounds: a consumer at the end of the status topic sees both PAUSED records.

Run: ``.venv/bin/python tests/bench/bench_status_sensor.py [--rounds 30] [--worker-rounds 10]``
(``KAFKA_BOOTSTRAP_SERVERS`` selects a real Kafka; otherwise the embedded Tansu broker);
prints a table and writes ``tests/bench/results/status_sensor.json``. Target: median
below 1 s.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "tests" / "bench" / "results" / "status_sensor.json"
sys.path.insert(0, str(ROOT))

from tests.support import airflow_env  # noqa: E402

airflow_env.configure()  # before Airflow is imported: a throw-away AIRFLOW_HOME

from confluent_kafka import (  # noqa: E402
    OFFSET_END,
    Consumer,
    KafkaError,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from airflow_provider.hooks.connection import ConnectionSettings  # noqa: E402
from airflow_provider.hooks.status_topic import reader_config  # noqa: E402
from airflow_provider.triggers.status_topic import StatusTopicTrigger  # noqa: E402
from tests.conftest import DISTRIBUTED_TEST_PROPS  # noqa: E402
from worker.testing import EmbeddedBroker, free_port, terminate_process  # noqa: E402

CONN_ID = "kafka_connect_bench"
PARTITIONS = 3
HISTORY = 300  # other connectors' records already on the topic
TIMEOUT_S = 60.0


def status_value(state: str, worker: str = "10.0.0.1:8083", generation: int = 1) -> bytes:
    return json.dumps({"state": state, "trace": None, "worker_id": worker,
                       "generation": generation}, separators=(",", ":")).encode()


#: The connection's ``kafka_config`` (librdkafka overrides), set by ``--fetch-wait-ms``.
KAFKA_CONFIG: dict[str, str] = {}


def define_connection(bootstrap: str, topic: str, rest_url: str = "http://127.0.0.1:9") -> None:
    os.environ[f"AIRFLOW_CONN_{CONN_ID.upper()}"] = json.dumps({
        "conn_type": "kafka_connect", "host": rest_url,
        "extra": {"bootstrap_servers": bootstrap, "status_topic": topic,
                  "kafka_config": KAFKA_CONFIG}})


class CaughtUp(logging.Handler):
    """Sets ``event`` on the reader's "Caught up on status topic" INFO line."""

    def __init__(self) -> None:
        super().__init__()
        self.event = threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage().startswith("Caught up on status topic"):
            self.event.set()


def summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {"rounds": len(ordered), "median_s": statistics.median(ordered),
            "p90_s": ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))],
            "min_s": ordered[0], "max_s": ordered[-1]}


class RawReader:
    """A plain consumer assigned at the end of every partition, with the reader's config."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        config = reader_config(ConnectionSettings(base_url="http://unused",
                                                  bootstrap_servers=bootstrap,
                                                  kafka_config=KAFKA_CONFIG))
        config.pop("logger")
        self.consumer = Consumer(config)
        self.consumer.assign([TopicPartition(topic, p, OFFSET_END) for p in range(PARTITIONS)])
        at_end: set[int] = set()
        deadline = time.monotonic() + TIMEOUT_S
        while at_end != set(range(PARTITIONS)):
            if time.monotonic() > deadline:
                raise TimeoutError("the raw consumer never reached the end")
            message = self.consumer.poll(0.1)
            error = message.error() if message is not None else None
            if error is not None and error.code() == KafkaError._PARTITION_EOF:
                at_end.add(message.partition())

    def wait_for(self, keys: dict[bytes, bytes], deadline: float) -> float:
        """Consume until every key was seen with its value; the time of the last one."""
        pending = dict(keys)
        while pending:
            if time.monotonic() > deadline:
                raise TimeoutError(f"the raw consumer did not see {sorted(pending)}")
            message = self.consumer.poll(0.1)
            if (message is not None and message.error() is None
                    and pending.get(message.key()) == message.value()):
                del pending[message.key()]
        return time.perf_counter()

    def close(self) -> None:
        self.consumer.close()


async def trigger_round(trigger: StatusTopicTrigger, caught_up: CaughtUp,
                        change: Callable[[], None]) -> tuple[float, dict[str, Any]]:
    """Start the trigger, wait until it has caught up, then ``change()``; the latency."""
    caught_up.event.clear()
    waiting = asyncio.ensure_future(anext(trigger.run()))
    if not await asyncio.to_thread(caught_up.event.wait, TIMEOUT_S):
        raise TimeoutError("the trigger never caught up")
    await asyncio.sleep(0.3)  # in its steady consume loop, not just past the last EOF
    if waiting.done():
        raise AssertionError(f"event before the change: {waiting.result().payload}")
    start = time.perf_counter()
    await asyncio.to_thread(change)
    event = (await asyncio.wait_for(waiting, TIMEOUT_S)).payload
    return time.perf_counter() - start, event


def bench_records(bootstrap: str, rounds: int, caught_up: CaughtUp) -> dict[str, Any]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topic = f"bench-status-{uuid.uuid4().hex[:8]}"
    admin.create_topics([NewTopic(topic, PARTITIONS, 1,
                                  config={"cleanup.policy": "compact"})])[topic].result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "acks": "all",
                         "partitioner": "murmur2_random"})
    for i in range(HISTORY):  # one record per request (docs/architecture.md §6)
        producer.produce(topic, key=f"status-task-other-{i % 10}-{i}".encode(),
                         value=status_value("RUNNING"))
        producer.flush(30)
    define_connection(bootstrap, topic)
    raw = RawReader(bootstrap, topic)
    ours: list[float] = []
    baseline: list[float] = []
    try:
        for i in range(rounds):
            name = f"bench-{i}-{uuid.uuid4().hex[:6]}"
            key = f"status-connector-{name}".encode()
            for record_key, value in ((key, status_value("RUNNING")),
                                      (f"status-task-{name}-0".encode(),
                                       status_value("RUNNING"))):
                producer.produce(topic, key=record_key, value=value)
                producer.flush(30)

            def pause(k: bytes = key) -> None:
                producer.produce(topic, key=k, value=status_value("PAUSED", generation=2))
                producer.poll(0)

            trigger = StatusTopicTrigger(kafka_connect_conn_id=CONN_ID, connector=name,
                                         target_state="PAUSED", wait_for_tasks=False,
                                         timeout=TIMEOUT_S)
            latency, event = asyncio.run(trigger_round(trigger, caught_up, pause))
            assert event["status"] == "success" and event["state"] == "PAUSED", event
            ours.append(latency)
            producer.flush(30)
            raw.wait_for({key: status_value("PAUSED", generation=2)},
                         time.monotonic() + TIMEOUT_S)  # drain it

            # Raw baseline: the same kind of record, to a consumer already at the end.
            raw_key = f"status-connector-raw-{name}".encode()
            value = status_value("PAUSED")
            time.sleep(0.3)  # idle in its poll loop, as the trigger is when its record comes
            start = time.perf_counter()
            producer.produce(topic, key=raw_key, value=value)
            producer.poll(0)
            baseline.append(raw.wait_for({raw_key: value}, time.monotonic() + TIMEOUT_S)
                            - start)
            producer.flush(30)
    finally:
        raw.close()
    return {"trigger": summary(ours), "raw_consumer": summary(baseline),
            "ratio_median": statistics.median(ours) / statistics.median(baseline),
            "history_records": HISTORY, "partitions": PARTITIONS,
            "samples_s": {"trigger": ours, "raw_consumer": baseline}}


def start_worker(stack: ExitStack, bootstrap: str, workdir: Path) -> tuple[str, str]:
    group = f"bench-sensor-{uuid.uuid4().hex[:8]}"
    port = free_port()
    props = {"bootstrap.servers": bootstrap, "listeners": f"http://127.0.0.1:{port}",
             "group.id": group, "config.storage.topic": f"{group}-configs",
             "offset.storage.topic": f"{group}-offsets",
             "status.storage.topic": f"{group}-status", **DISTRIBUTED_TEST_PROPS}
    props_file = workdir / "worker.properties"
    props_file.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    log = stack.enter_context((workdir / "worker.log").open("wb"))
    proc = subprocess.Popen([sys.executable, "-m", "worker.cli.distributed", str(props_file)],
                            cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL)
    stack.callback(terminate_process, proc, 30.0, 5.0)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while True:
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                return url, f"{group}-status"
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise TimeoutError("the worker did not start; see worker.log")
        time.sleep(0.2)


def wait_status(client: httpx.Client, name: str, state: str) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while time.monotonic() < deadline:
        response = client.get(f"/connectors/{name}/status")
        if response.status_code == 200:
            body = response.json()
            if body["connector"]["state"] == state and [t["state"] for t in body["tasks"]] \
                    == [state]:
                return
        time.sleep(0.05)
    raise TimeoutError(f"{name} did not reach {state}")


def bench_worker(bootstrap: str, rounds: int, caught_up: CaughtUp, workdir: Path
                 ) -> dict[str, Any]:
    with ExitStack() as stack:
        url, topic = start_worker(stack, bootstrap, workdir)
        client = stack.enter_context(httpx.Client(base_url=url, timeout=30))
        source = workdir / "input.txt"
        source.write_text("".join(f"line {i}\n" for i in range(100)))
        name = "bench-file-source"
        response = client.put(f"/connectors/{name}/config", json={
            "connector.class": "FileStreamSource", "file": str(source),
            "topic": f"bench-lines-{uuid.uuid4().hex[:8]}", "tasks.max": "1"})
        response.raise_for_status()
        wait_status(client, name, "RUNNING")
        define_connection(bootstrap, topic, url)
        keys = {f"status-connector-{name}".encode(), f"status-task-{name}-0".encode()}

        def pause() -> None:
            assert client.put(f"/connectors/{name}/pause").status_code == 202

        def resume() -> None:
            assert client.put(f"/connectors/{name}/resume").status_code == 202
            wait_status(client, name, "RUNNING")
            time.sleep(1.0)  # REST shows RUNNING before its records are on the topic

        ours: list[float] = []
        baseline: list[float] = []
        for _ in range(rounds):
            trigger = StatusTopicTrigger(kafka_connect_conn_id=CONN_ID, connector=name,
                                         target_state="PAUSED", expected_tasks=1,
                                         timeout=TIMEOUT_S)
            latency, event = asyncio.run(trigger_round(trigger, caught_up, pause))
            assert event["status"] == "success" and event["tasks"] == {"0": "PAUSED"}, event
            ours.append(latency)
            resume()
            # Raw baseline, in its own round: a consumer at the end sees both records.
            raw = RawReader(bootstrap, topic)
            try:
                time.sleep(0.3)
                start = time.perf_counter()
                pause()
                baseline.append(wait_paused(raw, keys) - start)
            finally:
                raw.close()
            resume()
        return {"trigger": summary(ours), "raw_consumer": summary(baseline),
                "ratio_median": statistics.median(ours) / statistics.median(baseline),
                "samples_s": {"trigger": ours, "raw_consumer": baseline}}


def wait_paused(raw: RawReader, keys: set[bytes]) -> float:
    """Like :meth:`RawReader.wait_for`, matching the worker's records by their state."""
    pending = set(keys)
    deadline = time.monotonic() + TIMEOUT_S
    while pending:
        if time.monotonic() > deadline:
            raise TimeoutError(f"the raw consumer did not see {sorted(pending)} PAUSED")
        message = raw.consumer.poll(0.1)
        if (message is not None and message.error() is None and message.key() in pending
                and json.loads(message.value()).get("state") == "PAUSED"):
            pending.discard(message.key())
    return time.perf_counter()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--worker-rounds", type=int, default=10)
    parser.add_argument("--fetch-wait-ms", type=int, default=None,
                        help="fetch.wait.max.ms of the readers (default: the reader's 100)")
    args = parser.parse_args()
    if args.fetch_wait_ms is not None:
        KAFKA_CONFIG["fetch.wait.max.ms"] = str(args.fetch_wait_ms)
    logging.basicConfig(level=logging.WARNING)
    caught_up = CaughtUp()
    reader_log = logging.getLogger("airflow_provider.hooks.status_topic")
    reader_log.setLevel(logging.INFO)
    reader_log.addHandler(caught_up)
    reader_log.propagate = False
    try:
        with ExitStack() as stack:
            bootstrap = os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
            kind = "env"
            if not bootstrap:
                bootstrap, kind = stack.enter_context(EmbeddedBroker()).bootstrap_servers, \
                    "embedded Tansu"
            workdir = Path(stack.enter_context(tempfile.TemporaryDirectory()))
            records = bench_records(bootstrap, args.rounds, caught_up)
            worker = (bench_worker(bootstrap, args.worker_rounds, caught_up, workdir)
                      if args.worker_rounds else None)
    finally:
        airflow_env.cleanup()
    result = {"kafka": kind, "reader_kafka_config": KAFKA_CONFIG,
              "hand_written_record": records, "real_worker_pause": worker,
              "machine": f"{platform.machine()}, {os.cpu_count()} cores, "
                         f"Python {platform.python_version()}"}
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(f"{'measure':<34}{'median s':>10}{'p90 s':>9}{'min s':>9}{'max s':>9}")
    rows = [("record → event (trigger)", records["trigger"]),
            ("record → message (raw consumer)", records["raw_consumer"])]
    if worker:
        rows += [("PUT /pause → event (trigger)", worker["trigger"]),
                 ("PUT /pause → records (raw)", worker["raw_consumer"])]
    for label, s in rows:
        print(f"{label:<34}{s['median_s']:>10.3f}{s['p90_s']:>9.3f}{s['min_s']:>9.3f}"
              f"{s['max_s']:>9.3f}")
    print(f"ratio trigger/raw (median): record {records['ratio_median']:.2f}"
          + (f", worker pause {worker['ratio_median']:.2f}" if worker else "")
          + " (target: median < 1 s)")
    print(f"saved {RESULTS}")


if __name__ == "__main__":
    main()
