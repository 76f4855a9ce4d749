"""worker.runtime.chain: TransformationChain built from a connector config (real registry)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import pytest

from worker.api.records import ConnectRecord, SourceRecord
from worker.api.transforms import Predicate, Transformation
from worker.errors import PluginNotFoundError
from worker.plugins.registry import PluginRegistry, PluginType, builtin_registry
from worker.runtime.chain import TransformationChain

T = "org.apache.kafka.connect.transforms"


def record(topic: str = "orders", value: Any = None, headers: list[tuple[str, Any]] | None = None
           ) -> SourceRecord:
    return SourceRecord({"p": 1}, {"o": 1}, topic, value=value, headers=headers)


class Recorder(Transformation):
    """Records what it is configured with and every record it sees."""

    instances: ClassVar[list[Recorder]] = []

    def __init__(self) -> None:
        self.configs: dict[str, Any] = {}
        self.seen: list[str] = []
        self.closed = False
        Recorder.instances.append(self)

    def configure(self, configs: Mapping[str, Any]) -> None:
        self.configs = dict(configs)

    def apply(self, record: Any) -> Any:
        self.seen.append(record.topic)
        return record

    def close(self) -> None:
        self.closed = True


class ClosingPredicate(Predicate):
    instances: ClassVar[list[ClosingPredicate]] = []

    def __init__(self) -> None:
        self.closed = False
        ClosingPredicate.instances.append(self)

    def test(self, record: ConnectRecord) -> bool:
        return True

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def registry() -> PluginRegistry:
    registry = builtin_registry()
    registry.register(Recorder, PluginType.TRANSFORMATION, "test.Recorder")
    registry.register(ClosingPredicate, PluginType.PREDICATE, "test.ClosingPredicate")
    Recorder.instances.clear()
    ClosingPredicate.instances.clear()
    return registry


def chain(registry: PluginRegistry, **config: str) -> TransformationChain:
    return TransformationChain.from_config(config, registry)


def test_no_transforms_is_an_empty_chain(registry: PluginRegistry) -> None:
    empty = TransformationChain.from_config({"name": "c"}, registry)
    r = record()

    assert not empty
    assert empty.apply(r) is r


def test_blank_transforms_list_is_empty(registry: PluginRegistry) -> None:
    assert not chain(registry, transforms=" , ")


def test_java_class_name_resolves_and_transforms(registry: PluginRegistry) -> None:
    built = TransformationChain.from_config({
        "transforms": "route",
        "transforms.route.type": f"{T}.RegexRouter",
        "transforms.route.regex": "(.*)",
        "transforms.route.replacement": "copy-$1",
    }, registry)

    assert built
    assert built.apply(record("orders")).topic == "copy-orders"


def test_transforms_apply_in_listed_order(registry: PluginRegistry) -> None:
    built = TransformationChain.from_config({
        "transforms": " insert , route ",
        "transforms.insert.type": f"{T}.InsertField$Value",
        "transforms.insert.topic.field": "source_topic",
        "transforms.route.type": "RegexRouter",
        "transforms.route.regex": "orders",
        "transforms.route.replacement": "renamed",
    }, registry)

    out = built.apply(record("orders", value={"id": 1}))

    # InsertField ran first: it saw the original topic.
    assert out.topic == "renamed"
    assert out.value == {"id": 1, "source_topic": "orders"}


def test_filter_without_predicate_drops_every_record(registry: PluginRegistry) -> None:
    built = chain(registry, **{"transforms": "drop,spy", "transforms.drop.type": "Filter",
                               "transforms.spy.type": "test.Recorder"})

    assert built.apply(record()) is None
    assert Recorder.instances[0].seen == []  # nothing after a drop runs


def test_predicate_gates_a_filter(registry: PluginRegistry) -> None:
    built = TransformationChain.from_config({
        "transforms": "dropTemp",
        "transforms.dropTemp.type": f"{T}.Filter",
        "transforms.dropTemp.predicate": "isTemp",
        "predicates": "isTemp",
        "predicates.isTemp.type": f"{T}.predicates.TopicNameMatches",
        "predicates.isTemp.pattern": "temp-.*",
    }, registry)

    assert built.apply(record("temp-1")) is None
    kept = record("orders")
    assert built.apply(kept) is kept


@pytest.mark.parametrize("negate", ["true", "TRUE", " True "])
def test_negated_predicate(registry: PluginRegistry, negate: str) -> None:
    built = TransformationChain.from_config({
        "transforms": "keepOnlyOrders",
        "transforms.keepOnlyOrders.type": "Filter",
        "transforms.keepOnlyOrders.predicate": "isOrders",
        "transforms.keepOnlyOrders.negate": negate,
        "predicates": "isOrders",
        "predicates.isOrders.type": "TopicNameMatches",
        "predicates.isOrders.pattern": "orders",
    }, registry)

    assert built.apply(record("orders")) is not None
    assert built.apply(record("other")) is None


def test_negate_false_is_the_plain_predicate(registry: PluginRegistry) -> None:
    built = TransformationChain.from_config({
        "transforms": "f",
        "transforms.f.type": "Filter",
        "transforms.f.predicate": "tomb",
        "transforms.f.negate": "false",
        "predicates": "tomb",
        "predicates.tomb.type": "RecordIsTombstone",
    }, registry)

    assert built.apply(record(value=None)) is None
    assert built.apply(record(value="x")) is not None


def test_one_predicate_shared_by_two_transforms(registry: PluginRegistry) -> None:
    built = TransformationChain.from_config({
        "transforms": "a,b",
        "transforms.a.type": f"{T}.InsertField$Value",
        "transforms.a.static.field": "a",
        "transforms.a.static.value": "1",
        "transforms.a.predicate": "hasTrace",
        "transforms.b.type": f"{T}.InsertField$Value",
        "transforms.b.static.field": "b",
        "transforms.b.static.value": "2",
        "transforms.b.predicate": "hasTrace",
        "transforms.b.negate": "true",
        "predicates": "hasTrace",
        "predicates.hasTrace.type": "HasHeaderKey",
        "predicates.hasTrace.name": "trace",
    }, registry)

    assert built.apply(record(value={}, headers=[("trace", b"1")])).value == {"a": "1"}
    assert built.apply(record(value={})).value == {"b": "2"}


def test_transform_gets_only_its_own_keys(registry: PluginRegistry) -> None:
    TransformationChain.from_config({
        "name": "c",
        "transforms": "spy",
        "transforms.spy.type": "test.Recorder",
        "transforms.spy.predicate": "p",
        "transforms.spy.negate": "true",
        "transforms.spy.some.setting": "42",
        "transforms.spyglass.other": "not mine",
        "predicates": "p",
        "predicates.p.type": "RecordIsTombstone",
    }, registry)

    assert Recorder.instances[0].configs == {"some.setting": "42"}


def test_bad_transform_config_raises_at_build(registry: PluginRegistry) -> None:
    with pytest.raises(ValueError, match="regex"):
        TransformationChain.from_config({"transforms": "r", "transforms.r.type": "RegexRouter",
                                         "transforms.r.replacement": "x"}, registry)


def test_unknown_transform_type(registry: PluginRegistry) -> None:
    with pytest.raises(PluginNotFoundError, match="Transformation.*com.example.Missing"):
        chain(registry, **{"transforms": "x", "transforms.x.type": "com.example.Missing"})


def test_unknown_predicate_type(registry: PluginRegistry) -> None:
    with pytest.raises(PluginNotFoundError, match="Predicate"):
        chain(registry, **{"predicates": "p", "predicates.p.type": "NoSuchPredicate"})


def test_connector_class_is_not_a_transformation(registry: PluginRegistry) -> None:
    with pytest.raises(PluginNotFoundError):
        chain(registry, **{"transforms": "x", "transforms.x.type": "FileStreamSource"})


def test_close_closes_transforms_and_predicates(registry: PluginRegistry) -> None:
    built = TransformationChain.from_config({
        "transforms": "a,b",
        "transforms.a.type": "test.Recorder",
        "transforms.a.predicate": "p",
        "transforms.b.type": "test.Recorder",
        "predicates": "p",
        "predicates.p.type": "test.ClosingPredicate",
    }, registry)

    built.close()

    assert [r.closed for r in Recorder.instances] == [True, True]
    assert all(p.closed for p in ClosingPredicate.instances)
