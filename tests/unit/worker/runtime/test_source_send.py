"""WorkerSourceTask._send: what reaches librdkafka, in which order, to which partition and
with which delivery callback (one per partition and batch for keyless records when the
producer acknowledges in order, one per record otherwise). A recording stand-in replaces
confluent_kafka.Producer."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from worker.api import SourceRecord, SourceTask
from worker.api.exceptions import ConnectException
from worker.builtin.converters.string_bytes import StringConverter
from worker.clients import factories as kafka_clients
from worker.clients.sticky_partitions import UNASSIGNED
from worker.config.worker_config import WorkerConfig
from worker.runtime.chain import TransformationChain
from worker.runtime.source_task import WorkerSourceTask
from worker.storage.base import State, TargetState, TaskId
from worker.storage.memory import MemoryOffsetBackingStore

TASK = TaskId("c", 0)
PARTITION = {"file": "f"}


class RecordingStatus:
    def task(self, _task: TaskId, _state: State, _error: BaseException | None = None) -> None:
        pass


class RecordingProducer:
    """Records every message handed over as (topic, value, key, partition, callback)."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, Any, Any, int, Any]] = []

    def produce(self, topic: str, value: Any = None, key: Any = None, partition: int = -1,
                on_delivery: Any = None, callback: Any = None, timestamp: int = 0,
                headers: Any = None) -> None:
        self.sent.append((topic, value, key, partition, on_delivery or callback))

    def produce_batch(self, topic: str, messages: list[dict[str, Any]], partition: int = -1,
                      on_delivery: Any = None) -> int:
        for m in messages:
            self.sent.append((topic, m["value"], m["key"], partition,
                              m.get("callback", on_delivery)))
        return len(messages)

    def poll(self, _timeout: float = 0) -> int:
        return 0

    def flush(self, _timeout: float = 0) -> int:
        return 0

    def __len__(self) -> int:
        return 0


class FixedPartitions:
    def __init__(self, partitions: Mapping[str, int]) -> None:
        self.partitions = partitions
        self.asked: list[str] = []

    def choose(self, topic: str) -> int:
        self.asked.append(topic)
        return self.partitions.get(topic, UNASSIGNED)


class Idle(SourceTask):
    def start(self, props: Mapping[str, str]) -> None:
        pass

    def poll(self) -> list[SourceRecord] | None:
        return None

    def stop(self) -> None:
        pass


def make_task(partitions: Mapping[str, int] | None, store: MemoryOffsetBackingStore | None = None
              ) -> tuple[WorkerSourceTask, RecordingProducer]:
    task = WorkerSourceTask(
        TASK, Idle(), {}, TargetState.STARTED, RecordingStatus(),  # type: ignore[arg-type]
        producer_config={}, key_converter=StringConverter(), value_converter=StringConverter(),
        chain=TransformationChain([]), offset_store=store or MemoryOffsetBackingStore(),
        offset_flush_interval_ms=1000, offset_flush_timeout_ms=1000)
    producer = RecordingProducer()
    task._producer = producer  # type: ignore[assignment]
    if partitions is not None:
        task._sticky = FixedPartitions(partitions)  # type: ignore[assignment]
    return task, producer


def record(position: int, topic: str = "a", key: str | None = None,
           timestamp: int | None = 1000) -> SourceRecord:
    return SourceRecord(PARTITION, {"position": position}, topic, None, None, key, None,
                        f"line-{position}", timestamp)


def callbacks(producer: RecordingProducer) -> list[bool]:
    return [sent[4] is not None for sent in producer.sent]


def test_keyless_records_go_to_the_batch_partition_and_only_the_last_is_acknowledged() -> None:
    store = MemoryOffsetBackingStore()
    task, producer = make_task({"a": 3}, store)
    task._send([record(i) for i in range(1, 6)])
    assert [s[1] for s in producer.sent] == [b"line-%d" % i for i in range(1, 6)]
    assert {s[3] for s in producer.sent} == {3}
    assert callbacks(producer) == [False, False, False, False, True]
    assert task._sticky.asked == ["a"]  # type: ignore[union-attr]  # once per batch
    # Nothing is committable before that one acknowledgement, everything after it.
    assert task._submitted.take() == []
    producer.sent[-1][4](None, None)
    assert task.commit_offsets()
    assert store.get("c", [PARTITION]) == {'{"file":"f"}': {"position": 5}}


def test_each_batch_asks_for_its_partition_again() -> None:
    task, producer = make_task({"a": 3})
    task._send([record(1)])
    task._send([record(2)])
    assert task._sticky.asked == ["a", "a"]  # type: ignore[union-attr]
    assert callbacks(producer) == [True, True]


def test_records_without_timestamp_go_in_one_produce_batch_call() -> None:
    task, producer = make_task({"a": 2})
    task._send([record(i, timestamp=None) for i in range(1, 4)])
    assert [(s[1], s[3]) for s in producer.sent] == [(b"line-1", 2), (b"line-2", 2), (b"line-3", 2)]
    assert callbacks(producer) == [False, False, True]


def test_keyed_records_keep_a_callback_each_and_librdkafka_partitions_them() -> None:
    task, producer = make_task({"a": 3})
    task._send([record(1, key="k"), record(2, key="k", timestamp=None)])
    assert [s[3] for s in producer.sent] == [UNASSIGNED, UNASSIGNED]
    assert callbacks(producer) == [True, True]
    assert task._sticky.asked == []  # type: ignore[union-attr]


def test_a_keyed_record_between_keyless_ones_ends_their_segment_in_order() -> None:
    task, producer = make_task({"a": 3})
    task._send([record(1), record(2), record(3, key="k"), record(4), record(5)])
    assert [s[1] for s in producer.sent] == [b"line-%d" % i for i in range(1, 6)]
    # line-2 closes the first keyless segment: the keyed record may land in another
    # partition, so its acknowledgement cannot stand for line-1 and line-2.
    assert callbacks(producer) == [False, True, True, False, True]


def test_keyless_records_of_two_topics_each_end_with_a_callback() -> None:
    task, producer = make_task({"a": 3, "b": 0})
    task._send([record(1, "a"), record(2, "a"), record(3, "b"), record(4, "a")])
    assert [(s[0], s[3]) for s in producer.sent] == [("a", 3), ("a", 3), ("b", 0), ("a", 3)]
    assert callbacks(producer) == [False, True, True, True]


def test_a_topic_whose_partitions_are_unknown_gets_a_callback_per_record() -> None:
    task, producer = make_task({})
    task._send([record(1), record(2, timestamp=None), record(3, timestamp=None)])
    assert [s[3] for s in producer.sent] == [UNASSIGNED] * 3
    assert callbacks(producer) == [True, True, True]


def test_without_in_order_acknowledgement_every_record_has_a_callback() -> None:
    task, producer = make_task(None)
    task._send([record(1), record(2), record(3, timestamp=None)])
    assert [s[3] for s in producer.sent] == [UNASSIGNED] * 3
    assert callbacks(producer) == [True, True, True]


def test_a_failed_delivery_keeps_the_batch_uncommitted_and_fails_the_task() -> None:
    store = MemoryOffsetBackingStore()
    task, producer = make_task({"a": 3}, store)
    task._send([record(1), record(2)])
    producer.sent[-1][4]("broker said no", None)
    assert task._submitted.take() == []
    assert task._submitted.error == "broker said no"


class FatalError:
    def fatal(self) -> bool:
        return True

    def __str__(self) -> str:
        return "gapless guarantee broken"


def test_a_fatal_producer_error_fails_the_task() -> None:
    class OneBatch(Idle):
        def poll(self) -> list[SourceRecord] | None:
            return [record(1)]

    task, _producer = make_task({"a": 3})
    task.source_task = OneBatch()
    task._on_client_error(FatalError())  # type: ignore[arg-type]
    with pytest.raises(ConnectException, match="failed for good"):
        task.execute()


# --- the producer settings that allow one report per partition and batch ----------------

def producer_conf(**props: str) -> dict[str, str]:
    worker = WorkerConfig({"bootstrap.servers": "b:9092",
                           **{f"producer.{k.replace('_', '.')}": v for k, v in props.items()}})
    return kafka_clients.producer_config(worker, {}, "client")


def test_the_default_producer_acknowledges_in_order() -> None:
    conf = producer_conf()
    assert conf["enable.gapless.guarantee"] == "true"
    assert conf["delivery.timeout.ms"] == "2147483647"  # Kafka Connect's Integer.MAX_VALUE
    assert kafka_clients.acknowledges_in_order(conf)


@pytest.mark.parametrize("props", [
    {"enable_idempotence": "false"},
    {"enable_gapless_guarantee": "false"},
    {"delivery_timeout_ms": "120000"},
    {"message_timeout_ms": "30000"},
])
def test_settings_that_allow_gaps_keep_a_callback_per_record(props: dict[str, str]) -> None:
    conf = producer_conf(**props)
    assert not kafka_clients.acknowledges_in_order(conf)


def test_no_gapless_flag_without_idempotence() -> None:
    # librdkafka refuses to create a producer with the flag but without idempotence.
    assert "enable.gapless.guarantee" not in producer_conf(enable_idempotence="false")
