"""Option parsing of the Kafka data source: names, defaults, batch/stream rules, errors."""

from __future__ import annotations

from typing import Any

import pytest

from spark_kafka_source.options import (
    DEFAULT_POLL_TIMEOUT_MS,
    EARLIEST,
    LATEST,
    OffsetSpec,
    normalize,
    parse_offset_spec,
    parse_options,
)

BASE = {"kafka.bootstrap.servers": "k1:9092,k2:9092", "subscribe": "orders"}


def opts(**extra: Any) -> dict[str, Any]:
    return {**BASE, **extra}


def test_defaults_follow_spark() -> None:
    batch = parse_options(BASE, "batch")
    assert batch.starting == OffsetSpec("earliest")
    assert batch.ending == OffsetSpec("latest")
    assert parse_options(BASE, "stream").starting == OffsetSpec("latest")
    assert batch.fail_on_data_loss is True
    assert batch.include_headers is True
    assert batch.max_offsets_per_trigger is None
    assert batch.poll_timeout_ms == DEFAULT_POLL_TIMEOUT_MS
    assert batch.bootstrap_servers == "k1:9092,k2:9092"


def test_names_are_case_insensitive_as_spark_passes_them_lower_cased() -> None:
    lowered = {k.lower(): v for k, v in
               opts(subscribePattern=None, startingOffsets='{"orders": {"0": 5}}',
                    maxOffsetsPerTrigger="10").items() if v is not None}
    parsed = parse_options(lowered, "stream")
    assert parsed.starting == OffsetSpec("specific", {"orders": {0: 5}})
    assert parsed.max_offsets_per_trigger == 10


def test_kafka_options_go_to_librdkafka_without_prefix() -> None:
    parsed = parse_options(opts(**{"kafka.security.protocol": "SASL_SSL",
                                   "kafka.sasl.password": "s3cret",
                                   "kafka.fetch.max.bytes": 1024}))
    assert parsed.client_config == {"bootstrap.servers": "k1:9092,k2:9092",
                                    "security.protocol": "SASL_SSL", "sasl.password": "s3cret",
                                    "fetch.max.bytes": "1024"}
    assert "s3cret" not in repr(parsed)


def test_values_are_converted_like_spark_options() -> None:
    assert normalize({"A": True, "b": 3, "c": {"t": {"0": 1}}, "d": None}) == {
        "a": "true", "b": "3", "c": '{"t":{"0":1}}'}


def test_subscribe_list_is_trimmed_and_deduplicated() -> None:
    parsed = parse_options(opts(subscribe=" a, b ,,a "))
    assert parsed.subscription.kind == "subscribe"
    assert parsed.subscription.topics == ("a", "b")


def test_subscribe_pattern_and_connector() -> None:
    pattern = parse_options({**BASE, "subscribe": None, "subscribePattern": r"orders-\d+"})
    assert pattern.subscription.pattern == r"orders-\d+"
    connector = parse_options({"kafka.bootstrap.servers": "k:9092", "connector": "files",
                               "connect.url": "http://connect:8083/"})
    assert connector.subscription.kind == "connector"
    assert connector.subscription.connector == "files"
    assert connector.subscription.connect_url == "http://connect:8083"


@pytest.mark.parametrize(("options", "match"), [
    ({"subscribe": "orders"}, "kafka.bootstrap.servers is required"),
    ({"kafka.bootstrap.servers": " ", "subscribe": "a"}, "kafka.bootstrap.servers"),
    ({"kafka.bootstrap.servers": "k"}, "exactly one of the options subscribe"),
    (opts(subscribePattern="x"), r"got \['subscribe', 'subscribePattern'\]"),
    (opts(connector="c", **{"connect.url": "http://c"}), "exactly one"),
    (opts(subscribe=" , "), "subscribe names no topic"),
    ({**BASE, "subscribe": None, "subscribePattern": "(unclosed"},
     "subscribePattern is not a valid regex"),
    ({"kafka.bootstrap.servers": "k", "connector": "c"}, "needs the option connect.url"),
    ({"kafka.bootstrap.servers": "k", "connector": "c", "connect.url": "connect:8083"},
     "connect.url"),
    (opts(**{"connect.url": "http://c"}), "connect.url is only used with the option connector"),
    (opts(**{"connect.password": "p"}), "connect.password is only used with the option"),
    ({"kafka.bootstrap.servers": "k", "connector": "c", "connect.url": "http://c",
      "connect.username": "u"}, "connect.username and connect.password go together"),
    (opts(maxOffsetsPerTrigger="0"), "maxOffsetsPerTrigger must be a positive integer"),
    (opts(maxOffsetsPerTrigger="lots"), "maxOffsetsPerTrigger must be a positive integer"),
    (opts(failOnDataLoss="yes"), "failOnDataLoss must be true or false"),
    (opts(includeHeaders="1"), "includeHeaders must be true or false"),
    (opts(**{"kafkaConsumer.pollTimeoutMs": "-5"}), "kafkaConsumer.pollTimeoutMs"),
    (opts(groupIdPrefix=" "), "groupIdPrefix must not be empty"),
    (opts(minPartitions="4"), "option minPartitions of Spark's Kafka source is not supported"),
    (opts(assign='{"a": [0]}'), "option assign of Spark's Kafka source is not supported"),
    (opts(startingOffsetsByTimestamp="{}"), "startingOffsetsByTimestamp"),
    (opts(subscribePatern="x"), "unknown option 'subscribepatern'"),
    (opts(**{"kafka.auto.offset.reset": "earliest"}), "kafka.auto.offset.reset is not supported"),
    (opts(**{"kafka.enable.auto.commit": "true"}), "kafka.enable.auto.commit"),
    (opts(**{"kafka.value.deserializer": "x"}), "kafka.value.deserializer"),
])
def test_bad_options_name_the_option(options: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        parse_options({k: v for k, v in options.items() if v is not None}, "batch")


def test_offset_spec_keywords_and_json() -> None:
    assert parse_offset_spec("startingOffsets", " Earliest ") == OffsetSpec("earliest")
    assert parse_offset_spec("startingOffsets", "latest") == OffsetSpec("latest")
    spec = parse_offset_spec("startingOffsets", '{"a": {"0": 23, "1": -2}, "b": {"3": -1}}')
    assert spec == OffsetSpec("specific", {"a": {0: 23, 1: EARLIEST}, "b": {3: LATEST}})


@pytest.mark.parametrize(("raw", "match"), [
    ("first", "must be 'earliest', 'latest' or JSON"),
    ("[1, 2]", "non-empty object of topics"),
    ("{}", "non-empty object of topics"),
    ('{"a": 5}', "topic 'a' must map to a non-empty object"),
    ('{"a": {}}', "topic 'a' must map"),
    ('{"a": {"x": 1}}', "partition 'x'"),
    ('{"a": {"-1": 1}}', "partition '-1'"),
    ('{"a": {"0": -3}}', "offset of a-0 must be an integer"),
    ('{"a": {"0": 1.5}}', "offset of a-0"),
    ('{"a": {"0": true}}', "offset of a-0"),
])
def test_bad_offset_json_names_the_option(raw: str, match: str) -> None:
    with pytest.raises(ValueError, match=match) as info:
        parse_offset_spec("endingOffsets", raw)
    assert "endingOffsets" in str(info.value)


@pytest.mark.parametrize(("extra", "match"), [
    ({"startingOffsets": "latest"}, "startingOffsets can't be latest for batch"),
    ({"startingOffsets": '{"orders": {"0": -1}}'}, "startingOffsets: orders-0 can't be -1"),
    ({"endingOffsets": "earliest"}, "endingOffsets can't be earliest for batch"),
    ({"endingOffsets": '{"orders": {"0": -2}}'}, "endingOffsets: orders-0 can't be -2"),
])
def test_batch_rules(extra: dict[str, str], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        parse_options(opts(**extra), "batch")
    parse_options(opts(**extra))  # without a mode (the data source's schema()) it is fine


def test_streaming_rules() -> None:
    with pytest.raises(ValueError, match="endingOffsets is not allowed in streaming"):
        parse_options(opts(endingOffsets="latest"), "stream")
    assert parse_options(opts(startingOffsets="earliest"), "stream").starting.kind == "earliest"
