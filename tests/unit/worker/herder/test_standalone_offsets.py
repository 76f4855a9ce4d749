"""StandaloneHerder's KIP-875 methods over memory stores, with a fake sink consumer group.

Connectors are created STOPPED (KIP-980 ``initial_state``) so that no task ever starts and
no Kafka is needed; the Kafka side of sinks is ``tests/integration/test_offsets_kip875.py``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from tests.unit.worker.herder.conftest import new_standalone_herder
from worker.api.connector import TopicPartition
from worker.builtin.connectors.generator import SequenceGeneratorConnector
from worker.config.worker_config import WorkerConfig
from worker.errors import BadRequestError, ConflictError, NotFoundError, WorkerError
from worker.herder.models import ConnectorOffset
from worker.herder.standalone import StandaloneHerder
from worker.plugins.registry import PluginType
from worker.storage.base import TargetState

GENERATOR = {"connector.class": "SequenceGenerator", "topic": "t", "tasks.max": "2"}
SINK = {"connector.class": "FileStreamSink", "topics": "orders"}
ALTERED = "The offsets for this connector have been altered successfully"
RESET = "The offsets for this connector have been reset successfully"


class FakeGroup:
    """Stands in for ``SinkGroupOffsets``: committed offsets in a dict."""

    def __init__(self) -> None:
        self.committed: dict[TopicPartition, int] = {}
        self.members = False
        self.group_ids: list[str] = []

    def offsets(self) -> dict[TopicPartition, int]:
        return dict(self.committed)

    def ensure_no_active_members(self, reset: bool) -> None:
        if self.members:
            raise WorkerError("zombie sink tasks")

    def alter(self, offsets: Mapping[TopicPartition, int | None]) -> None:
        for tp, offset in offsets.items():
            if offset is None:
                self.committed.pop(tp, None)
            else:
                self.committed[tp] = offset

    def reset(self) -> None:
        self.committed.clear()


@pytest.fixture
def group() -> FakeGroup:
    return FakeGroup()


@pytest.fixture
def herder(group: FakeGroup) -> Iterator[StandaloneHerder]:
    herder = new_standalone_herder()

    def open_group(_config: WorkerConfig, name: str, connector_config: Mapping[str, str]
                   ) -> Any:
        group.group_ids.append(connector_config.get("consumer.override.group.id")
                               or f"connect-{name}")
        return group

    herder.sink_offsets_factory = open_group
    herder.start()
    try:
        yield herder
    finally:
        herder.stop()


def create(herder: StandaloneHerder, name: str, config: dict[str, str],
           state: TargetState = TargetState.STOPPED) -> None:
    herder.put_connector_config(name, config, allow_replace=False, initial_state=state)


def test_source_offsets_alter_augments_and_null_removes(herder: StandaloneHerder) -> None:
    create(herder, "gen", GENERATOR)
    herder.offset_store.put("gen", [({"task": 0}, {"seq": 10}), ({"task": 1}, {"seq": 20})])

    message = herder.alter_connector_offsets("gen", [
        ConnectorOffset({"task": 0}, {"seq": 3}), ConnectorOffset({"task": 2}, {"seq": 1})])
    assert message.message == ALTERED  # the generator implements the hook
    assert [(o.partition, o.offset) for o in herder.connector_offsets("gen").offsets] == [
        ({"task": 0}, {"seq": 3}), ({"task": 1}, {"seq": 20}), ({"task": 2}, {"seq": 1})]

    herder.alter_connector_offsets("gen", [ConnectorOffset({"task": 1}, None)])
    assert [o.partition for o in herder.connector_offsets("gen").offsets] == [{"task": 0},
                                                                              {"task": 2}]


def test_source_reset_is_idempotent(herder: StandaloneHerder) -> None:
    create(herder, "gen", GENERATOR)
    herder.offset_store.put("gen", [({"task": 0}, {"seq": 10})])
    assert herder.reset_connector_offsets("gen").message == RESET
    assert herder.connector_offsets("gen").offsets == []
    assert herder.reset_connector_offsets("gen").message == RESET


def test_writes_need_a_stopped_connector(herder: StandaloneHerder) -> None:
    create(herder, "paused", GENERATOR, TargetState.PAUSED)
    herder.offset_store.put("paused", [({"task": 0}, {"seq": 10})])
    for write in (lambda: herder.reset_connector_offsets("paused"),
                  lambda: herder.alter_connector_offsets(
                      "paused", [ConnectorOffset({"task": 0}, {"seq": 1})])):
        with pytest.raises(BadRequestError, match="must be in the STOPPED state"):
            write()
    assert herder.connector_offsets("paused").offsets[0].offset == {"seq": 10}


def test_unknown_connector_is_not_found(herder: StandaloneHerder) -> None:
    with pytest.raises(NotFoundError, match="Connector nope not found"):
        herder.connector_offsets("nope")
    with pytest.raises(NotFoundError):
        herder.alter_connector_offsets("nope", [ConnectorOffset({"a": 1}, None)])
    with pytest.raises(NotFoundError):
        herder.reset_connector_offsets("nope")


def test_a_vetoed_or_malformed_request_changes_nothing(herder: StandaloneHerder) -> None:
    create(herder, "gen", GENERATOR)
    herder.offset_store.put("gen", [({"task": 0}, {"seq": 10})])
    with pytest.raises(BadRequestError, match="integer key 'task'"):  # the generator's veto
        herder.alter_connector_offsets("gen", [ConnectorOffset({"task": 0}, {"seq": 1}),
                                               ConnectorOffset({"shard": 1}, {"seq": 1})])
    with pytest.raises(BadRequestError, match="primitive types"):
        herder.alter_connector_offsets("gen", [ConnectorOffset({"task": 0}, {"seq": [1]})])
    assert herder.offset_store.get_all("gen") == [({"task": 0}, {"seq": 10})]


def test_sink_offsets_go_to_the_consumer_group(herder: StandaloneHerder,
                                               group: FakeGroup) -> None:
    create(herder, "sink", {**SINK, "consumer.override.group.id": "custom"})
    group.committed = {TopicPartition("orders", 0): 5, TopicPartition("orders", 1): 6}
    assert [(o.partition, o.offset) for o in herder.connector_offsets("sink").offsets] == [
        ({"kafka_topic": "orders", "kafka_partition": 0}, {"kafka_offset": 5}),
        ({"kafka_topic": "orders", "kafka_partition": 1}, {"kafka_offset": 6})]

    message = herder.alter_connector_offsets("sink", [
        ConnectorOffset({"kafka_topic": "orders", "kafka_partition": 0}, {"kafka_offset": 2}),
        ConnectorOffset({"kafka_topic": "orders", "kafka_partition": 1}, None)])
    assert message.message == ALTERED
    assert group.committed == {TopicPartition("orders", 0): 2}
    assert herder.reset_connector_offsets("sink").message == RESET
    assert group.committed == {}
    assert set(group.group_ids) == {"custom"}


def test_sink_writes_refused_while_the_group_has_members(herder: StandaloneHerder,
                                                         group: FakeGroup) -> None:
    create(herder, "sink", SINK)
    group.committed = {TopicPartition("orders", 0): 5}
    group.members = True
    with pytest.raises(WorkerError, match="zombie"):
        herder.reset_connector_offsets("sink")
    assert group.committed == {TopicPartition("orders", 0): 5}


class ReconfiguringGenerator(SequenceGeneratorConnector):
    """Its hook reconfigures the connector meanwhile, as a concurrent PUT would."""

    herder: StandaloneHerder | None = None

    def alter_offsets(self, connector_config: Mapping[str, str],
                      offsets: Mapping[str, Mapping[str, Any] | None]) -> bool:
        assert self.herder is not None
        self.herder.put_connector_config(
            "gen", {**connector_config, "tasks.max": "1"}, allow_replace=True)
        return True


def test_a_reconfiguration_during_the_hook_aborts_the_write(herder: StandaloneHerder) -> None:
    herder.registry.register(ReconfiguringGenerator, PluginType.SOURCE, "test.Reconfiguring")
    ReconfiguringGenerator.herder = herder
    create(herder, "gen", {**GENERATOR, "connector.class": "test.Reconfiguring"})
    with pytest.raises(ConflictError, match="reconfigured while its offsets"):
        herder.alter_connector_offsets("gen", [ConnectorOffset({"task": 0}, {"seq": 1})])
    assert herder.connector_offsets("gen").offsets == []


def test_leftover_task_configs_count_as_not_stopped(herder: StandaloneHerder) -> None:
    create(herder, "gen", GENERATOR)
    herder.config_store.put_task_configs("gen", [{"task.id": "0"}])  # as Kafka checks too
    with pytest.raises(BadRequestError, match="must be in the STOPPED state"):
        herder.reset_connector_offsets("gen")
