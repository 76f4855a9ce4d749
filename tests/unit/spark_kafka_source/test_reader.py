"""``read_kafka``: the switch between Spark's ``format("kafka")`` and ``connect_kafka``."""

from __future__ import annotations

from typing import Any

import pytest

from spark_kafka_source import reader as reader_module
from spark_kafka_source.kafka_source import KafkaDataSource
from spark_kafka_source.reader import (
    NATIVE_PROVIDER,
    native_kafka_available,
    read_kafka,
    read_kafka_stream,
)
from tests.unit.spark_kafka_source._fakes import FakeLookups

BOOTSTRAP = {"kafka.bootstrap.servers": "k:9092"}


class FakeBuilder:
    """``spark.read`` / ``spark.readStream``: records format and options."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.loads: list[tuple[str, dict[str, str]]] = []
        self._format = ""
        self._options: dict[str, str] = {}

    def format(self, name: str) -> FakeBuilder:
        self._format = name
        return self

    def options(self, **options: str) -> FakeBuilder:
        self._options = options
        return self

    def load(self) -> tuple[str, str, dict[str, str]]:
        self.loads.append((self._format, self._options))
        return (self.kind, self._format, self._options)


class FakeClass:
    def __init__(self, loadable: set[str]) -> None:
        self.loadable = loadable

    def forName(self, name: str, initialize: bool, loader: Any) -> str:  # noqa: N802 - Java
        if name not in self.loadable:
            raise RuntimeError(f"ClassNotFoundException: {name}")
        return name


class FakeJvm:
    """Just enough of ``spark._jvm`` for ``Class.forName(name, false, loader)``."""

    def __init__(self, loadable: set[str]) -> None:
        thread = type("Thread", (), {"currentThread": staticmethod(
            lambda: type("T", (), {"getContextClassLoader": lambda self: "loader"})())})
        self.java = type("java", (), {"lang": type("lang", (), {
            "Thread": thread, "Class": FakeClass(loadable)})})


class FakeSpark:
    def __init__(self, jvm: Any = None) -> None:
        if jvm is not None:
            self._jvm = jvm
        self.read = FakeBuilder("batch")
        self.readStream = FakeBuilder("stream")
        self.registered: list[type] = []
        self.dataSource = type("Registry", (), {"register": lambda _, cls:
                                                self.registered.append(cls)})()


def test_native_provider_detection() -> None:
    assert not native_kafka_available(FakeSpark())  # no gateway (Spark Connect)
    assert not native_kafka_available(FakeSpark(FakeJvm(set())))
    assert native_kafka_available(FakeSpark(FakeJvm({NATIVE_PROVIDER})))


def test_without_the_jar_registers_connect_kafka_once() -> None:
    spark = FakeSpark(FakeJvm(set()))
    first = read_kafka(spark, **BOOTSTRAP, subscribe="a", startingOffsets={"a": {"0": 1}})
    read_kafka_stream(spark, **BOOTSTRAP, subscribe="a", maxOffsetsPerTrigger=5)
    assert spark.registered == [KafkaDataSource]
    assert first == ("batch", "connect_kafka", {"kafka.bootstrap.servers": "k:9092",
                                                "subscribe": "a",
                                                "startingoffsets": '{"a":{"0":1}}'})
    assert spark.readStream.loads[0][1]["maxoffsetspertrigger"] == "5"


def test_with_the_jar_uses_format_kafka_with_headers() -> None:
    spark = FakeSpark(FakeJvm({NATIVE_PROVIDER}))
    kind, fmt, options = read_kafka_stream(spark, **BOOTSTRAP, subscribePattern="orders-.*")
    assert (kind, fmt) == ("stream", "kafka")
    assert options == {"kafka.bootstrap.servers": "k:9092", "subscribepattern": "orders-.*",
                       "includeheaders": "true"}
    assert spark.registered == []
    _, _, options = read_kafka(spark, **BOOTSTRAP, subscribe="a", includeHeaders=False)
    assert options["includeheaders"] == "false"


def test_with_the_jar_a_connector_is_resolved_to_subscribe(
        monkeypatch: pytest.MonkeyPatch) -> None:
    lookups = FakeLookups(topic_partitions={"t1": 1, "t2": 3}, connectors={"c": ["t2", "t1"]})
    monkeypatch.setattr("spark_kafka_source.offsets.ClusterLookups",
                        lambda parsed: lookups)
    spark = FakeSpark(FakeJvm({NATIVE_PROVIDER}))
    _, fmt, options = read_kafka(spark, **BOOTSTRAP, connector="c",
                                 **{"connect.url": "http://connect:8083",
                                    "connect.username": "u", "connect.password": "p"})
    assert fmt == "kafka"
    assert options == {"kafka.bootstrap.servers": "k:9092", "subscribe": "t1,t2",
                       "includeheaders": "true"}


def test_bad_options_raise_before_spark_is_touched() -> None:
    spark = FakeSpark(FakeJvm(set()))
    with pytest.raises(ValueError, match="kafka.bootstrap.servers is required"):
        read_kafka(spark, subscribe="a")
    with pytest.raises(ValueError, match="startingOffsets can't be latest for batch"):
        read_kafka(spark, **BOOTSTRAP, subscribe="a", startingOffsets="latest")
    with pytest.raises(ValueError, match="endingOffsets is not allowed in streaming"):
        read_kafka_stream(spark, **BOOTSTRAP, subscribe="a", endingOffsets="latest")
    assert spark.read.loads == [] and spark.readStream.loads == [] and spark.registered == []


def test_registration_is_per_session() -> None:
    one, two = FakeSpark(), FakeSpark()
    for spark in (one, two, one):
        reader_module.register_data_source(spark)
    assert (one.registered, two.registered) == ([KafkaDataSource], [KafkaDataSource])
