"""worker.runtime.topic_creation: Kafka's KIP-158 topic creation for source connectors —
group matching, config parsing, validation (through connector_config, as the herder calls
it), the creator's broker calls (a recording stand-in for AdminClient) and the source
task's hook."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from worker.api import SourceRecord, SourceTask
from worker.api.exceptions import ConfigException, ConnectException
from worker.builtin.converters.string_bytes import StringConverter
from worker.config.worker_config import WorkerConfig
from worker.plugins.registry import builtin_registry
from worker.runtime import connector_config as cc
from worker.runtime import topic_creation as tc
from worker.runtime.chain import TransformationChain
from worker.runtime.source_task import WorkerSourceTask
from worker.storage.base import State, TargetState, TaskId
from worker.storage.memory import MemoryOffsetBackingStore

DEFAULTS = {tc.DEFAULT_REPLICATION_FACTOR: "1", tc.DEFAULT_PARTITIONS: "3"}


def config(**keys: str) -> dict[str, str]:
    """A source connector config with the default group's two settings and ``keys``."""
    return {"name": "src", "connector.class": "FileStreamSource", **DEFAULTS, **keys}


def parsed(**keys: str) -> tc.TopicCreation:
    creation = tc.parse(config(**keys))
    assert creation is not None
    return creation


def validate(props: Mapping[str, str]) -> dict[str, list[str]]:
    """The framework part of ``/config/validate`` for a source connector (AbstractHerder's
    steps): errors by key."""
    definition, errors = cc.enrich(cc.base_definition("source"), props, builtin_registry())
    values = definition.validate(props)
    found = {k: list(v.errors) for k, v in values.items() if v.errors}
    for key, message in {**errors, **cc.extra_errors(props, "source", "All")}.items():
        found.setdefault(key, []).append(message)
    return found


# --- groups and matching -------------------------------------------------------------------

class TestGroups:
    def test_the_first_listed_group_that_matches_wins_else_default(self) -> None:
        creation = parsed(**{"topic.creation.groups": "compacted, orders",
                             "topic.creation.compacted.include": "orders-state, .*-state",
                             "topic.creation.orders.include": "orders.*"})

        assert creation.group_for("orders-state").name == "compacted"  # listed first
        assert creation.group_for("users-state").name == "compacted"
        assert creation.group_for("orders-2024").name == "orders"
        assert creation.group_for("users").name == "default"

    def test_listed_order_decides_not_key_order(self) -> None:
        creation = parsed(**{"topic.creation.orders.include": "orders.*",
                             "topic.creation.compacted.include": ".*-state",
                             "topic.creation.groups": "orders,compacted"})

        assert creation.group_for("orders-state").name == "orders"

    def test_include_and_exclude_match_whole_names(self) -> None:
        creation = parsed(**{"topic.creation.groups": "g",
                             "topic.creation.g.include": "orders",
                             "topic.creation.g.exclude": "x"})

        group = creation.groups[0]
        assert group.matches("orders")
        assert not group.matches("orders-2024") and not group.matches("my-orders")
        assert not group.exclude[0].fullmatch("xyz")  # exclude is whole-name too

    def test_exclusion_wins_over_inclusion(self) -> None:
        creation = parsed(**{"topic.creation.groups": "g",
                             "topic.creation.g.include": "orders.*",
                             "topic.creation.g.exclude": "orders-tmp.*, .*-dlq"})

        assert creation.group_for("orders-1").name == "g"
        assert creation.group_for("orders-tmp-1").name == "default"
        assert creation.group_for("orders-dlq").name == "default"

    def test_a_group_without_include_matches_nothing(self) -> None:
        creation = parsed(**{"topic.creation.groups": "g", "topic.creation.g.partitions": "5"})

        assert not creation.groups[0].matches("anything")
        assert creation.group_for("anything").name == "default"

    def test_default_group_includes_everything(self) -> None:
        assert parsed().default.matches("any.topic-name_1")


# --- parsing -------------------------------------------------------------------------------

class TestParse:
    def test_group_settings_and_other_keys_become_topic_configs(self) -> None:
        creation = parsed(**{"topic.creation.groups": "compacted",
                             "topic.creation.compacted.include": "state",
                             "topic.creation.compacted.partitions": "2",
                             "topic.creation.compacted.replication.factor": "-1",
                             "topic.creation.compacted.cleanup.policy": "compact",
                             "topic.creation.compacted.retention.ms": "1000",
                             "topic.creation.default.compression.type": "lz4"})

        group = creation.group_for("state")
        assert (group.partitions, group.replication_factor) == (2, -1)
        assert group.configs == {"cleanup.policy": "compact", "retention.ms": "1000"}
        new = group.new_topic("state")
        assert (new.topic, new.num_partitions, new.replication_factor, new.config) == (
            "state", 2, -1, {"cleanup.policy": "compact", "retention.ms": "1000"})
        assert (creation.default.partitions, creation.default.replication_factor) == (3, 1)
        assert creation.default.configs == {"compression.type": "lz4"}

    def test_a_group_takes_the_default_groups_partitions_and_replication_factor(self) -> None:
        group = parsed(**{"topic.creation.groups": "g",
                          "topic.creation.g.include": ".*"}).groups[0]

        assert (group.partitions, group.replication_factor) == (3, 1)

    def test_duplicates_empty_names_and_default_are_dropped_from_the_groups(self) -> None:
        assert tc.group_names({"topic.creation.groups": " a, default,, b ,a"}) == ["a", "b"]

    @pytest.mark.parametrize("missing", [tc.DEFAULT_REPLICATION_FACTOR, tc.DEFAULT_PARTITIONS])
    def test_without_both_default_settings_there_is_no_topic_creation(self, missing: str
                                                                      ) -> None:
        props = config(**{"topic.creation.groups": "g", "topic.creation.g.include": ".*"})
        del props[missing]

        assert tc.parse(props) is None
        assert tc.creator(True, props, dict) is None

    def test_a_bad_value_names_its_key(self) -> None:
        with pytest.raises(ConfigException) as info:
            tc.parse(config(**{tc.DEFAULT_PARTITIONS: "0"}))
        assert info.value.name == tc.DEFAULT_PARTITIONS


class TestWorkerSwitch:
    def test_topic_creation_enable_is_a_worker_setting_true_by_default(self) -> None:
        assert WorkerConfig({}).get("topic.creation.enable") is True
        assert WorkerConfig({"topic.creation.enable": "false"}).get(
            "topic.creation.enable") is False

    def test_disabled_on_the_worker_means_no_creator(self) -> None:
        asked: list[bool] = []

        def admin_config() -> dict[str, str]:
            asked.append(True)
            return {}

        assert tc.creator(False, config(), admin_config) is None
        assert asked == []  # not even the admin client's settings are built
        made = tc.creator(True, config(), admin_config)
        assert made is not None and asked == [True]


# --- validation ----------------------------------------------------------------------------

class TestValidation:
    def test_definitions_are_listed_in_kafkas_groups(self) -> None:
        definition, _ = cc.enrich(cc.base_definition("source"),
                                  config(**{"topic.creation.groups": "compacted"}),
                                  builtin_registry())
        keys = definition.keys

        assert keys[tc.GROUPS].group == "Topic Creation"
        assert keys[tc.DEFAULT_PARTITIONS].group == "Topic Creation"
        for suffix in ("include", "exclude", "replication.factor", "partitions"):
            assert keys[f"topic.creation.compacted.{suffix}"].group == \
                "Topic Creation: compacted"
        # The group's partitions default to the default group's.
        assert keys["topic.creation.compacted.partitions"].default == 3
        assert "topic.creation.groups" not in cc.base_definition("sink").keys

    def test_a_valid_config_has_no_errors(self) -> None:
        assert validate(config(**{"topic.creation.groups": "compacted",
                                  "topic.creation.compacted.include": "state.*",
                                  "topic.creation.compacted.partitions": "-1",
                                  "topic.creation.compacted.cleanup.policy": "compact"})) == {}

    def test_a_connector_without_topic_creation_keys_has_no_errors(self) -> None:
        assert validate({"name": "src", "connector.class": "FileStreamSource"}) == {}
        assert validate({"name": "src", "connector.class": "FileStreamSource",
                         "topic.creation.groups": ""}) == {}

    @pytest.mark.parametrize(("key", "value", "message"), [
        (tc.DEFAULT_PARTITIONS, "0", "Invalid value 0 for configuration "
         "topic.creation.default.partitions: Number of partitions must be positive, or -1 to "
         "use the broker's default"),
        (tc.DEFAULT_REPLICATION_FACTOR, "-2", "Invalid value -2 for configuration "
         "topic.creation.default.replication.factor: Replication factor must be positive and "
         "not larger than the number of brokers in the Kafka cluster, or -1 to use the "
         "broker's default"),
        (tc.DEFAULT_PARTITIONS, "many", "Invalid value many for configuration "
         "topic.creation.default.partitions: Not a number of type INT"),
    ])
    def test_bad_default_values_are_errors_of_their_key(self, key: str, value: str,
                                                        message: str) -> None:
        assert validate(config(**{key: value})) == {key: [message]}

    def test_bad_group_values_are_errors_of_their_key(self) -> None:
        found = validate(config(**{"topic.creation.groups": "g",
                                   "topic.creation.g.include": "(open",
                                   "topic.creation.g.partitions": "0",
                                   "topic.creation.g.replication.factor": "40000"}))

        assert set(found) == {"topic.creation.g.include", "topic.creation.g.partitions",
                              "topic.creation.g.replication.factor"}
        assert "Syntax error in regular expression" in found["topic.creation.g.include"][0]
        assert "Number of partitions must be positive" in found[
            "topic.creation.g.partitions"][0]
        assert "Not a number of type SHORT" in found["topic.creation.g.replication.factor"][0]

    def test_duplicate_group_aliases(self) -> None:
        assert validate(config(**{"topic.creation.groups": "a, a",
                                  "topic.creation.a.include": "x"})) == {
            tc.GROUPS: ["Invalid value [a, a] for configuration topic.creation.groups: "
                        "Duplicate alias provided."]}

    def test_keys_of_a_group_not_listed_are_errors_of_those_keys(self) -> None:
        found = validate(config(**{"topic.creation.groups": "compacted",
                                   "topic.creation.compacted.include": "x",
                                   "topic.creation.compated.partitions": "2",
                                   "topic.creation.other.cleanup.policy": "compact"}))

        assert set(found) == {"topic.creation.compated.partitions",
                              "topic.creation.other.cleanup.policy"}
        assert found["topic.creation.compated.partitions"] == [
            "Topic creation group 'compated' is not listed in topic.creation.groups, so "
            "'topic.creation.compated.partitions' would be ignored; add 'compated' to "
            "topic.creation.groups or remove the key."]

    def test_a_listed_group_without_include_is_an_error_of_the_groups_key(self) -> None:
        found = validate(config(**{"topic.creation.groups": "a,b",
                                   "topic.creation.a.include": "x",
                                   "topic.creation.b.partitions": "2"}))

        assert list(found) == [tc.GROUPS]
        assert found[tc.GROUPS][0].startswith(
            "Topic creation group(s) 'b' listed in topic.creation.groups but not defined")

    @pytest.mark.parametrize("key", ["topic.creation.default.include",
                                     "topic.creation.default.exclude"])
    def test_the_default_groups_include_and_exclude_cannot_be_set(self, key: str) -> None:
        found = validate(config(**{key: "x.*"}))

        assert list(found) == [key]
        assert "its include and exclude cannot be set" in found[key][0]

    def test_other_keys_without_the_default_settings_report_them_missing(self) -> None:
        found = validate({"name": "src", "connector.class": "FileStreamSource",
                          "topic.creation.groups": "g", "topic.creation.g.include": "x",
                          tc.DEFAULT_PARTITIONS: "2"})

        assert list(found) == [tc.DEFAULT_REPLICATION_FACTOR]
        assert found[tc.DEFAULT_REPLICATION_FACTOR][0].startswith(
            'Missing required configuration "topic.creation.default.replication.factor" '
            "which has no default value.")

    def test_topic_creation_enable_in_a_connector_config_is_ignored(self) -> None:
        assert validate({"name": "src", "connector.class": "FileStreamSource",
                         "topic.creation.enable": "true"}) == {}


# --- the creator ---------------------------------------------------------------------------

class FakeAdmin:
    """Stands in for AdminClient: ``existing`` topics, creation failing with ``error``."""

    def __init__(self, existing: set[str] | None = None, error: KafkaError | None = None,
                 list_error: KafkaError | None = None) -> None:
        self.existing = existing or set()
        self.error = error
        self.list_error = list_error
        self.created: list[Any] = []
        self.listed = 0
        self.configs: list[dict[str, Any]] = []

    def __call__(self, conf: dict[str, Any]) -> FakeAdmin:  # the admin_factory
        self.configs.append(conf)
        return self

    def list_topics(self, timeout: float) -> Any:
        self.listed += 1
        if self.list_error is not None:
            raise KafkaException(self.list_error)
        return type("Metadata", (), {"topics": {t: None for t in self.existing}})()

    def create_topics(self, topics: list[Any], **_: Any) -> dict[str, Any]:
        self.created += topics
        error = self.error

        class Result:
            def result(self, timeout: float) -> None:
                if error is not None:
                    raise KafkaException(error)

        return {t.topic: Result() for t in topics}


def make_creator(admin: FakeAdmin, **keys: str) -> tc.TopicCreator:
    return tc.TopicCreator(parsed(**keys), {"bootstrap.servers": "b:9092"},
                           admin_factory=admin, timeout_s=1.0)


COMPACTED = {"topic.creation.groups": "compacted",
             "topic.creation.compacted.include": ".*-state",
             "topic.creation.compacted.partitions": "2",
             "topic.creation.compacted.cleanup.policy": "compact"}


class TestTopicCreator:
    def test_a_missing_topic_is_created_with_its_groups_settings_once(self) -> None:
        admin = FakeAdmin()
        creator = make_creator(admin, **COMPACTED)

        creator.ensure("users-state")
        creator.ensure("users-state")
        creator.ensure("users")

        assert [(t.topic, t.num_partitions, t.replication_factor, t.config)
                for t in admin.created] == [
            ("users-state", 2, 1, {"cleanup.policy": "compact"}), ("users", 3, 1, {})]
        assert admin.listed == 2  # the known topic costs nothing the second time
        assert admin.configs[0] == {"bootstrap.servers": "b:9092"}

    def test_an_existing_topic_is_used_as_is(self) -> None:
        admin = FakeAdmin(existing={"users-state"})
        creator = make_creator(admin, **COMPACTED)

        creator.ensure("users-state")

        assert admin.created == [] and creator.known == {"users-state"}

    def test_a_topic_created_meanwhile_counts_as_found(self) -> None:
        admin = FakeAdmin(error=KafkaError(KafkaError.TOPIC_ALREADY_EXISTS))
        creator = make_creator(admin)

        creator.ensure("users")

        assert creator.known == {"users"}

    def test_a_topic_that_cannot_be_created_fails_with_a_clear_error(self) -> None:
        admin = FakeAdmin(error=KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED))
        creator = make_creator(admin, **COMPACTED)

        with pytest.raises(ConnectException) as info:
            creator.ensure("users-state")

        message = str(info.value)
        assert message.startswith("Task failed to create new topic 'users-state' (group "
                                  "'compacted': partitions=2, replication factor=1")
        assert "Ensure that the task is authorized to create topics" in message
        assert creator.known == set()  # asked again after a restart

    def test_a_broker_that_cannot_be_asked_fails_with_a_clear_error(self) -> None:
        creator = make_creator(FakeAdmin(list_error=KafkaError(KafkaError._TRANSPORT)))

        with pytest.raises(ConnectException, match="Could not check whether topic 'users' "
                                                   "exists"):
            creator.ensure("users")


# --- the source task's hook ----------------------------------------------------------------

class RecordingCreator:
    def __init__(self, calls: list[tuple[str, Any]], fail_on: str | None = None) -> None:
        self.calls = calls
        self.fail_on = fail_on

    def ensure(self, topic: str) -> None:
        self.calls.append(("ensure", topic))
        if topic == self.fail_on:
            raise ConnectException(f"cannot create {topic}")


class RecordingProducer:
    def __init__(self, calls: list[tuple[str, Any]]) -> None:
        self.calls = calls

    def produce(self, topic: str, *args: Any) -> None:
        self.calls.append(("produce", topic))

    def produce_batch(self, topic: str, messages: list[Any], **_: Any) -> int:
        self.calls.extend(("produce", topic) for _ in messages)
        return len(messages)


class Status:
    def task(self, _task: TaskId, _state: State, _error: BaseException | None = None) -> None:
        pass


class Idle(SourceTask):
    def start(self, props: Mapping[str, str]) -> None:
        pass

    def poll(self) -> list[SourceRecord] | None:
        return None

    def stop(self) -> None:
        pass


def source_task(creator: RecordingCreator, calls: list[tuple[str, Any]]) -> WorkerSourceTask:
    task = WorkerSourceTask(
        TaskId("c", 0), Idle(), {}, TargetState.STARTED, Status(),  # type: ignore[arg-type]
        producer_config={}, key_converter=StringConverter(), value_converter=StringConverter(),
        chain=TransformationChain([]), offset_store=MemoryOffsetBackingStore(),
        offset_flush_interval_ms=1000, offset_flush_timeout_ms=1000,
        topic_creator=creator)  # type: ignore[arg-type]
    task._producer = RecordingProducer(calls)  # type: ignore[assignment]
    return task


def rec(topic: str, n: int) -> SourceRecord:
    return SourceRecord({"p": 1}, {"o": n}, topic, None, None, "k", None, f"v{n}", 1000)


class TestSourceTaskHook:
    def test_each_topic_is_ensured_before_its_first_record_and_only_once(self) -> None:
        calls: list[tuple[str, Any]] = []
        task = source_task(RecordingCreator(calls), calls)

        task._send([rec("a", 1), rec("a", 2), rec("b", 3)])
        task._send([rec("a", 4), rec("b", 5), rec("c", 6)])

        ensured = [t for kind, t in calls if kind == "ensure"]
        assert ensured == ["a", "b", "c"]
        for topic in ("a", "b", "c"):
            assert calls.index(("ensure", topic)) < calls.index(("produce", topic))

    def test_a_topic_that_cannot_be_created_fails_the_batch_before_it_is_sent(self) -> None:
        calls: list[tuple[str, Any]] = []
        task = source_task(RecordingCreator(calls, fail_on="b"), calls)

        with pytest.raises(ConnectException, match="cannot create b"):
            task._send([rec("a", 1), rec("b", 2)])

        assert ("produce", "b") not in calls
        assert task._submitted.take() == []  # nothing of the batch is committable
