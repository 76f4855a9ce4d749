"""The fault suite's pipeline and its sequence checker.

The pipeline is ``SequenceGenerator`` (one stream of consecutive sequence numbers per task,
keyed by task so each stream stays in one partition) → a topic → ``FileStreamSink`` (one
line per record, in the order the sink received them). The checker reads the sink's file
and reports, per stream, what at-least-once delivery allows and what it does not:

- **lost**: sequence numbers below the highest one seen that never arrived (a gap);
- **duplicated**: arrivals of a number already seen (a replay after a restart or a
  retried produce — allowed, counted);
- **reordered**: a number seen for the first time after a higher one (a gap filled late —
  never allowed within one partition).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from confluent_kafka.admin import AdminClient

from tests.support import WorkerProcess, create_topic, wait_for_connector_state, wait_until

STRING_CONVERTER = "org.apache.kafka.connect.storage.StringConverter"
#: Worker properties of every fault case's worker: plain strings on the wire.
WORKER_PROPS = {"key.converter": STRING_CONVERTER, "value.converter": STRING_CONVERTER}


@dataclass
class StreamReport:
    """What one stream (one generator task) delivered."""

    expected: int
    received: int = 0
    lost: list[int] = field(default_factory=list)
    duplicated: int = 0
    reordered: int = 0


def check_sequences(lines: Iterable[str], expected: Mapping[int, int]
                    ) -> dict[int, StreamReport]:
    """Per stream, lost/duplicated/reordered for lines ``"{task}-{seq:012d}-..."``.

    ``expected`` maps each stream to how many numbers it must deliver (0..n-1): numbers
    never seen below that bound are lost, even above the highest one seen.
    """
    reports = {task: StreamReport(count) for task, count in expected.items()}
    seen: dict[int, set[int]] = {task: set() for task in expected}
    highest: dict[int, int] = dict.fromkeys(expected, -1)
    for line in lines:
        task_text, seq_text, _ = line.split("-", 2)
        task, seq = int(task_text), int(seq_text)
        report = reports[task]
        report.received += 1
        if seq in seen[task]:
            report.duplicated += 1
            continue
        if seq < highest[task]:
            report.reordered += 1
        seen[task].add(seq)
        highest[task] = max(highest[task], seq)
    for task, report in reports.items():
        report.lost = sorted(set(range(report.expected)) - seen[task])
    return reports


def sink_lines(path: Path) -> list[str]:
    """The whole lines the sink has written so far (it may be mid-way through one)."""
    if not path.exists():
        return []
    return path.read_text(encoding="utf-8").split("\n")[:-1]


@dataclass
class Pipeline:
    """A generator → topic → file sink pipeline on one worker's REST API."""

    client: httpx.Client
    topic: str
    sink_file: Path
    tasks: int = 2
    count: int = 3000
    rate: float = 100.0
    name: str = "faults"

    @property
    def source(self) -> str:
        return f"{self.name}-source"

    @property
    def sink(self) -> str:
        return f"{self.name}-sink"

    def configs(self) -> dict[str, dict[str, str]]:
        return {
            self.source: {"connector.class": "SequenceGenerator", "topic": self.topic,
                          "tasks.max": str(self.tasks), "count": str(self.count),
                          "rate": str(self.rate), "message.size": "40",
                          "batch.size": "50"},
            self.sink: {"connector.class": "FileStreamSink", "topics": self.topic,
                        "file": str(self.sink_file)},
        }

    def create(self, timeout: float = 90.0) -> None:
        for name, config in self.configs().items():
            response = self.client.put(f"/connectors/{name}/config", json=config)
            assert response.status_code == 201, response.text
        self.wait_running(timeout)

    def wait_running(self, timeout: float = 90.0) -> None:
        for name in (self.source, self.sink):
            wait_for_connector_state(self.client, name, "RUNNING", tasks_state="RUNNING",
                                     timeout=timeout)

    def delivered(self) -> int:
        """Distinct records in the sink's file."""
        return len(set(sink_lines(self.sink_file)))

    def wait_delivered(self, at_least: int, timeout: float) -> float:
        """Wait until ``at_least`` distinct records arrived; the seconds it took."""
        started = time.monotonic()
        wait_until(lambda: self.delivered() >= at_least, timeout=timeout, interval=0.25,
                   message=lambda: f"{self.delivered()} of {at_least} records delivered")
        return time.monotonic() - started

    def total(self) -> int:
        return self.tasks * self.count

    def report(self) -> dict[int, StreamReport]:
        return check_sequences(sink_lines(self.sink_file), dict.fromkeys(range(self.tasks),
                                                                          self.count))


def start_standalone(standalone_worker: Any, admin: AdminClient, topic: str,
                     sink_file: Path, *, rate: float, bootstrap: str | None = None
                     ) -> tuple[WorkerProcess, Pipeline]:
    """A 2-partition ``topic``, a standalone worker (``WORKER_PROPS``, on ``bootstrap``
    when given) and the default pipeline on it, created and RUNNING."""
    create_topic(admin, topic, partitions=2)
    overrides = {**WORKER_PROPS, **({"bootstrap.servers": bootstrap} if bootstrap else {})}
    worker = standalone_worker(overrides)
    pipeline = Pipeline(worker.client, topic, sink_file, rate=rate)
    pipeline.create()
    return worker, pipeline


def summarize(case: str, reports: Mapping[int, StreamReport], **figures: Any) -> str:
    """One line for the fault matrix (docs/reliability.md), printed by each case."""
    lost = sum(len(r.lost) for r in reports.values())
    duplicated = sum(r.duplicated for r in reports.values())
    reordered = sum(r.reordered for r in reports.values())
    extra = " ".join(f"{k}={v:.1f}" if isinstance(v, float) else f"{k}={v}"
                     for k, v in figures.items())
    return (f"FAULT {case}: records={sum(r.expected for r in reports.values())} "
            f"lost={lost} duplicated={duplicated} reordered={reordered} {extra}").rstrip()


def assert_nothing_lost_or_reordered(reports: Mapping[int, StreamReport]) -> None:
    problems = {task: (r.lost[:10], r.reordered) for task, r in reports.items()
                if r.lost or r.reordered}
    assert not problems, f"lost (first 10) / reordered per stream: {problems}"
