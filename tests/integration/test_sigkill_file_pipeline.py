"""At-least-once across a hard kill: FileStreamSource → Kafka → FileStreamSink.

The worker is SIGKILLed while 100,000 lines stream through it (the last 40,000 are appended
only after the kill), then restarted. Every line must reach the output at least once, in
order, with no gaps (duplicates are allowed: offsets committed before the kill are up to
``offset.flush.interval.ms`` old).
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from tests.support import create_topic, wait_for_connector_state, wait_until

TOTAL_LINES = 100_000
BEFORE_KILL = 60_000
CHUNK = 5_000


def _line(n: int) -> str:
    return f"line-{n:06d}"


def _output_numbers(path: Path) -> list[int]:
    if not path.exists():
        return []
    # Only whole lines: the sink may be in the middle of writing the last one.
    text = path.read_text(encoding="utf-8")
    lines = text.split("\n")[:-1]
    return [int(line.removeprefix("line-")) for line in lines]


def _assert_in_order_without_gaps(numbers: list[int]) -> None:
    """Each line may repeat earlier ones (a replay) but never skip one."""
    highest = -1
    for position, number in enumerate(numbers):
        assert number <= highest + 1, (
            f"gap at output line {position}: {number} follows {numbers[position - 1]} "
            f"(highest so far {highest})")
        highest = max(highest, number)


@pytest.mark.integration
@pytest.mark.slow
def test_sigkill_mid_stream_loses_nothing(standalone_worker, kafka_admin, unique_topic,
                                          tmp_path: Path) -> None:
    topic = unique_topic("sigkill")
    # One partition: the sink sees the source's order, so "in order" is checkable.
    create_topic(kafka_admin, topic, partitions=1)
    source_file = tmp_path / "input.txt"
    sink_file = tmp_path / "output.txt"
    source_file.touch()
    worker = standalone_worker({
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": "org.apache.kafka.connect.storage.StringConverter",
    })
    client = worker.client
    for name, config in (
        ("sigkill-source", {"connector.class": "FileStreamSource", "file": str(source_file),
                            "topic": topic}),
        ("sigkill-sink", {"connector.class": "FileStreamSink", "file": str(sink_file),
                          "topics": topic}),
    ):
        response = client.put(f"/connectors/{name}/config", json=config)
        assert response.status_code == 201, response.text
    for name in ("sigkill-source", "sigkill-sink"):
        wait_for_connector_state(client, name, "RUNNING", tasks_state="RUNNING", timeout=60)

    # Append the input in chunks from a writer thread while the pipeline runs. The second
    # part is written only after the kill, so the kill always lands mid-stream however fast
    # the pipeline is, and the restarted source must pick up lines appended while it was down.
    killed = threading.Event()
    aborted = threading.Event()

    def write_chunks(out, first: int, last: int) -> None:
        for start in range(first, last, CHUNK):
            out.write("".join(_line(n) + "\n" for n in range(start, start + CHUNK)))
            out.flush()
            if aborted.wait(0.05):
                return

    def writer() -> None:
        with source_file.open("a", encoding="utf-8") as out:
            write_chunks(out, 0, BEFORE_KILL)
            if killed.wait(180) and not aborted.is_set():
                write_chunks(out, BEFORE_KILL, TOTAL_LINES)

    thread = threading.Thread(target=writer, name="input-writer", daemon=True)
    thread.start()
    try:
        wait_until(lambda: len(_output_numbers(sink_file)) >= 20_000, timeout=120,
                   message="the sink never wrote 20,000 lines")
        worker.kill()
        killed.set()

        worker.start()
        wait_until(lambda: len(set(_output_numbers(sink_file))) == TOTAL_LINES, timeout=240,
                   interval=1.0, message="not every line reached the output after restart")
    finally:
        aborted.set()
        killed.set()
        thread.join(30)

    numbers = _output_numbers(sink_file)
    assert set(numbers) == set(range(TOTAL_LINES))
    _assert_in_order_without_gaps(numbers)
    assert len(numbers) >= TOTAL_LINES
