"""worker.herder.offset_requests: KIP-875 payload validation, the connector hook, Kafka's messages.

The messages checked here are Apache Kafka Connect's (``SinkUtils``, ``OffsetUtils``,
``ConnectorsResource``, ``Worker.completeModifyOffsetsCallback``, ``StandaloneHerder``), so
clients that match on them keep working.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

import pytest

from worker.api import ConnectException, SourceConnector
from worker.api.connector import TopicPartition
from worker.builtin.connectors.file_stream import FileStreamSinkConnector, FileStreamSourceConnector
from worker.errors import BadRequestError, WorkerError
from worker.herder import offset_requests as offsets
from worker.herder.models import ConnectorOffset, ConnectorOffsets

TP = {"kafka_topic": "orders", "kafka_partition": 0}


def sink(partition: dict[str, Any] | None, offset: dict[str, Any] | None
         ) -> list[ConnectorOffset]:
    return [ConnectorOffset(partition, offset)]  # type: ignore[arg-type]


def bad_request(fn: Any, *args: Any) -> str:
    with pytest.raises(BadRequestError) as info:
        fn(*args)
    return str(info.value)


# --- messages --------------------------------------------------------------------------


def test_not_stopped_names_the_stop_endpoint() -> None:
    assert str(offsets.not_stopped("my-conn")) == (
        "Connectors must be in the STOPPED state before their offsets can be modified. This "
        "can be done for the specified connector by issuing a 'PUT' request to the "
        "'/connectors/my-conn/stop' endpoint")


@pytest.mark.parametrize(("accepted", "reset", "expected"), [
    (True, False, "The offsets for this connector have been altered successfully"),
    (True, True, "The offsets for this connector have been reset successfully"),
    (False, False, "The Connect framework-managed offsets for this connector have been altered "
                   "successfully. However, if this connector manages offsets externally, they "
                   "will need to be manually altered in the system that the connector uses."),
    (False, True, "The Connect framework-managed offsets for this connector have been reset "
                  "successfully. However, if this connector manages offsets externally, they "
                  "will need to be manually reset in the system that the connector uses."),
])
def test_success_messages(accepted: bool, reset: bool, expected: str) -> None:
    assert offsets.success_message(accepted, reset).message == expected


# --- sinks -----------------------------------------------------------------------------


def test_sink_offsets_parse_to_topic_partitions() -> None:
    parsed = offsets.parse_sink_offsets([
        ConnectorOffset(TP, {"kafka_offset": 5}),
        ConnectorOffset({"kafka_topic": "orders", "kafka_partition": "1"},
                        {"kafka_offset": "7"}),  # numeric strings are accepted, as in Kafka
        ConnectorOffset({"kafka_topic": "orders", "kafka_partition": 2, "extra": "ignored"},
                        None),
    ])
    assert parsed == {TopicPartition("orders", 0): 5, TopicPartition("orders", 1): 7,
                      TopicPartition("orders", 2): None}


def test_sink_offsets_later_entry_for_a_partition_wins() -> None:
    parsed = offsets.parse_sink_offsets([ConnectorOffset(TP, {"kafka_offset": 1}),
                                         ConnectorOffset(TP, {"kafka_offset": 9})])
    assert parsed == {TopicPartition("orders", 0): 9}


@pytest.mark.parametrize("payload", [[], None])
def test_no_offsets_is_refused(payload: list[ConnectorOffset] | None) -> None:
    for parse in (offsets.parse_sink_offsets, offsets.parse_source_offsets):
        assert bad_request(parse, payload) == (
            "Partitions / offsets need to be provided for an alter offsets request")


@pytest.mark.parametrize(("partition", "offset", "message"), [
    (None, None, "The partition for a sink connector offset cannot be null or missing"),
    ({}, None, "The partition for a sink connector offset must contain the keys "
               "'kafka_topic' and 'kafka_partition'"),
    ({"kafka_topic": "t"}, None, "must contain the keys 'kafka_topic' and 'kafka_partition'"),
    ({"kafka_partition": 0}, None, "must contain the keys"),
    ({"kafka_topic": 5, "kafka_partition": 0}, None,
     "The value for the 'kafka_topic' key in the partition for a sink connector offset must "
     "be a non-empty string, not 5"),
    ({"kafka_topic": "", "kafka_partition": 0}, None, "must be a non-empty string"),
    ({"kafka_topic": None, "kafka_partition": 0}, None, "not null"),
    ({"kafka_topic": "t", "kafka_partition": "not a number"}, None,
     "Failed to parse the following Kafka partition value in the provided offsets: "
     "'not a number'. Partition values for sink connectors need to be integers."),
    ({"kafka_topic": "t", "kafka_partition": 1.5}, None,
     "Partition values for sink connectors need to be integers"),
    ({"kafka_topic": "t", "kafka_partition": True}, None, "value in the provided offsets: "
                                                          "'true'"),
    ({"kafka_topic": "t", "kafka_partition": None}, None, "'null'"),
    ({"kafka_topic": "t", "kafka_partition": 2**31}, None, "need to be integers"),
    ({"kafka_topic": "t", "kafka_partition": -1}, None,
     "Invalid Kafka partition value in the provided offsets: '-1'. Partition values for "
     "sink connectors cannot be negative."),
    (TP, {}, "The offset for a sink connector should either be null or contain the key "
             "'kafka_offset'"),
    (TP, {"offset": 3}, "should either be null or contain the key 'kafka_offset'"),
    (TP, {"kafka_offset": "not a number"},
     "Failed to parse the following Kafka offset value in the provided offsets: "
     "'not a number'. Offset values for sink connectors need to be integers."),
    (TP, {"kafka_offset": None}, "Offset values for sink connectors need to be integers"),
    (TP, {"kafka_offset": "+-3"}, "need to be integers"),
    (TP, {"kafka_offset": -5}, "Invalid Kafka offset value in the provided offsets: '-5'. "
                               "Offset values for sink connectors cannot be negative."),
    (TP, {"kafka_offset": "-5"}, "cannot be negative"),
])
def test_malformed_sink_offsets_are_refused(partition: dict[str, Any] | None,
                                            offset: dict[str, Any] | None,
                                            message: str) -> None:
    assert message in bad_request(offsets.parse_sink_offsets, sink(partition, offset))


def test_one_bad_entry_refuses_the_whole_request() -> None:
    payload = [ConnectorOffset(TP, {"kafka_offset": 1}),
               ConnectorOffset({"kafka_topic": "t", "kafka_partition": -1}, None)]
    bad_request(offsets.parse_sink_offsets, payload)


def test_sink_offsets_entity_is_sorted_and_shaped_like_kafka() -> None:
    entity = offsets.sink_offsets_entity({TopicPartition("b", 0): 3,
                                          TopicPartition("a", 1): 2,
                                          TopicPartition("a", 0): 1})
    assert entity == ConnectorOffsets([
        ConnectorOffset({"kafka_topic": "a", "kafka_partition": 0}, {"kafka_offset": 1}),
        ConnectorOffset({"kafka_topic": "a", "kafka_partition": 1}, {"kafka_offset": 2}),
        ConnectorOffset({"kafka_topic": "b", "kafka_partition": 0}, {"kafka_offset": 3}),
    ])


# --- sources ---------------------------------------------------------------------------


def test_source_offsets_keep_the_connectors_own_shapes() -> None:
    parsed = offsets.parse_source_offsets([
        ConnectorOffset({"filename": "/a"}, {"position": 10}),
        ConnectorOffset({"task": 1, "db": "x", "flag": True, "ratio": 0.5, "none": None},
                        None),
        ConnectorOffset({}, {}),  # Kafka accepts empty maps as well
    ])
    assert parsed == [({"filename": "/a"}, {"position": 10}),
                      ({"task": 1, "db": "x", "flag": True, "ratio": 0.5, "none": None}, None),
                      ({}, {})]


def test_source_offsets_later_entry_for_a_partition_wins_regardless_of_key_order() -> None:
    parsed = offsets.parse_source_offsets([
        ConnectorOffset({"a": 1, "b": 2}, {"pos": 1}),
        ConnectorOffset({"b": 2, "a": 1}, {"pos": 2}),
    ])
    assert parsed == [({"b": 2, "a": 1}, {"pos": 2})]


@pytest.mark.parametrize(("partition", "offset", "message"), [
    (None, {"position": 1}, "The partition for a source connector offset cannot be null or "
                            "missing"),
    ({"file": {"name": "x"}}, None, "Offsets may only contain primitive types as values, but "
                                    "field file contains MAP (in a source partition)"),
    ({"file": "x"}, {"positions": [1, 2]}, "Offsets may only contain primitive types as "
                                           "values, but field positions contains ARRAY (in a "
                                           "source offset)"),
    ({"file": "x"}, {"position": float("nan")}, "field position in a source offset must be a "
                                                "finite number"),
])
def test_malformed_source_offsets_are_refused(partition: dict[str, Any] | None,
                                              offset: dict[str, Any] | None,
                                              message: str) -> None:
    payload = [ConnectorOffset(partition, offset)]  # type: ignore[arg-type]
    assert message in bad_request(offsets.parse_source_offsets, payload)


def test_source_offsets_entity_is_sorted_by_partition() -> None:
    entity = offsets.source_offsets_entity([({"task": 1}, {"seq": 5}),
                                            ({"task": 0}, {"seq": 9})])
    assert [o.partition for o in entity.offsets] == [{"task": 0}, {"task": 1}]


# --- the connector's hook ----------------------------------------------------------------


class RecordingSource(SourceConnector):
    seen: list[tuple[dict[str, str], dict[str, Any]]] = []
    answer: Any = True

    def start(self, props: Mapping[str, str]) -> None: ...

    def task_class(self) -> Any: ...

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return []

    def stop(self) -> None: ...

    def alter_offsets(self, connector_config: Mapping[str, str],
                      offsets: Mapping[str, Mapping[str, Any] | None]) -> bool:
        type(self).seen.append((dict(connector_config), dict(offsets)))
        if isinstance(self.answer, BaseException):
            raise self.answer
        return bool(self.answer)


def call_hook(connector: Any, targets: Any, timeout_s: float = 5.0) -> bool:
    return offsets.call_alter_offsets_hook(connector, "c1", {"k": "v"}, targets, timeout_s)


def test_source_hook_sees_partition_keys_and_answers() -> None:
    RecordingSource.seen = []
    RecordingSource.answer = True
    assert call_hook(RecordingSource, [({"b": 1, "a": "x"}, {"pos": 3}), ({"c": 1}, None)])
    assert RecordingSource.seen == [({"k": "v"}, {'{"a":"x","b":1}': {"pos": 3},
                                                  '{"c":1}': None})]
    RecordingSource.answer = False
    assert not call_hook(RecordingSource, [])


def test_sink_hook_sees_topic_partitions() -> None:
    seen: list[Any] = []

    class Sink(FileStreamSinkConnector):
        def alter_offsets(self, connector_config: Mapping[str, str],
                          offsets: Mapping[TopicPartition, int | None]) -> bool:
            seen.append(dict(offsets))
            return False

    assert not call_hook(Sink, {TopicPartition("t", 0): 4, TopicPartition("t", 1): None})
    assert seen == [{TopicPartition("t", 0): 4, TopicPartition("t", 1): None}]


def test_a_hook_that_raises_vetoes_with_its_message() -> None:
    RecordingSource.answer = ConnectException("Offset objects should contain the key 'pos'")
    assert bad_request(call_hook, RecordingSource, [({"a": 1}, {"x": 1})]) == (
        "Offset objects should contain the key 'pos'")
    RecordingSource.answer = NotImplementedError()
    assert bad_request(call_hook, RecordingSource, [({"a": 1}, None)]) == (
        "Failed to modify offsets for connector c1 because it doesn't support external "
        "modification of offsets")


def test_builtin_file_source_hook_checks_positions() -> None:
    config = {"file": "/tmp/in.txt", "topic": "t"}
    good = [({"filename": "/tmp/in.txt"}, {"position": 3})]
    assert offsets.call_alter_offsets_hook(FileStreamSourceConnector, "f", config, good, 5)
    bad = [({"filename": "/tmp/in.txt"}, {"position": -3})]
    message = bad_request(offsets.call_alter_offsets_hook, FileStreamSourceConnector, "f",
                          config, bad, 5)
    assert message == "The value for the 'position' key in the offset should be a " \
                      "non-negative value"


def test_a_hung_hook_times_out_as_a_server_error() -> None:
    release = threading.Event()

    class Hung(RecordingSource):
        def alter_offsets(self, connector_config: Mapping[str, str],
                          offsets: Mapping[str, Mapping[str, Any] | None]) -> bool:
            release.wait(10)
            return True

    try:
        with pytest.raises(WorkerError) as info:
            call_hook(Hung, [({"a": 1}, None)], timeout_s=0.2)
        assert not isinstance(info.value, BadRequestError)
        assert str(info.value) == ("Timed out while calling the 'alterOffsets' method for "
                                   "source connector c1")
    finally:
        release.set()


def test_a_connector_of_the_wrong_kind_is_a_server_error() -> None:
    with pytest.raises(WorkerError, match="is not a sink connector"):
        call_hook(RecordingSource, {TopicPartition("t", 0): 1})
