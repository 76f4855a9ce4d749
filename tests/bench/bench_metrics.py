"""What counting for ``/metrics`` costs the task loops, in process (no broker).

The tasks record metrics once per batch (``worker.runtime.metrics.tasks``). This measures,
per batch of N records, the calls a batch makes and puts them against the work the same
batch does anyway, measured in the same run:

- sink: ``WorkerSinkTask._convert`` of N consumed 100-byte messages (StringConverter, and
  JsonConverter with schemas off) against ``record_read`` + ``record_put`` (with its two
  clock reads) + the active-count update, i.e. what ``execute``/``_deliver`` add;
- source: ``record_poll`` (with its two clock reads) + ``record_write`` against
  ``FileStreamSourceTask.poll()`` returning N 100-byte lines plus the StringConverter on
  each — without transformations and ``produce``, so the source ratio is an upper bound.

The figure is the overhead ratio ``metrics / baseline`` (e.g. 0.001 = 0.1 %). Run:
``.venv/bin/python tests/bench/bench_metrics.py [--rounds R] [--results FILE]``; prints a
table and writes ``tests/bench/results/metrics.json``.
"""

from __future__ import annotations

import argparse
import json
import platform
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from worker.api.records import SourceRecord
from worker.api.task import SourceTaskContext
from worker.builtin.connectors.file_stream import FileStreamSinkTask, FileStreamSourceTask
from worker.builtin.converters.json_converter import JsonConverter
from worker.builtin.converters.string_bytes import StringConverter
from worker.runtime.chain import TransformationChain
from worker.runtime.metrics.tasks import TaskMetrics
from worker.runtime.sink_task import WorkerSinkTask
from worker.runtime.source_offsets import StoreOffsetReader
from worker.runtime.status import StatusReporter
from worker.storage.base import TargetState, TaskId
from worker.storage.memory import MemoryOffsetBackingStore, MemoryStatusBackingStore

RESULTS = Path(__file__).parent / "results" / "metrics.json"
VALUE = b'{"line": "' + b"x" * 87 + b'"}'  # 100 bytes, valid JSON


class Message:
    """The part of confluent_kafka.Message the sink's convert loop reads."""

    __slots__ = ("_offset",)

    def __init__(self, offset: int) -> None:
        self._offset = offset

    def error(self) -> None:
        return None

    def topic(self) -> str:
        return "bench"

    def partition(self) -> int:
        return 0

    def offset(self) -> int:
        return self._offset

    def key(self) -> None:
        return None

    def value(self) -> bytes:
        return VALUE

    def timestamp(self) -> tuple[int, int]:
        return 1, 1_700_000_000_000

    def headers(self) -> None:
        return None


class _Context(SourceTaskContext):
    def __init__(self) -> None:
        self._reader = StoreOffsetReader(MemoryOffsetBackingStore(), "bench")

    @property
    def configs(self) -> dict[str, str]:
        return {}

    @property
    def offset_storage_reader(self) -> StoreOffsetReader:
        return self._reader


def sink_task(json_values: bool) -> WorkerSinkTask:
    value = JsonConverter() if json_values else StringConverter()
    value.configure({"schemas.enable": "false"}, False)
    key = StringConverter()
    key.configure({}, True)
    task = WorkerSinkTask(
        TaskId("bench", 0), FileStreamSinkTask(), {}, TargetState.STARTED,
        StatusReporter(MemoryStatusBackingStore(), "bench"), consumer_config={},
        topics=["bench"], topics_regex="", key_converter=key, value_converter=value,
        chain=TransformationChain([]), offset_flush_interval_ms=60000)
    task.seen_topics.add("bench")
    return task


def best_of(fn: Callable[[], Any], repeat: int) -> float:
    """The fastest of ``repeat`` runs, in seconds (the least disturbed by the machine)."""
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return min(times)


def sink_case(json_values: bool, batch: int, repeat: int) -> dict[str, float]:
    task = sink_task(json_values)
    messages: Any = [Message(i) for i in range(batch)]
    metrics = task.metrics
    clock = time.monotonic

    def baseline() -> None:
        task._convert(messages)

    def counting() -> None:
        for _ in range(100):
            metrics.record_read(batch)
            started = clock()
            metrics.record_put(batch, clock() - started)
            task._record_active()

    base = best_of(baseline, repeat)
    cost = best_of(counting, repeat) / 100
    return {"baseline_us": base * 1e6, "metrics_us": cost * 1e6, "ratio": cost / base}


def source_case(batch: int, repeat: int, workdir: Path) -> dict[str, float]:
    converter = StringConverter()
    converter.configure({}, False)
    path = workdir / f"lines-{batch}.txt"
    path.write_bytes((VALUE + b"\n") * (batch * (repeat + 1)))
    task = FileStreamSourceTask()
    task.initialize(_Context())
    task.start({"file": str(path), "topic": "bench", "batch.size": str(batch)})
    metrics = TaskMetrics("bench", 0)
    clock = time.monotonic
    polled: list[int] = []

    def baseline() -> None:
        records: list[SourceRecord] = task.poll() or []
        convert = converter.from_connect_data
        for record in records:
            convert(record.topic, record.value_schema, record.value)
        polled.append(len(records))

    def counting() -> None:
        for _ in range(100):
            started = clock()
            metrics.record_poll(batch, clock() - started)
            metrics.record_write(batch)

    base = best_of(baseline, repeat)
    task.stop()
    assert min(polled) == batch, f"poll() returned {min(polled)} records, not {batch}"
    cost = best_of(counting, repeat) / 100
    return {"baseline_us": base * 1e6, "metrics_us": cost * 1e6, "ratio": cost / base}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args()
    cases: dict[str, Callable[[int], dict[str, float]]] = {
        "sink StringConverter": lambda n: sink_case(False, n, args.repeat),
        "sink JsonConverter": lambda n: sink_case(True, n, args.repeat),
        "source FileStreamSource (upper bound)": lambda n: source_case(
            n, args.repeat, Path(tempfile.mkdtemp())),
    }
    results: dict[str, Any] = {"python": platform.python_version(), "rounds": []}
    print(f"{'path':40} {'batch':>6} {'baseline µs':>12} {'metrics µs':>11} {'ratio':>9}")
    for round_no in range(args.rounds):
        figures = []
        for name, run in cases.items():
            for batch in (100, 2000):
                figure = {"path": name, "batch": batch, **run(batch)}
                figures.append(figure)
                print(f"{name:40} {batch:>6} {figure['baseline_us']:>12.1f} "
                      f"{figure['metrics_us']:>11.2f} {figure['ratio']:>9.5f}")
        results["rounds"].append(figures)
        print(f"-- round {round_no + 1} of {args.rounds}")
    worst = max(f["ratio"] for r in results["rounds"] for f in r)
    results["worst_ratio"] = worst
    print(f"worst overhead ratio: {worst:.5f} ({worst * 100:.3f} %)")
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
