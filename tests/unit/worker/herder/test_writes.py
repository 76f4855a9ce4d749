"""The write operations ThreadedHerder defines once, exercised through StandaloneHerder.

Memory stores; connectors are created STOPPED or PAUSED so that no task starts and no
Kafka is needed. The distributed herder carries out the same
operations on its leader (``tests/integration/test_distributed_cluster.py``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import pytest

from tests.support import wait_until
from tests.unit.worker.herder.conftest import new_standalone_herder
from worker.api.config_def import ConfigValue
from worker.builtin.connectors.generator import SequenceGeneratorConnector
from worker.errors import AlreadyExistsError, ConfigValidationError, NotFoundError
from worker.herder.standalone import StandaloneHerder
from worker.plugins.registry import PluginType
from worker.storage.base import State, TargetState, TaskId

GENERATOR = {"connector.class": "SequenceGenerator", "topic": "t", "tasks.max": "2"}


@pytest.fixture
def herder() -> Iterator[StandaloneHerder]:
    herder = new_standalone_herder()
    herder.start()
    try:
        yield herder
    finally:
        herder.stop()


def create(herder: StandaloneHerder, name: str,
           state: TargetState = TargetState.STOPPED) -> None:
    """Create, then wait until the connector reports ``state`` (from its own thread)."""
    herder.put_connector_config(name, GENERATOR, allow_replace=False, initial_state=state)
    reported = State.RUNNING if state is TargetState.STARTED else State(state.value)
    wait_until(lambda: herder.connector_status(name).connector.state == reported.value,
               timeout=5, message=f"{name} {reported.value}")


def test_put_creates_then_replaces_only_when_allowed(herder: StandaloneHerder) -> None:
    created = herder.put_connector_config("gen", GENERATOR, allow_replace=False,
                                          initial_state=TargetState.STOPPED)
    assert created.created and created.info.config == {**GENERATOR, "name": "gen"}
    assert herder.config_store.snapshot().target_state("gen") is TargetState.STOPPED

    with pytest.raises(AlreadyExistsError, match="Connector gen already exists"):
        herder.put_connector_config("gen", GENERATOR, allow_replace=False)
    replaced = herder.put_connector_config("gen", {**GENERATOR, "tasks.max": "1"},
                                           allow_replace=True)
    assert not replaced.created and replaced.info.config["tasks.max"] == "1"
    # A replace keeps the target state: initial_state applies to a create only.
    assert herder.config_store.snapshot().target_state("gen") is TargetState.STOPPED


def test_invalid_put_stores_nothing(herder: StandaloneHerder) -> None:
    with pytest.raises(ConfigValidationError):
        herder.put_connector_config("gen", {**GENERATOR, "tasks.max": "0"},
                                    allow_replace=False)
    assert herder.connectors() == []


def test_patch_merges_and_none_removes(herder: StandaloneHerder) -> None:
    herder.put_connector_config("gen", {**GENERATOR, "rate": "5"}, allow_replace=False,
                                initial_state=TargetState.STOPPED)
    info = herder.patch_connector_config("gen", {"tasks.max": "1", "rate": None})
    assert info.config == {**GENERATOR, "tasks.max": "1", "name": "gen"}
    assert herder.connector_config("gen") == info.config


def test_patch_validates_and_never_creates(herder: StandaloneHerder) -> None:
    with pytest.raises(NotFoundError, match="Connector nope not found"):
        herder.patch_connector_config("nope", {"tasks.max": "1"})
    create(herder, "gen")
    with pytest.raises(ConfigValidationError):
        herder.patch_connector_config("gen", {"tasks.max": "0"})
    assert herder.connector_config("gen")["tasks.max"] == "2"


class DeletingGenerator(SequenceGeneratorConnector):
    """Its ``validate`` deletes the connector, as a concurrent DELETE would."""

    herder: StandaloneHerder | None = None

    def validate(self, connector_configs: Mapping[str, str]) -> dict[str, ConfigValue]:
        if self.herder is not None and self.herder.connectors():
            self.herder.delete_connector(connector_configs["name"])
        return super().validate(connector_configs)


def test_a_patch_of_a_connector_deleted_meanwhile_is_not_found(herder: StandaloneHerder
                                                               ) -> None:
    herder.registry.register(DeletingGenerator, PluginType.SOURCE, "test.Deleting")
    herder.put_connector_config("gen", {**GENERATOR, "connector.class": "test.Deleting"},
                                allow_replace=False, initial_state=TargetState.STOPPED)
    DeletingGenerator.herder = herder
    try:
        with pytest.raises(NotFoundError, match="Connector gen not found"):
            herder.patch_connector_config("gen", {"tasks.max": "1"})
    finally:
        DeletingGenerator.herder = None
    assert herder.connectors() == []


def test_target_states_and_delete(herder: StandaloneHerder) -> None:
    create(herder, "gen")
    herder.pause_connector("gen")
    assert herder.config_store.snapshot().target_state("gen") is TargetState.PAUSED
    herder.stop_connector("gen")
    assert herder.config_store.snapshot().target_state("gen") is TargetState.STOPPED

    herder.delete_connector("gen")
    assert herder.connectors() == []
    for write in (herder.delete_connector, herder.pause_connector, herder.resume_connector,
                  herder.stop_connector):
        with pytest.raises(NotFoundError, match="Connector gen not found"):
            write("gen")


def test_restarts_of_unknown_connectors_or_tasks_are_not_found(herder: StandaloneHerder
                                                               ) -> None:
    with pytest.raises(NotFoundError, match="Connector nope not found"):
        herder.restart_connector("nope")
    with pytest.raises(NotFoundError, match="Connector nope not found"):
        herder.restart_connector("nope", include_tasks=True)
    create(herder, "gen", TargetState.PAUSED)
    with pytest.raises(NotFoundError, match="Task gen-0 not found"):
        herder.restart_task(TaskId("gen", 0))  # a paused new connector has no tasks yet


def test_plain_restart_answers_nothing(herder: StandaloneHerder) -> None:
    create(herder, "gen", TargetState.PAUSED)
    assert herder.restart_connector("gen") is None
    # The new instance reports its state from its own thread, just after the restart.
    wait_until(lambda: herder.connector_status("gen").connector.state == State.PAUSED.value,
               timeout=5, message="the restarted connector PAUSED")


def test_only_failed_restart_leaves_a_running_connector(herder: StandaloneHerder) -> None:
    create(herder, "gen", TargetState.PAUSED)
    state = herder.restart_connector("gen", only_failed=True)
    assert state is not None and state.connector.state == State.PAUSED.value
