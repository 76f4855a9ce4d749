from __future__ import annotations

from collections import defaultdict

import pytest
from airflow.sdk import Asset

from airflow_provider.utils.assets import (
    connector_topics_alias,
    emit_topic_assets,
    topic_asset,
    topic_asset_uri,
)


def test_topic_asset_uri_names_the_first_broker() -> None:
    assert topic_asset_uri("orders", bootstrap_servers="b1:9092,b2:9092") == "kafka://b1:9092/orders"
    assert topic_asset_uri("t", bootstrap_servers="SASL_SSL://b1:9093") == "kafka://b1:9093/t"
    assert topic_asset("orders", bootstrap_servers="b1:9092") == Asset(
        uri="kafka://b1:9092/orders", name="kafka://b1:9092/orders", group="kafka-topic")
    with pytest.raises(ValueError):
        topic_asset_uri("", bootstrap_servers="b1:9092")
    with pytest.raises(ValueError):
        topic_asset_uri("t", bootstrap_servers=" ,")


class _Events:
    def __init__(self) -> None:
        self.added: list[tuple[Asset, dict]] = []

    def add(self, asset: Asset, extra: dict) -> None:
        self.added.append((asset, extra))


def test_one_event_per_distinct_topic_through_the_alias() -> None:
    alias = connector_topics_alias("orders-sink")
    outlet_events: defaultdict = defaultdict(_Events)
    uris = emit_topic_assets({"outlet_events": outlet_events}, alias, ["b", "a", "b"],
                             bootstrap_servers="k:9092", extra={"connector": "orders-sink"})
    assert uris == ["kafka://k:9092/a", "kafka://k:9092/b"]
    assert [(a.uri, e) for a, e in outlet_events[alias].added] == [
        ("kafka://k:9092/a", {"connector": "orders-sink"}),
        ("kafka://k:9092/b", {"connector": "orders-sink"})]


def test_no_events_without_bootstrap_servers(caplog: pytest.LogCaptureFixture) -> None:
    outlet_events: defaultdict = defaultdict(_Events)
    alias = connector_topics_alias("c")
    assert emit_topic_assets({"outlet_events": outlet_events}, alias, ["a"],
                             bootstrap_servers=None, extra={}) == []
    assert not outlet_events[alias].added
    assert "no 'bootstrap_servers'" in caplog.text
