"""FileStream source/sink: driven directly with a fake context on real files."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.source_fakes import (
    FakeContext,
    FakeOffsetReader,
    assert_stop_ends_waiting_poll,
)
from worker.api import (
    ConfigException,
    ConnectException,
    SinkRecord,
    SourceRecord,
    partition_key,
)
from worker.api.data import STRING_SCHEMA
from worker.builtin.connectors import file_stream
from worker.builtin.connectors.file_stream import (
    FileStreamSinkConnector,
    FileStreamSinkTask,
    FileStreamSourceConnector,
    FileStreamSourceTask,
)

DEADLINE_S = 2.0


def start_source(path: Path | None, committed: dict[str, dict[str, Any]] | None = None,
                 **props: str) -> FileStreamSourceTask:
    task = FileStreamSourceTask()
    task.initialize(FakeContext(FakeOffsetReader(committed)))
    config = {"topic": "lines", **props}
    if path is not None:
        config["file"] = str(path)
    task.start(config)
    return task


def poll_until(task: FileStreamSourceTask, count: int) -> list[SourceRecord]:
    """Poll until ``count`` records arrived or the deadline passed."""
    records: list[SourceRecord] = []
    deadline = time.monotonic() + DEADLINE_S
    while len(records) < count and time.monotonic() < deadline:
        records.extend(task.poll() or [])
    return records


def test_reads_lines_with_byte_positions(tmp_path: Path) -> None:
    path = tmp_path / "in.txt"
    path.write_bytes("a\nbé\n".encode())
    task = start_source(path)
    try:
        records = poll_until(task, 2)
    finally:
        task.stop()
    assert [r.value for r in records] == ["a", "bé"]
    # "é" is two bytes in UTF-8: positions count bytes, not characters.
    assert [r.source_offset for r in records] == [{"position": 2}, {"position": 6}]
    assert all(r.source_partition == {"filename": str(path)} for r in records)
    assert all(r.topic == "lines" and r.key is None and r.key_schema is None
               for r in records)
    assert all(r.value_schema == STRING_SCHEMA for r in records)


def test_crlf_and_lone_cr_end_lines(tmp_path: Path) -> None:
    path = tmp_path / "in.txt"
    path.write_bytes(b"x\r\ny\rz\n")
    task = start_source(path)
    try:
        records = poll_until(task, 3)
    finally:
        task.stop()
    assert [(r.value, r.source_offset["position"]) for r in records] == [
        ("x", 3), ("y", 5), ("z", 7)]


def test_partial_line_waits_until_completed(tmp_path: Path) -> None:
    path = tmp_path / "in.txt"
    path.write_bytes(b"abc")
    task = start_source(path)
    try:
        assert task.poll() is None
        with path.open("ab") as f:
            f.write(b"def\nxy")
        records = poll_until(task, 1)
        assert [(r.value, r.source_offset) for r in records] == [("abcdef", {"position": 7})]
        assert task.poll() is None  # "xy" still incomplete
    finally:
        task.stop()


def test_trailing_carriage_return_waits_for_possible_newline(tmp_path: Path) -> None:
    path = tmp_path / "in.txt"
    path.write_bytes(b"a\r")
    task = start_source(path)
    try:
        assert task.poll() is None
        with path.open("ab") as f:
            f.write(b"\n")
        records = poll_until(task, 1)
    finally:
        task.stop()
    assert [(r.value, r.source_offset) for r in records] == [("a", {"position": 3})]


def test_invalid_utf8_is_replaced(tmp_path: Path) -> None:
    path = tmp_path / "in.txt"
    path.write_bytes(b"\xffok\n")
    task = start_source(path)
    try:
        records = poll_until(task, 1)
    finally:
        task.stop()
    assert [r.value for r in records] == ["\ufffdok"]


def test_resumes_from_committed_position(tmp_path: Path) -> None:
    path = tmp_path / "in.txt"
    path.write_bytes(b"one\ntwo\nthree\n")
    committed = {partition_key({"filename": str(path)}): {"position": 4}}
    task = start_source(path, committed)
    try:
        records = poll_until(task, 2)
    finally:
        task.stop()
    assert [(r.value, r.source_offset["position"]) for r in records] == [
        ("two", 8), ("three", 14)]


def test_committed_position_of_wrong_type_fails_start(tmp_path: Path) -> None:
    path = tmp_path / "in.txt"
    path.write_bytes(b"one\n")
    committed = {partition_key({"filename": str(path)}): {"position": "4"}}
    with pytest.raises(ConnectException, match="Offset position is the incorrect type"):
        start_source(path, committed)


def test_poll_returns_at_most_batch_size(tmp_path: Path) -> None:
    path = tmp_path / "in.txt"
    path.write_bytes(b"".join(b"line%d\n" % i for i in range(5)))
    task = start_source(path, **{"batch.size": "2"})
    try:
        batches = [task.poll() for _ in range(3)]
    finally:
        task.stop()
    assert [len(b or []) for b in batches] == [2, 2, 1]
    flat = [r for b in batches for r in b or []]
    assert [r.value for r in flat] == [f"line{i}" for i in range(5)]
    assert [r.source_offset["position"] for r in flat] == [6, 12, 18, 24, 30]


def test_waits_for_a_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "later.txt"
    task = start_source(path)
    try:
        assert task.poll() is None
        path.write_bytes(b"hello\n")
        records = poll_until(task, 1)
    finally:
        task.stop()
    assert [r.value for r in records] == ["hello"]


@pytest.mark.parametrize("missing", [False, True], ids=["idle-file", "missing-file"])
def test_stop_from_another_thread_ends_a_waiting_poll(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, missing: bool) -> None:
    # Waits far longer than the deadline: only stop() can end them in time.
    monkeypatch.setattr(file_stream, "POLL_WAIT_S", 60.0)
    monkeypatch.setattr(file_stream, "MISSING_FILE_WAIT_S", 60.0)
    path = tmp_path / "in.txt"
    if not missing:
        path.write_bytes(b"")
    task = start_source(path)
    assert_stop_ends_waiting_poll(task, DEADLINE_S)


def test_poll_after_stop_returns_none(tmp_path: Path) -> None:
    path = tmp_path / "in.txt"
    path.write_bytes(b"a\n")
    task = start_source(path)
    task.stop()
    assert task.poll() is None


def test_reads_stdin_without_offsets(monkeypatch: pytest.MonkeyPatch) -> None:
    read_fd, write_fd = os.pipe()

    class FakeStdin:
        def fileno(self) -> int:
            return read_fd

    monkeypatch.setattr("sys.stdin", FakeStdin())
    try:
        task = start_source(None)
        os.write(write_fd, b"hi\nthere\n")
        records = poll_until(task, 2)
        task.stop()
    finally:
        os.close(write_fd)
        os.close(read_fd)
    assert [r.value for r in records] == ["hi", "there"]
    assert all(r.source_partition == {"filename": None} for r in records)
    assert all(r.source_offset == {"position": None} for r in records)


# --- connector configuration --------------------------------------------------------------

def test_source_connector_returns_exactly_one_task_config() -> None:
    connector = FileStreamSourceConnector()
    props = {"file": "/tmp/x", "topic": "t"}
    connector.start(props)
    assert connector.task_configs(5) == [props]


def test_source_rejects_a_topic_list() -> None:
    with pytest.raises(ConfigException) as info:
        FileStreamSourceConnector().start({"topic": "a,b"})
    assert info.value.name == "topic"
    assert "'topic' in FileStreamSourceConnector configuration requires definition of a " \
           "single topic" in str(info.value)


def test_source_requires_topic_and_defaults_batch_size() -> None:
    definition = FileStreamSourceConnector().config()
    errors = definition.validate({})
    assert errors["topic"].errors and "topic" in errors["topic"].errors[0]
    assert definition.parse({"topic": "t"})["batch.size"] == 2000
    assert definition.parse({"topic": "t"})["file"] is None


def test_source_alter_offsets_validation() -> None:
    connector = FileStreamSourceConnector()
    config = {"file": "/tmp/x", "topic": "t"}
    key = partition_key({"filename": "/tmp/x"})
    assert connector.alter_offsets(config, {key: {"position": 10}}) is True
    assert connector.alter_offsets(config, {key: None}) is True
    with pytest.raises(ConnectException, match="contain the key 'position'"):
        connector.alter_offsets(config, {key: {"pos": 1}})
    with pytest.raises(ConnectException, match="expected to be a Long value"):
        connector.alter_offsets(config, {key: {"position": "1"}})
    with pytest.raises(ConnectException, match="non-negative"):
        connector.alter_offsets(config, {key: {"position": -1}})
    with pytest.raises(ConnectException, match="should contain the key 'filename'"):
        connector.alter_offsets(config, {partition_key({"f": "x"}): {"position": 1}})
    with pytest.raises(ConnectException, match="stdin is used for input"):
        connector.alter_offsets({"topic": "t"}, {key: {"position": 1}})


# --- sink -------------------------------------------------------------------------------

def sink_record(value: Any, offset: int = 0) -> SinkRecord:
    return SinkRecord("t", 0, None, None, None, value, offset)


def test_sink_appends_one_line_per_record(tmp_path: Path) -> None:
    path = tmp_path / "out.txt"
    path.write_text("existing\n")
    task = FileStreamSinkTask()
    task.start({"file": str(path)})
    task.put([sink_record("a"), sink_record(42), sink_record(None), sink_record({"k": 1})])
    task.flush({})
    assert path.read_text() == "existing\na\n42\nnull\n{'k': 1}\n"
    task.put([])
    task.stop()
    assert path.read_text() == "existing\na\n42\nnull\n{'k': 1}\n"


def test_sink_writes_a_batch_with_one_write(tmp_path: Path) -> None:
    task = FileStreamSinkTask()
    task.start({"file": str(tmp_path / "out.txt")})
    writes: list[str] = []
    assert task._out is not None
    real_write = task._out.write
    task._out.write = lambda text: writes.append(text) or real_write(text)  # type: ignore
    task.put([sink_record(str(i)) for i in range(100)])
    task.stop()
    assert len(writes) == 1


def test_sink_defaults_to_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    task = FileStreamSinkTask()
    task.start({})
    task.put([sink_record("to-stdout")])
    task.flush({})
    task.stop()
    assert capsys.readouterr().out == "to-stdout\n"


def test_sink_reports_an_unwritable_file(tmp_path: Path) -> None:
    task = FileStreamSinkTask()
    target = tmp_path / "missing-dir" / "out.txt"
    with pytest.raises(ConnectException, match="Couldn't find or create file"):
        task.start({"file": str(target)})


def test_sink_connector_returns_max_tasks_copies() -> None:
    connector = FileStreamSinkConnector()
    props = {"file": "/tmp/out", "topics": "t"}
    connector.start(props)
    configs = connector.task_configs(3)
    assert configs == [props, props, props]
    configs[0]["file"] = "changed"
    assert configs[1]["file"] == "/tmp/out"  # independent copies

