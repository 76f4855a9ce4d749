"""SequenceGenerator: record contents, resumption, bounds, throttling and stop."""

from __future__ import annotations

import time
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
    partition_key,
)
from worker.api.data import STRING_SCHEMA
from worker.builtin.connectors import generator
from worker.builtin.connectors.generator import SequenceGeneratorConnector, SequenceGeneratorTask

DEADLINE_S = 2.0


def start_task(committed: dict[str, dict[str, Any]] | None = None,
               **props: str) -> SequenceGeneratorTask:
    task = SequenceGeneratorTask()
    task.initialize(FakeContext(FakeOffsetReader(committed)))
    task.start({"topic": "seq", **props})
    return task


def test_string_records_are_deterministic_and_padded() -> None:
    task = start_task(**{"batch.size": "3"})
    records = task.poll()
    assert records is not None and len(records) == 3
    first = records[0]
    assert first.value == "0-000000000000-" + "x" * 85
    assert len(first.value.encode()) == 100
    assert [r.value[:15] for r in records] == [f"0-{s:012d}-" for s in range(3)]
    # The key is the task number: one task's records share a partition, in order.
    assert [r.key for r in records] == ["0", "0", "0"]
    assert [r.source_offset for r in records] == [{"seq": 0}, {"seq": 1}, {"seq": 2}]
    assert all(r.source_partition == {"task": 0} for r in records)
    assert all(r.topic == "seq" and r.value_schema == STRING_SCHEMA
               and r.key_schema == STRING_SCHEMA for r in records)


def test_message_size_is_honoured() -> None:
    task = start_task(**{"message.size": "1000", "batch.size": "1"})
    records = task.poll()
    assert records is not None
    assert len(records[0].value) == 1000


def test_message_size_below_the_prefix_truncates() -> None:
    task = start_task(**{"message.size": "5", "batch.size": "2"})
    records = task.poll()
    assert records is not None
    assert [r.value for r in records] == ["0-000", "0-000"]


def test_count_bounds_the_sequence_then_poll_returns_none(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(generator, "IDLE_WAIT_S", 0.01)
    task = start_task(count="5", **{"batch.size": "2"})
    sizes = [len(task.poll() or []) for _ in range(4)]
    assert sizes == [2, 2, 1, 0]


def test_resumes_after_committed_seq() -> None:
    committed = {partition_key({"task": 0}): {"seq": 41}}
    task = start_task(committed, count="44")
    records = task.poll()
    assert records is not None
    assert [r.source_offset["seq"] for r in records] == [42, 43]


def test_invalid_committed_offset_fails_start() -> None:
    committed = {partition_key({"task": 0}): {"seq": "41"}}
    with pytest.raises(ConnectException, match="'seq'"):
        start_task(committed)


def test_json_format_is_a_schemaless_dict() -> None:
    before = int(time.time() * 1000)
    task = start_task(format="json", **{"batch.size": "2", "message.size": "200"})
    records = task.poll()
    assert records is not None
    value = records[1].value
    assert records[1].value_schema is None
    assert set(value) == {"task", "seq", "ts", "payload"}
    assert (value["task"], value["seq"]) == (0, 1)
    assert before <= value["ts"] <= int(time.time() * 1000)
    assert set(value["payload"]) == {"x"} and len(value["payload"]) > 100


def test_connector_splits_into_numbered_tasks() -> None:
    connector = SequenceGeneratorConnector()
    connector.start({"topic": "seq", "count": "2"})
    configs = connector.task_configs(3)
    assert [c["task.id"] for c in configs] == ["0", "1", "2"]
    assert all(c["topic"] == "seq" and c["count"] == "2" for c in configs)
    task = SequenceGeneratorTask()
    task.initialize(FakeContext(FakeOffsetReader()))
    task.start(configs[2])
    records = task.poll()
    assert records is not None
    assert [r.value[:15] for r in records] == ["2-000000000000-", "2-000000000001-"]
    assert records[0].source_partition == {"task": 2}


def test_rate_limits_emission(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(generator, "IDLE_WAIT_S", 0.01)
    task = start_task(rate="1")  # one record per second
    first = task.poll()
    assert first is not None and len(first) == 1
    assert task.poll() is None  # the next record is due a second later


@pytest.mark.parametrize("props", [{"count": "0"}, {"rate": "0.001"}],
                         ids=["count-reached", "rate-limited"])
def test_stop_from_another_thread_ends_a_waiting_poll(
        monkeypatch: pytest.MonkeyPatch, props: dict[str, str]) -> None:
    monkeypatch.setattr(generator, "IDLE_WAIT_S", 60.0)
    task = start_task(**props)
    if "rate" in props:
        assert task.poll() is not None  # the first record is due at once
    assert_stop_ends_waiting_poll(task, DEADLINE_S)


@pytest.mark.parametrize("props, key", [
    ({}, "topic"),
    ({"topic": "t", "format": "xml"}, "format"),
    ({"topic": "t", "rate": "-1"}, "rate"),
    ({"topic": "t", "batch.size": "0"}, "batch.size"),
    ({"topic": "t", "count": "-2"}, "count"),
])
def test_invalid_config_names_the_key(props: dict[str, str], key: str) -> None:
    with pytest.raises(ConfigException) as info:
        SequenceGeneratorConnector().start(props)
    assert info.value.name == key


def test_alter_offsets_validation() -> None:
    connector = SequenceGeneratorConnector()
    good = {partition_key({"task": 1}): {"seq": 10}, partition_key({"task": 2}): None}
    assert connector.alter_offsets({"topic": "t"}, good) is True
    with pytest.raises(ConnectException, match="'task'"):
        connector.alter_offsets({"topic": "t"}, {partition_key({"x": 1}): {"seq": 1}})
    with pytest.raises(ConnectException, match="'seq'"):
        connector.alter_offsets({"topic": "t"}, {partition_key({"task": 1}): {"seq": "1"}})
