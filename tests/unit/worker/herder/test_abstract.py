"""worker.herder.abstract: config validation (Kafka's ConfigInfos) and the status reads.

AbstractHerder is exercised through a minimal concrete subclass wired to the memory stores
and the built-in plugin registry (plus a few test connectors registered into it).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from typing import Any, NoReturn

import pytest

from tests.unit.worker.herder.conftest import MinimalHerder
from worker.api import SinkConnector, SourceConnector, SourceTask
from worker.api.config_def import (
    NO_DEFAULT,
    ConfigDef,
    ConfigValue,
    Importance,
    Type,
    non_empty_string,
)
from worker.api.exceptions import ConfigException
from worker.config.worker_config import WorkerConfig
from worker.errors import (
    BadRequestError,
    ConfigValidationError,
    NotFoundError,
    WorkerError,
)
from worker.herder import abstract
from worker.herder.models import ConfigInfo, ConfigInfos, ConnectorType
from worker.plugins.registry import PluginRegistry, PluginType, builtin_registry
from worker.storage.base import ConnectorStatus, State, TaskId, TaskStatus
from worker.storage.memory import MemoryConfigBackingStore, MemoryStatusBackingStore

FILE_SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"
FILE_SINK = "org.apache.kafka.connect.file.FileStreamSinkConnector"
SECRET = "s3cr3t-pa55w0rd-42"
WORKER = "10.0.0.1:8083"


# --- test connectors ----------------------------------------------------------------------

class _Base(SourceConnector):
    def start(self, props: Mapping[str, str]) -> None: ...

    def task_class(self) -> type[SourceTask]:
        raise NotImplementedError

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return []

    def stop(self) -> None: ...


DB_CONFIG_DEF = (
    ConfigDef()
    .define("db.url", Type.STRING, NO_DEFAULT, Importance.HIGH, "JDBC URL.",
            group="Database", order_in_group=1)
    .define("db.password", Type.PASSWORD, None, Importance.HIGH, "Password.",
            group="Database", order_in_group=2)
    .define("db.api.key", Type.PASSWORD, NO_DEFAULT, Importance.HIGH, "Key.",
            validator=non_empty_string(), group="Database", order_in_group=3)
    .define("poll.ms", Type.INT, 500, Importance.LOW, "Poll interval.", group="Polling")
)


class DbSource(_Base):
    """A connector with groups of its own and PASSWORD keys."""

    def config(self) -> ConfigDef:
        return DB_CONFIG_DEF


class RaisingValidateSource(_Base):
    def validate(self, connector_configs: Mapping[str, str]) -> dict[str, ConfigValue]:
        raise RuntimeError("validate exploded")


class CrossKeySource(_Base):
    """validate() adds an error of its own to a key it defines."""

    def config(self) -> ConfigDef:
        return ConfigDef().define("mode", Type.STRING, "a", Importance.LOW, "Mode.")

    def validate(self, connector_configs: Mapping[str, str]) -> dict[str, ConfigValue]:
        values = super().validate(connector_configs)
        if connector_configs.get("mode") == "b":
            values["mode"].errors.append("mode b needs a license")
        return values


class RaisingConfigSource(_Base):
    def config(self) -> NoReturn:
        raise RuntimeError("config exploded")


_RELEASE = threading.Event()


class HangingValidateSource(_Base):
    def validate(self, connector_configs: Mapping[str, str]) -> dict[str, ConfigValue]:
        _RELEASE.wait(30)
        return {}


class PlainSink(SinkConnector):
    def start(self, props: Mapping[str, str]) -> None: ...

    def task_class(self) -> type[SourceTask]:
        raise NotImplementedError

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return []

    def stop(self) -> None: ...


# --- fixtures ---------------------------------------------------------------------------

@pytest.fixture
def registry() -> PluginRegistry:
    registry = builtin_registry()
    for cls in (DbSource, RaisingValidateSource, CrossKeySource, RaisingConfigSource,
                HangingValidateSource):
        registry.register(cls, PluginType.SOURCE, f"test.{cls.__name__}")
    registry.register(PlainSink, PluginType.SINK, "test.PlainSink")
    return registry


def make_herder(registry: PluginRegistry, **worker_props: str) -> MinimalHerder:
    return MinimalHerder(WorkerConfig(worker_props), registry, MemoryConfigBackingStore(),
                         MemoryStatusBackingStore())


@pytest.fixture
def herder(registry: PluginRegistry) -> MinimalHerder:
    return make_herder(registry)


def by_name(infos: ConfigInfos) -> dict[str, ConfigInfo]:
    return {c.definition.name: c for c in infos.configs}


def errors_of(infos: ConfigInfos) -> dict[str, list[str]]:
    return {c.value.name: c.value.errors for c in infos.configs if c.value.errors}


def file_source(**extra: str) -> dict[str, str]:
    return {"name": "src", "connector.class": "FileStreamSource", "topic": "lines", **extra}


# --- validate_connector_config ------------------------------------------------------------

class TestConfigInfosShape:
    def test_valid_config(self, herder: MinimalHerder) -> None:
        infos = herder.validate_connector_config(file_source(file="/tmp/in.txt"))

        assert infos.name == FILE_SOURCE  # canonical name, although an alias was used
        assert infos.error_count == 0
        assert errors_of(infos) == {}

    def test_groups_in_order_with_common_first(self, herder: MinimalHerder) -> None:
        infos = herder.validate_connector_config(file_source())

        # A source connector's own groups (Kafka's SourceConnectorConfig) come last.
        assert infos.groups == ["Common", "Transforms", "Predicates", "Error Handling",
                                "Topic Creation", "Exactly Once Support", "offsets.topic"]

    def test_connector_groups_follow_the_framework_groups(self, herder: MinimalHerder
                                                          ) -> None:
        infos = herder.validate_connector_config({"name": "db", "connector.class":
                                                  "test.DbSource"})

        assert infos.groups == ["Common", "Transforms", "Predicates", "Error Handling",
                                "Topic Creation", "Exactly Once Support", "offsets.topic",
                                "Database", "Polling"]

    def test_every_config_has_definition_and_value(self, herder: MinimalHerder) -> None:
        infos = herder.validate_connector_config(file_source(file="/tmp/in.txt"))
        configs = by_name(infos)

        # Framework keys first (definition order), then the connector's own keys.
        names = [c.definition.name for c in infos.configs]
        assert names[:3] == ["name", "connector.class", "tasks.max"]
        assert {"topic", "file", "batch.size"} <= set(names)
        assert names.index("errors.log.enable") < names.index("topic")
        for config in infos.configs:
            assert config.definition.name == config.value.name

        tasks_max = configs["tasks.max"]
        assert (tasks_max.definition.type, tasks_max.definition.required,
                tasks_max.definition.default_value, tasks_max.definition.group,
                tasks_max.definition.importance) == ("INT", False, "1", "Common", "HIGH")
        assert tasks_max.value.value == "1"  # not in the config: the default, as a string

        topic = configs["topic"]
        assert topic.definition.required is True
        assert topic.definition.documentation == "The topic to publish data to"
        assert topic.value.value == "lines"
        assert topic.value.errors == []
        assert topic.value.recommended_values == []
        assert topic.value.visible is True

    def test_sink_topics_keys_described(self, herder: MinimalHerder) -> None:
        infos = herder.validate_connector_config({"name": "s", "connector.class": FILE_SINK,
                                                  "topics": "a,b"})

        assert infos.name == FILE_SINK
        assert infos.error_count == 0
        assert by_name(infos)["topics"].value.value == "a,b"
        assert by_name(infos)["topics"].definition.type == "LIST"


class TestValidationErrors:
    def test_missing_required_keys(self, herder: MinimalHerder) -> None:
        infos = herder.validate_connector_config({"connector.class": "FileStreamSource"})

        errors = errors_of(infos)
        assert set(errors) == {"name", "topic"}
        assert 'Missing required configuration "topic" which has no default value.' \
            in errors["topic"][0]
        assert infos.error_count == 2

    def test_error_count_counts_messages(self, herder: MinimalHerder) -> None:
        infos = herder.validate_connector_config(
            file_source(**{"tasks.max": "0", "batch.size": "x", "errors.tolerance": "most"}))

        assert infos.error_count == sum(len(v) for v in errors_of(infos).values()) == 3

    def test_bad_connector_key_value(self, herder: MinimalHerder) -> None:
        infos = herder.validate_connector_config(file_source(topic="a,b"))

        assert list(errors_of(infos)) == ["topic"]
        assert "single topic" in errors_of(infos)["topic"][0]

    def test_sink_topics_rule(self, herder: MinimalHerder) -> None:
        neither = herder.validate_connector_config({"name": "s",
                                                    "connector.class": "test.PlainSink"})
        both = herder.validate_connector_config({"name": "s", "connector.class": "PlainSink",
                                                 "topics": "a", "topics.regex": "a.*"})

        assert list(errors_of(neither)) == ["topics"]
        assert list(errors_of(both)) == ["topics"]

    def test_unknown_transform_and_missing_transform_keys(self, herder: MinimalHerder
                                                          ) -> None:
        infos = herder.validate_connector_config(file_source(**{
            "transforms": "route,bad",
            "transforms.route.type": "RegexRouter",
            "transforms.route.regex": "(.*)",
            "transforms.bad.type": "com.example.Missing"}))

        errors = errors_of(infos)
        assert set(errors) == {"transforms.route.replacement", "transforms.bad.type"}
        assert "com.example.Missing" in errors["transforms.bad.type"][0]
        assert by_name(infos)["transforms.route.regex"].value.value == "(.*)"

    def test_undefined_predicate_alias(self, herder: MinimalHerder) -> None:
        infos = herder.validate_connector_config(file_source(**{
            "transforms": "f", "transforms.f.type": "Filter",
            "transforms.f.predicate": "ghost"}))

        assert list(errors_of(infos)) == ["transforms.f.predicate"]

    def test_unknown_converter(self, herder: MinimalHerder) -> None:
        infos = herder.validate_connector_config(file_source(**{
            "key.converter": "org.apache.kafka.connect.storage.StringConverter",
            "value.converter": "com.example.NoConverter"}))

        errors = errors_of(infos)
        assert list(errors) == ["value.converter"]
        assert "com.example.NoConverter" in errors["value.converter"][0]

    def test_override_policy_none(self, registry: PluginRegistry) -> None:
        herder = make_herder(registry, **{"connector.client.config.override.policy": "None"})

        infos = herder.validate_connector_config(file_source(**{
            "producer.override.linger.ms": "10"}))

        errors = errors_of(infos)
        assert list(errors) == ["producer.override.linger.ms"]
        # A key with an error but no definition still gets a definition and a value.
        info = by_name(infos)["producer.override.linger.ms"]
        assert info.value.value == "10"

    def test_override_policy_all(self, herder: MinimalHerder) -> None:
        infos = herder.validate_connector_config(file_source(**{
            "producer.override.linger.ms": "10"}))

        assert infos.error_count == 0

    def test_connector_validate_adds_own_error(self, herder: MinimalHerder) -> None:
        infos = herder.validate_connector_config({"name": "x", "connector.class":
                                                  "test.CrossKeySource", "mode": "b"})

        assert errors_of(infos) == {"mode": ["mode b needs a license"]}
        assert infos.error_count == 1


class TestPasswords:
    def test_password_values_are_hidden(self, herder: MinimalHerder) -> None:
        infos = herder.validate_connector_config({
            "name": "db", "connector.class": "test.DbSource", "db.url": "jdbc:x",
            "db.password": SECRET, "db.api.key": SECRET})

        configs = by_name(infos)
        assert configs["db.password"].value.value == "[hidden]"
        assert configs["db.api.key"].value.value == "[hidden]"
        assert configs["db.password"].definition.type == "PASSWORD"
        assert SECRET not in repr(infos)

    def test_unset_password_is_null(self, herder: MinimalHerder) -> None:
        infos = herder.validate_connector_config({
            "name": "db", "connector.class": "test.DbSource", "db.url": "jdbc:x",
            "db.api.key": "k"})

        assert by_name(infos)["db.password"].value.value is None

    def test_rejected_password_is_hidden_too(self, herder: MinimalHerder) -> None:
        def reject(name: str, value: Any) -> None:
            raise ConfigException(name, value, "too weak")

        class WeakPasswordSource(_Base):
            def config(self) -> ConfigDef:
                return ConfigDef().define("login", Type.PASSWORD, None, Importance.HIGH,
                                          "Login.", validator=reject)

        herder.registry.register(WeakPasswordSource, PluginType.SOURCE, "test.Weak")

        infos = herder.validate_connector_config({"name": "w", "connector.class": "test.Weak",
                                                  "login": SECRET})

        login = by_name(infos)["login"]
        assert login.value.errors and "too weak" in login.value.errors[0]
        assert login.value.value == "[hidden]"
        assert SECRET not in repr(infos)

    def test_refused_client_override_secret_is_hidden(self, registry: PluginRegistry
                                                       ) -> None:
        herder = make_herder(registry, **{"connector.client.config.override.policy": "None"})

        infos = herder.validate_connector_config(file_source(**{
            "producer.override.ssl.key.password": SECRET,
            "consumer.override.sasl.jaas.config": SECRET + "-jaas"}))

        configs = by_name(infos)
        for key in ("producer.override.ssl.key.password",
                    "consumer.override.sasl.jaas.config"):
            assert configs[key].value.value == "[hidden]"
            assert configs[key].value.errors  # refused by the policy, key named
        assert SECRET not in repr(infos)

    def test_plugin_messages_quoting_secrets_are_scrubbed(
            self, herder: MinimalHerder) -> None:
        class QuotingSource(_Base):
            def config(self) -> ConfigDef:
                return ConfigDef().define("login", Type.PASSWORD, None, Importance.HIGH,
                                          "Login.")

            def validate(self, connector_configs: Mapping[str, str]
                         ) -> dict[str, ConfigValue]:
                values = self.config().validate(connector_configs)
                values["login"].errors.append(
                    f"login {connector_configs['login']} refused; converter user "
                    f"{connector_configs['value.converter.basic.auth.user.info']}")
                return values

        herder.registry.register(QuotingSource, PluginType.SOURCE, "test.Quoting")

        infos = herder.validate_connector_config({
            "name": "q", "connector.class": "test.Quoting", "login": SECRET,
            "value.converter.basic.auth.user.info": "user:" + SECRET + "-2"})

        assert by_name(infos)["login"].value.errors == [
            "login [hidden] refused; converter user [hidden]"]
        assert SECRET not in repr(infos)

    def test_validate_or_raise_message_hides_secrets(self, herder: MinimalHerder) -> None:
        def reject(name: str, value: Any) -> None:
            raise ConfigException(name, value, "too weak")

        class WeakSource(_Base):
            def config(self) -> ConfigDef:
                return ConfigDef().define("login", Type.PASSWORD, None, Importance.HIGH,
                                          "Login.", validator=reject)

        herder.registry.register(WeakSource, PluginType.SOURCE, "test.Weak2")

        with pytest.raises(ConfigValidationError) as info:
            herder.validate_or_raise({"name": "w", "connector.class": "test.Weak2",
                                      "login": SECRET})

        assert "Invalid value [hidden] for configuration login: too weak" in str(info.value)
        assert SECRET not in str(info.value)


class TestBadRequests:
    def test_no_connector_class(self, herder: MinimalHerder) -> None:
        with pytest.raises(BadRequestError, match="contains no connector type") as info:
            herder.validate_connector_config({"name": "x", "db.password": SECRET})

        assert SECRET not in str(info.value)  # keys only: values may be secrets
        assert "db.password" in str(info.value)

    def test_blank_connector_class(self, herder: MinimalHerder) -> None:
        with pytest.raises(BadRequestError, match="no connector type"):
            herder.validate_connector_config({"name": "x", "connector.class": ""})

    def test_unknown_connector_class(self, herder: MinimalHerder) -> None:
        with pytest.raises(BadRequestError) as info:
            herder.validate_connector_config({"name": "x",
                                              "connector.class": "com.example.Nope"})

        assert "com.example.Nope" in str(info.value)
        assert info.value.status_code == 400

    def test_plugin_that_is_not_a_connector(self, herder: MinimalHerder) -> None:
        with pytest.raises(BadRequestError):
            herder.validate_connector_config({"name": "x", "connector.class": "RegexRouter"})


class TestMisbehavingConnectors:
    def test_validate_raising_is_reported_not_raised(self, herder: MinimalHerder) -> None:
        infos = herder.validate_connector_config({"name": "x", "connector.class":
                                                  "test.RaisingValidateSource"})

        errors = errors_of(infos)
        assert errors == {"connector.class": ["validate exploded"]}
        assert infos.error_count == 1
        assert infos.name == "test.RaisingValidateSource"

    def test_config_raising_is_reported_not_raised(self, herder: MinimalHerder) -> None:
        infos = herder.validate_connector_config({"name": "x", "connector.class":
                                                  "test.RaisingConfigSource"})

        assert "config exploded" in errors_of(infos)["connector.class"][0]

    def test_hanging_validate_times_out(self, herder: MinimalHerder,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(abstract, "VALIDATION_TIMEOUT_S", 0.2)
        _RELEASE.clear()
        try:
            with pytest.raises(WorkerError, match="timed out") as info:
                herder.validate_connector_config({"name": "x", "connector.class":
                                                  "test.HangingValidateSource"})
            assert isinstance(info.value.__cause__, TimeoutError)
        finally:
            _RELEASE.set()  # let the abandoned validation thread finish


# --- validate_or_raise --------------------------------------------------------------------

class TestValidateOrRaise:
    def test_valid_config_passes(self, herder: MinimalHerder) -> None:
        herder.validate_or_raise(file_source())

    def test_message_format(self, herder: MinimalHerder) -> None:
        with pytest.raises(ConfigValidationError) as info:
            herder.validate_or_raise({"connector.class": "FileStreamSource",
                                      "tasks.max": "0"})

        message = str(info.value)
        lines = message.split("\n")
        assert lines[0] == ("Connector configuration is invalid and contains the following "
                            "3 error(s):")
        assert len(lines) == 5
        assert any('"name"' in line for line in lines[1:4])
        assert any("tasks.max" in line for line in lines[1:4])
        assert any('"topic"' in line for line in lines[1:4])
        assert lines[4] == ("You can also find the above list of errors at the endpoint "
                            "`/connector-plugins/{connectorType}/config/validate`")
        assert info.value.status_code == 400

    def test_errors_by_key(self, herder: MinimalHerder) -> None:
        with pytest.raises(ConfigValidationError) as info:
            herder.validate_or_raise(file_source(**{"batch.size": "-1"}))

        assert list(info.value.errors) == ["batch.size"]
        assert len(info.value.errors["batch.size"]) == 1
        assert "contains the following 1 error(s):" in str(info.value)

    def test_bad_request_passes_through(self, herder: MinimalHerder) -> None:
        with pytest.raises(BadRequestError) as info:
            herder.validate_or_raise({"name": "x"})
        assert not isinstance(info.value, ConfigValidationError)

    def test_secret_not_in_message(self, herder: MinimalHerder) -> None:
        with pytest.raises(ConfigValidationError) as info:
            herder.validate_or_raise({"name": "db", "connector.class": "test.DbSource",
                                      "db.password": SECRET})

        assert SECRET not in str(info.value)
        assert set(info.value.errors) == {"db.url", "db.api.key"}


# --- reads with memory stores -------------------------------------------------------------

@pytest.fixture
def stored(herder: MinimalHerder) -> Iterator[MinimalHerder]:
    herder.config_store.put_connector_config("src", file_source())
    herder.config_store.put_task_configs("src", [{"task": "0"}, {"task": "1"}])
    herder.config_store.put_connector_config("sink", {"name": "sink",
                                                      "connector.class": "FileStreamSink"})
    herder.config_store.put_connector_config("odd", {"name": "odd",
                                                     "connector.class": "com.example.Gone"})
    yield herder


class TestStatusReads:
    def test_unknown_connector(self, stored: MinimalHerder) -> None:
        with pytest.raises(NotFoundError, match="Connector nope not found"):
            stored.connector_status("nope")
        for read in (stored.connector_info, stored.connector_config, stored.task_configs):
            with pytest.raises(NotFoundError):
                read("nope")

    def test_connector_without_status(self, stored: MinimalHerder) -> None:
        with pytest.raises(NotFoundError, match="No status found for connector src"):
            stored.connector_status("src")

    def test_connector_status(self, stored: MinimalHerder) -> None:
        status = stored.status_store
        status.put_connector(ConnectorStatus("src", State.RUNNING, WORKER))
        status.put_task(TaskStatus(TaskId("src", 1), State.FAILED, WORKER, trace="boom"))
        status.put_task(TaskStatus(TaskId("src", 0), State.RUNNING, WORKER))

        info = stored.connector_status("src")

        assert info.name == "src"
        assert (info.connector.state, info.connector.worker_id) == ("RUNNING", WORKER)
        assert [(t.id, t.state, t.trace) for t in info.tasks] == [
            (0, "RUNNING", None), (1, "FAILED", "boom")]
        assert info.type is ConnectorType.SOURCE

    def test_connector_type_sink_and_unknown(self, stored: MinimalHerder) -> None:
        for name in ("sink", "odd"):
            stored.status_store.put_connector(ConnectorStatus(name, State.UNASSIGNED, WORKER))

        assert stored.connector_status("sink").type is ConnectorType.SINK
        assert stored.connector_status("odd").type is ConnectorType.UNKNOWN

    def test_task_status_of_unknown_connector(self, stored: MinimalHerder) -> None:
        with pytest.raises(NotFoundError, match="Connector nope not found"):
            stored.task_status(TaskId("nope", 0))

    def test_task_status_of_unknown_task(self, stored: MinimalHerder) -> None:
        stored.status_store.put_task(TaskStatus(TaskId("src", 0), State.RUNNING, WORKER))

        with pytest.raises(NotFoundError, match="No status found for task src-3"):
            stored.task_status(TaskId("src", 3))

    def test_task_status(self, stored: MinimalHerder) -> None:
        stored.status_store.put_task(TaskStatus(TaskId("src", 1), State.PAUSED, WORKER))

        state = stored.task_status(TaskId("src", 1))

        assert (state.id, state.state, state.worker_id, state.trace) == (1, "PAUSED", WORKER,
                                                                         None)

    def test_status_of_deleted_connector_is_not_found(self, stored: MinimalHerder) -> None:
        stored.status_store.put_connector(ConnectorStatus("src", State.RUNNING, WORKER))
        stored.status_store.put_task(TaskStatus(TaskId("src", 0), State.RUNNING, WORKER))
        stored.config_store.remove_connector_config("src")

        # A status left behind does not resurrect the connector.
        with pytest.raises(NotFoundError, match="Connector src not found"):
            stored.connector_status("src")
        with pytest.raises(NotFoundError, match="Connector src not found"):
            stored.task_status(TaskId("src", 0))

    def test_connector_info_and_task_configs(self, stored: MinimalHerder) -> None:
        info = stored.connector_info("src")

        assert info.tasks == [TaskId("src", 0), TaskId("src", 1)]
        assert info.type is ConnectorType.SOURCE
        assert info.config["topic"] == "lines"
        assert [t.config for t in stored.task_configs("src")] == [{"task": "0"},
                                                                   {"task": "1"}]
        assert stored.connectors() == ["odd", "sink", "src"]
