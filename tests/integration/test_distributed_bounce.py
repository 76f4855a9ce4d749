"""Bounce test in the spirit of Kafka's ``test_bounce``: a 3-worker cluster runs a generator
source (3 tasks, deterministic sequence numbers) and a FileStreamSink writing every value to
a file, while every worker is bounced in turn. The file is then checked per source task:

* clean bounces (SIGTERM, restart): no gaps and no duplicates — revoked tasks commit their
  offsets before another worker may start them, a stopping worker leaves the group;
* hard bounces (SIGKILL, restart): no gaps; duplicates are allowed (at-least-once).
"""

from __future__ import annotations

import time
from collections import defaultdict
from pathlib import Path

import pytest

from tests.conftest import DistributedClusterFactory
from tests.integration._cluster_helpers import generator_config, wait_agreed_status
from tests.support import unique_name, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SOURCE_TASKS = 3
RECORDS_PER_TASK = 2000
RATE = 25  # per task and second: production (80 s) spans every bounce


def _read_sequences(path: Path) -> dict[int, list[int]]:
    seen: dict[int, list[int]] = defaultdict(list)
    if not path.exists():
        return seen
    for line in path.read_text().splitlines():
        task, seq, _pad = line.split("-", 2)
        seen[int(task)].append(int(seq))
    return seen


def _complete(path: Path) -> bool:
    seen = _read_sequences(path)
    return len(seen) == SOURCE_TASKS and all(
        set(seqs) >= set(range(RECORDS_PER_TASK)) for seqs in seen.values())


def _read_topic(bootstrap: str, topic: str, idle_s: float = 5.0
                ) -> list[tuple[int, int, str]]:
    """(partition, offset, value) of every record of every partition, from the start."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": unique_name("diag"),
                         "enable.auto.commit": False})
    found: list[tuple[int, int, str]] = []
    try:
        partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
        quiet_until = time.monotonic() + idle_s
        while time.monotonic() < quiet_until:
            for msg in consumer.consume(500, 0.5):
                if msg.error() is None:
                    found.append((msg.partition(), msg.offset(), msg.value().decode()))
                    quiet_until = time.monotonic() + idle_s
    finally:
        consumer.close()
    return found


def _diagnose(sink_file: Path, bootstrap: str, topic: str) -> str:
    """Where missing records went missing: never produced (source) or not delivered (sink)."""
    in_sink = _read_sequences(sink_file)
    in_topic: dict[int, set[int]] = defaultdict(set)
    where: dict[tuple[int, int], tuple[int, int]] = {}
    for partition, offset, value in _read_topic(bootstrap, topic):
        task, seq, _pad = value.split("-", 2)
        in_topic[int(task)].add(int(seq))
        where[int(task), int(seq)] = (partition, offset)
    report = []
    for task in range(SOURCE_TASKS):
        missing = sorted(set(range(RECORDS_PER_TASK)) - set(in_sink.get(task, [])))
        not_produced = [s for s in missing if s not in in_topic[task]]
        around = [where.get((task, s)) for s in (missing[0] - 1, missing[-1] + 1)] \
            if missing else []
        report.append(f"task {task}: {len(missing)} missing from the sink "
                      f"(first {missing[:5]}), {len(not_produced)} of them not in the topic; "
                      f"neighbours at (partition, offset) {around}")
    return "; ".join(report)


@pytest.mark.parametrize("graceful", [True, False], ids=["clean", "hard"])
def test_rolling_bounce_loses_nothing(distributed_cluster: DistributedClusterFactory,
                                      unique_topic, tmp_path: Path,  # type: ignore[no-untyped-def]
                                      kafka_bootstrap: str, graceful: bool) -> None:
    cluster = distributed_cluster(3)
    topic = unique_topic()
    sink_file = tmp_path / "sink.txt"
    source, sink = unique_name("src"), unique_name("sink")
    entry = cluster.workers[0]
    config = generator_config(topic, SOURCE_TASKS, count=RECORDS_PER_TASK, rate=RATE)
    assert entry.client.put(f"/connectors/{source}/config", json=config).status_code == 201
    assert entry.client.put(f"/connectors/{sink}/config", json={
        "connector.class": "FileStreamSink", "topics": topic, "file": str(sink_file),
        "tasks.max": "1",
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": "org.apache.kafka.connect.storage.StringConverter",
    }).status_code == 201
    wait_agreed_status(cluster.workers, source, "RUNNING", task_count=SOURCE_TASKS)
    wait_agreed_status(cluster.workers, sink, "RUNNING", task_count=1)

    for worker in cluster.workers:
        wait_until(lambda: sink_file.exists() and sink_file.stat().st_size > 0, timeout=60,
                   message="the sink writing")
        before = sink_file.stat().st_size
        worker.restart(graceful=graceful)
        others = [w for w in cluster.workers]
        wait_agreed_status(others, source, "RUNNING", task_count=SOURCE_TASKS, timeout=90)
        wait_agreed_status(others, sink, "RUNNING", task_count=1, timeout=90)
        wait_until(lambda b=before: sink_file.stat().st_size > b or _complete(sink_file),
                   timeout=60, message="the sink making progress after the bounce")

    wait_until(lambda: _complete(sink_file), timeout=120, interval=1.0,
               message=lambda: f"all {RECORDS_PER_TASK} records of every task in the sink; "
                               f"{_diagnose(sink_file, kafka_bootstrap, topic)}")
    seen = _read_sequences(sink_file)
    for task, seqs in seen.items():
        assert set(seqs) == set(range(RECORDS_PER_TASK)), f"task {task}: gaps or strays"
        if graceful:
            duplicates = len(seqs) - len(set(seqs))
            assert duplicates == 0, f"task {task}: {duplicates} duplicates after clean bounces"
