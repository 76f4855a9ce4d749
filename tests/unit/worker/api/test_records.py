"""worker.api.records: the sink runtime's record factory gives what the constructor gives."""

from __future__ import annotations

from worker.api.data import STRING_SCHEMA
from worker.api.headers import ConnectHeaders
from worker.api.records import SinkRecord, consumed_record


def test_a_consumed_record_equals_the_constructed_one() -> None:
    headers = ConnectHeaders([("h", "v")])
    made = consumed_record("t", 3, STRING_SCHEMA, "k", None, {"a": 1}, 42, 1700,
                           "LogAppendTime", headers)
    expected = SinkRecord("t", 3, STRING_SCHEMA, "k", None, {"a": 1}, 42, 1700,
                          "LogAppendTime", headers)
    assert made == expected
    assert (made.original_topic, made.original_kafka_partition,
            made.original_kafka_offset) == ("t", 3, 42)
    assert made.headers is headers
    # A transformation's copy keeps the original coordinates while renaming the topic.
    renamed = made.new_record(topic="t2")
    assert isinstance(renamed, SinkRecord)
    assert (renamed.topic, renamed.original_topic, renamed.kafka_offset) == ("t2", "t", 42)


def test_a_consumed_record_without_headers_reads_empty_headers() -> None:
    made = consumed_record("t", 0, None, None, None, "v", 0, None, "NoTimestampType", None)
    assert not made.has_headers()
    assert made == SinkRecord("t", 0, None, None, None, "v", 0, None, "NoTimestampType")
    assert len(made.headers) == 0
