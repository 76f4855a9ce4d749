"""Offset resolution with a fake cluster: topic selection, ranges, JSON, rate limits."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from spark_kafka_source.offsets import (
    ClusterLookups,
    KafkaSourceError,
    OffsetRange,
    next_ranges,
    offsets_from_json_dict,
    offsets_to_json_dict,
    ranges_to_json,
    rate_limit,
    resolve_offset_ranges,
    select_topics,
)
from spark_kafka_source.options import Subscription, parse_options
from tests.unit.spark_kafka_source._fakes import FakeLookups

BOOTSTRAP = {"kafka.bootstrap.servers": "k:9092"}


def cluster() -> FakeLookups:
    """Topics a (2 partitions) and b (1); a-0 holds 10..50, a-1 0..7, b-0 3..3 (empty)."""
    return FakeLookups(
        topic_partitions={"a": 2, "b": 1, "orders-1": 1, "orders-22": 1, "xorders-1": 1,
                          "__consumer_offsets": 50},
        earliest={("a", 0): 10, ("b", 0): 3},
        latest={("a", 0): 50, ("a", 1): 7, ("b", 0): 3},
        connectors={"files": ["b", "a", "b"], "idle": []})


def resolve(lookups: FakeLookups, **options: Any) -> list[OffsetRange]:
    return resolve_offset_ranges({**BOOTSTRAP, **options}, lookups=lookups)


def test_earliest_to_latest_covers_every_partition_in_order() -> None:
    assert resolve(cluster(), subscribe="b,a") == [
        OffsetRange("a", 0, 10, 50), OffsetRange("a", 1, 0, 7), OffsetRange("b", 0, 3, 3)]


def test_specific_offsets_look_up_only_the_markers() -> None:
    lookups = cluster()
    ranges = resolve(lookups, subscribe="a",
                     startingOffsets='{"a": {"0": 20, "1": -2}}',
                     endingOffsets='{"a": {"0": -1, "1": 5}}')
    assert ranges == [OffsetRange("a", 0, 20, 50), OffsetRange("a", 1, 0, 5)]
    looked_up = [c for c in lookups.calls if c[0] == "offsets" and c[2]]
    assert looked_up == [("offsets", "earliest", (("a", 1),)), ("offsets", "latest", (("a", 0),))]


def test_specific_offsets_must_name_exactly_the_subscribed_partitions() -> None:
    with pytest.raises(ValueError, match=r"startingOffsets must give an offset for every "
                                         r"subscribed partition.*missing: a-1; not subscribed: "
                                         r"none"):
        resolve(cluster(), subscribe="a", startingOffsets='{"a": {"0": 1}}')
    with pytest.raises(ValueError, match="endingOffsets.*missing: none; not subscribed: b-0"):
        resolve(cluster(), subscribe="a", endingOffsets='{"a": {"0": 1, "1": 1}, "b": {"0": 1}}')


def test_start_past_end_fails_unless_data_loss_is_tolerated() -> None:
    options = {"subscribe": "a", "startingOffsets": '{"a": {"0": 60, "1": 0}}'}
    with pytest.raises(ValueError, match="startingOffsets 60 of a-0 is past its endingOffsets 50"):
        resolve(cluster(), **options)
    assert resolve(cluster(), failOnDataLoss="false", **options)[0] == OffsetRange("a", 0, 60, 60)


def test_unknown_subscribed_topic_is_an_error_for_batch() -> None:
    with pytest.raises(ValueError, match="option subscribe: topics not found in the cluster: "
                                         "nope"):
        resolve(cluster(), subscribe="a,nope")


def test_bad_options_fail_before_any_lookup() -> None:
    lookups = cluster()
    with pytest.raises(ValueError, match="startingOffsets can't be latest"):
        resolve(lookups, subscribe="a", startingOffsets="latest")
    assert lookups.calls == []


def test_pattern_matches_whole_names_and_skips_internal_topics() -> None:
    selected = select_topics(Subscription("subscribePattern", pattern=r"orders-\d+|__.*"),
                             cluster())
    assert selected == {"orders-1": 1, "orders-22": 1}
    assert resolve(cluster(), subscribePattern="nothing-.*") == []


def test_connector_topics_come_from_kafka_connect() -> None:
    lookups = cluster()
    ranges = resolve(lookups, connector="files", **{"connect.url": "http://connect:8083"})
    assert [(r.topic, r.partition) for r in ranges] == [("a", 0), ("a", 1), ("b", 0)]
    assert ("connector_topics", "http://connect:8083", "files") in lookups.calls


def test_connector_without_active_topics_is_an_error() -> None:
    with pytest.raises(ValueError, match="connector 'idle' has no active topics"):
        resolve(cluster(), connector="idle", **{"connect.url": "http://connect:8083"})


def test_streams_tolerate_topics_that_do_not_exist_yet() -> None:
    selected = select_topics(Subscription("subscribe", topics=("a", "later")), cluster(),
                             require_existing=False)
    assert selected == {"a": 2}


def test_ranges_to_json_is_sparks_format_and_reads_the_same_ranges_again() -> None:
    ranges = resolve(cluster(), subscribe="a,b")
    starting, ending = ranges_to_json(ranges)
    assert json.loads(starting) == {"a": {"0": 10, "1": 0}, "b": {"0": 3}}
    assert json.loads(ending) == {"a": {"0": 50, "1": 7}, "b": {"0": 3}}
    moved = cluster()
    moved.latest[("a", 0)] = 90  # new records since: the recorded ranges still hold
    again = resolve(moved, subscribe="a,b", startingOffsets=starting, endingOffsets=ending)
    assert again == ranges


def test_offsets_json_dict_orders_partitions_numerically() -> None:
    as_dict = offsets_to_json_dict({("t", 10): 1, ("t", 2): 2, ("a", 0): 3})
    assert json.dumps(as_dict) == '{"a": {"0": 3}, "t": {"2": 2, "10": 1}}'
    assert offsets_from_json_dict(as_dict) == {("t", 10): 1, ("t", 2): 2, ("a", 0): 3}


def test_rate_limit_shares_the_limit_in_proportion() -> None:
    start = {("t", 0): 0, ("t", 1): 100, ("t", 2): 5}
    latest = {("t", 0): 900, ("t", 1): 200, ("t", 2): 6}
    capped = rate_limit(start, latest, 100)
    # 900 / 1001 * 100 → 89, 100 / 1001 * 100 → 9, and the 1 available is not starved.
    assert capped == {("t", 0): 89, ("t", 1): 109, ("t", 2): 6}
    assert rate_limit(start, latest, 5000) == latest


def test_invalid_librdkafka_option_is_a_value_error() -> None:
    lookups = ClusterLookups(parse_options({**BOOTSTRAP, "subscribe": "a",
                                            "kafka.no.such.property": "1"}))
    with pytest.raises(ValueError, match="no.such.property"):
        lookups.topics()


class _Response:
    def __init__(self, status: int, body: Any) -> None:
        self.status_code, self._body = status, body
        self.text = json.dumps(body)

    def json(self) -> Any:
        return self._body


@pytest.mark.parametrize(("status", "body", "error", "match"), [
    (404, {"error_code": 404, "message": "no"}, ValueError, "has no connector 'c'"),
    (500, {"error_code": 500, "message": "boom"}, KafkaSourceError, "returned 500"),
    (200, {"other": {"topics": []}}, KafkaSourceError, "did not return"),
])
def test_connector_lookup_errors(monkeypatch: pytest.MonkeyPatch, status: int, body: Any,
                                 error: type[Exception], match: str) -> None:
    monkeypatch.setattr(httpx, "get", lambda url, timeout, auth: _Response(status, body))
    lookups = ClusterLookups(parse_options({**BOOTSTRAP, "subscribe": "a"}))
    with pytest.raises(error, match=match):
        lookups.connector_topics("http://connect:8083", "c")


def test_connector_lookup_url_and_unreachable_connect(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str] = []

    def get(url: str, timeout: float, auth: Any) -> _Response:
        seen.append(url)
        return _Response(200, {"a/b": {"topics": ["t1", "t2"]}})

    monkeypatch.setattr(httpx, "get", get)
    lookups = ClusterLookups(parse_options({**BOOTSTRAP, "subscribe": "a"}))
    assert lookups.connector_topics("http://connect:8083", "a/b") == ["t1", "t2"]
    assert seen == ["http://connect:8083/connectors/a%2Fb/topics"]

    def refuse(url: str, timeout: float, auth: Any) -> _Response:
        raise httpx.ConnectError("refused")

    monkeypatch.setattr(httpx, "get", refuse)
    with pytest.raises(KafkaSourceError, match="cannot reach Kafka Connect"):
        lookups.connector_topics("http://connect:8083", "a/b")


def test_connect_url_passwords_stay_out_of_messages(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str] = []

    def get(url: str, timeout: float, auth: Any) -> _Response:
        seen.append(url)
        return _Response(500, {"error_code": 500, "message": "boom"})

    monkeypatch.setattr(httpx, "get", get)
    lookups = ClusterLookups(parse_options({**BOOTSTRAP, "subscribe": "a"}))
    with pytest.raises(KafkaSourceError) as info:
        lookups.connector_topics("https://ops:s3cret@connect:8083", "c")
    assert seen == ["https://ops:s3cret@connect:8083/connectors/c/topics"]  # auth is sent
    assert "s3cret" not in str(info.value) and "ops:***@connect:8083" in str(info.value)
    with pytest.raises(ValueError) as bad:
        parse_options({**BOOTSTRAP, "connector": "c", "connect.url": "ftp://u:s3cret@h"})
    assert "s3cret" not in str(bad.value)


def test_connect_basic_auth_options(monkeypatch: pytest.MonkeyPatch) -> None:
    sent: list[Any] = []

    def get(url: str, timeout: float, auth: Any) -> _Response:
        sent.append(auth)
        return _Response(200, {"c": {"topics": ["t"]}})

    monkeypatch.setattr(httpx, "get", get)
    parsed = parse_options({**BOOTSTRAP, "connector": "c", "connect.url": "https://connect",
                            "connect.username": "ops", "connect.password": "s3cret"})
    assert ClusterLookups(parsed).connector_topics("https://connect", "c") == ["t"]
    assert sent == [("ops", "s3cret")]
    assert "s3cret" not in repr(parsed)


def test_next_ranges_continue_where_the_previous_run_stopped() -> None:
    options = {**BOOTSTRAP, "subscribe": "a,b"}
    first = next_ranges(options, None, lookups=cluster())
    assert first == resolve(cluster(), subscribe="a,b")  # earliest → latest
    _, ending = ranges_to_json([OffsetRange("a", 0, 10, 30), OffsetRange("a", 1, 0, 7)])
    # b-0 was not in the previous run (a new topic): it starts at its earliest offset.
    assert next_ranges(options, ending, lookups=cluster()) == [
        OffsetRange("a", 0, 30, 50), OffsetRange("a", 1, 7, 7), OffsetRange("b", 0, 3, 3)]
    # The previous end as a dict works too, and endingOffsets still applies.
    assert next_ranges({**options, "endingOffsets": '{"a": {"0": 40, "1": -1}, "b": {"0": -1}}'},
                       json.loads(ending), lookups=cluster())[0] == OffsetRange("a", 0, 30, 40)


@pytest.mark.parametrize(("stopped", "tolerated"), [(5, OffsetRange("a", 0, 10, 50)),
                                                    (60, OffsetRange("a", 0, 50, 50))])
def test_next_ranges_refuse_a_previous_end_that_is_gone(stopped: int,
                                                         tolerated: OffsetRange) -> None:
    options = {**BOOTSTRAP, "subscribe": "a"}
    previous = {"a": {"0": stopped, "1": 0}}
    with pytest.raises(ValueError, match=f"a-0: the previous run ended at offset {stopped}, "
                                         "but the partition now holds offsets 10 to 50"):
        next_ranges(options, previous, lookups=cluster())
    ranges = next_ranges({**options, "failOnDataLoss": "false"}, previous, lookups=cluster())
    assert ranges[0] == tolerated


def test_next_ranges_take_their_start_from_the_previous_run_only() -> None:
    with pytest.raises(ValueError, match="do not set startingOffsets"):
        next_ranges({**BOOTSTRAP, "subscribe": "a", "StartingOffsets": "earliest"}, None,
                    lookups=cluster())
