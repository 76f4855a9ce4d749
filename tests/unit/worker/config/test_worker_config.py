"""worker.config.worker_config: defaults, typed values, unused keys, StandaloneConfig.sql_url."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from worker.config.worker_config import StandaloneConfig, WorkerConfig
from worker.config.worker_keys import JSON_CONVERTER
from worker.errors import ConfigError

SECRET = "pa55-w0rd-xyzzy"
LOGGER = "worker.config.worker_config"


class TestDefaults:
    def test_defaults_of_an_empty_config(self) -> None:
        config = WorkerConfig({})

        assert config.get("bootstrap.servers") == ["localhost:9092"]
        assert config.bootstrap_servers == "localhost:9092"
        assert config.get("key.converter") == JSON_CONVERTER
        assert config.get("value.converter") == JSON_CONVERTER
        assert config.listeners == ["http://:8083"]
        assert config.get("offset.flush.interval.ms") == 60000
        assert config.get("offset.flush.timeout.ms") == 5000
        assert config.get("task.shutdown.graceful.timeout.ms") == 5000
        assert config.get("plugin.path") == []
        assert config.get("plugin.discovery") == "hybrid_warn"
        assert config.get("topic.tracking.enable") is True
        assert config.get("topic.tracking.allow.reset") is True
        assert config.get("connector.client.config.override.policy") == "All"
        assert config.get("rest.advertised.port") is None
        assert config.unused == []

    def test_unknown_key_is_not_readable_with_get(self) -> None:
        with pytest.raises(KeyError):
            WorkerConfig({}).get("storage.sql.url")  # a standalone-only key


class TestTypedValues:
    def test_values_are_parsed_to_their_types(self) -> None:
        config = WorkerConfig({
            "bootstrap.servers": "b1:9092, b2:9092",
            "listeners": "http://127.0.0.1:8083,https://:8443",
            "offset.flush.interval.ms": "1000",
            "topic.tracking.enable": "FALSE",
            "rest.advertised.port": "18083",
            "plugin.path": "/opt/a, /opt/b",
        })

        assert config.get("bootstrap.servers") == ["b1:9092", "b2:9092"]
        assert config.bootstrap_servers == "b1:9092,b2:9092"
        assert config.listeners == ["http://127.0.0.1:8083", "https://:8443"]
        assert config.get("offset.flush.interval.ms") == 1000
        assert config.get("topic.tracking.enable") is False
        assert config.get("rest.advertised.port") == 18083
        assert config.get("plugin.path") == ["/opt/a", "/opt/b"]

    def test_originals_keep_raw_strings(self) -> None:
        config = WorkerConfig({"offset.flush.interval.ms": "1000", "custom": 5})  # type: ignore[dict-item]

        assert config.originals == {"offset.flush.interval.ms": "1000", "custom": "5"}

    def test_listeners_returns_a_copy(self) -> None:
        config = WorkerConfig({})
        config.listeners.append("http://:1")
        assert config.listeners == ["http://:8083"]

    @pytest.mark.parametrize("mode", ["only_scan", "HYBRID_FAIL", "service_load"])
    def test_plugin_discovery_modes(self, mode: str) -> None:
        assert WorkerConfig({"plugin.discovery": mode}).get("plugin.discovery") == mode


class TestBadValues:
    @pytest.mark.parametrize(("key", "value"), [
        ("offset.flush.interval.ms", "soon"),
        ("offset.flush.interval.ms", "0"),
        ("offset.flush.timeout.ms", "-1"),
        ("task.shutdown.graceful.timeout.ms", "1.5"),
        ("rest.advertised.port", "http"),
        ("topic.tracking.enable", "yes"),
        ("plugin.discovery", "scan_everything"),
        ("connector.client.config.override.policy", "all"),  # case-sensitive, as in Kafka
        ("rest.metrics.enabled", "maybe"),
        ("metrics.num.samples", "0"),
        ("metrics.sample.window.ms", "0"),
    ])
    def test_bad_value_raises_config_error_naming_key(self, key: str, value: str) -> None:
        with pytest.raises(ConfigError) as info:
            WorkerConfig({key: value})

        assert info.value.key == key
        assert key in str(info.value)
        assert isinstance(info.value.__cause__, ValueError)

    def test_bad_value_message_has_the_reason(self) -> None:
        with pytest.raises(ConfigError, match="at least 1"):
            WorkerConfig({"offset.flush.interval.ms": "0"})

    @pytest.mark.parametrize("value", ["enabled", "ENABLED"])
    def test_exactly_once_source_support_enabled_is_refused(self, value: str) -> None:
        # Never a silent downgrade to at-least-once: the worker does not start.
        with pytest.raises(ConfigError, match="not supported by this worker") as info:
            WorkerConfig({"exactly.once.source.support": value})

        assert info.value.key == "exactly.once.source.support"

    @pytest.mark.parametrize("value", ["disabled", "preparing"])
    def test_exactly_once_source_support_off_values_are_accepted(self, value: str) -> None:
        assert WorkerConfig({"exactly.once.source.support": value}).get(
            "exactly.once.source.support") == value

    def test_exactly_once_source_support_unknown_value(self) -> None:
        with pytest.raises(ConfigError, match="String must be one of: disabled, preparing, "
                                              "enabled"):
            WorkerConfig({"exactly.once.source.support": "yes"})


class TestUnusedKeys:
    def test_unused_keys_are_logged_but_not_fatal(self, caplog: pytest.LogCaptureFixture
                                                  ) -> None:
        caplog.set_level(logging.INFO, logger=LOGGER)

        config = WorkerConfig({"rest.port": "8083", "my.db.password": SECRET,
                               "bootstrap.servers": "b:9092"})

        assert config.unused == ["my.db.password", "rest.port"]
        messages = [r.getMessage() for r in caplog.records if r.name == LOGGER]
        assert any("my.db.password" in m for m in messages)
        assert any("rest.port" in m for m in messages)
        assert config.originals["my.db.password"] == SECRET

    def test_values_are_never_logged(self, caplog: pytest.LogCaptureFixture) -> None:
        caplog.set_level(logging.DEBUG)

        jaas = ("org.apache.kafka.common.security.plain.PlainLoginModule required "
                f'username="connect" password="{SECRET}";')
        WorkerConfig({"sasl.jaas.config.typo": SECRET, "unused.secret": SECRET,
                      "consumer.sasl.jaas.config": jaas})

        assert caplog.records, "unused keys should have been logged"
        assert SECRET not in caplog.text
        for record in caplog.records:
            assert SECRET not in record.getMessage()
            assert all(SECRET not in str(arg) for arg in (record.args or ()))

    def test_a_client_key_that_cannot_be_honoured_fails_without_its_value(self) -> None:
        with pytest.raises(ConfigError) as info:
            WorkerConfig({"producer.sasl.jaas.config": f"NoSuchLoginModule required "
                                                       f'password="{SECRET}";'})
        assert info.value.key == "producer.sasl.jaas.config"
        assert "NoSuchLoginModule" in str(info.value) and SECRET not in str(info.value)

    def test_passthrough_prefixes_are_not_reported(self, caplog: pytest.LogCaptureFixture
                                                   ) -> None:
        caplog.set_level(logging.INFO, logger=LOGGER)
        keys = ["producer.acks", "consumer.session.timeout.ms", "admin.retries",
                "key.converter.schemas.enable", "value.converter.schemas.enable",
                "header.converter.x", "listeners.https.ssl.keystore.location",
                "admin.listeners.https.ssl.key.password",
                "ssl.truststore.location", "sasl.mechanism", "security.protocol",
                "metric.reporters.x"]

        config = WorkerConfig(dict.fromkeys(keys, "v"))

        assert config.unused == []
        assert not [r for r in caplog.records if r.name == LOGGER]


class TestRemovedRestKeys:
    """rest.host.name/rest.port: removed in Kafka 4.0 (KAFKA-12482); a WARNING with the
    listeners= line to use, and the worker still starts on listeners."""

    @staticmethod
    def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
        return [r.getMessage() for r in caplog.records
                if r.name == LOGGER and r.levelno == logging.WARNING]

    def test_both_keys_give_one_warning_with_the_listeners_line(
            self, caplog: pytest.LogCaptureFixture) -> None:
        caplog.set_level(logging.INFO, logger=LOGGER)

        config = WorkerConfig({"rest.host.name": "h", "rest.port": "8084"})

        assert self._warnings(caplog) == [
            "Worker config rest.host.name and rest.port are no longer supported (removed in "
            "Kafka Connect 4.0, KAFKA-12482) and are ignored: the REST API listens on the "
            "default listeners=http://:8083 (all interfaces); use "
            "listeners=http://h:8084 instead"]
        assert not [r for r in caplog.records if r.name == LOGGER and r.levelno < logging.WARNING]
        assert config.listeners == ["http://:8083"]
        assert config.unused == ["rest.host.name", "rest.port"]

    @pytest.mark.parametrize(("props", "line"), [
        ({"rest.port": "8084"}, "listeners=http://:8084"),
        ({"rest.host.name": "connect-1.example.com"},
         "listeners=http://connect-1.example.com:8083"),
        ({"rest.host.name": "::1", "rest.port": "9000"}, "listeners=http://[::1]:9000"),
    ])
    def test_the_line_is_what_kafka_3_built_from_them(
            self, caplog: pytest.LogCaptureFixture, props: dict[str, str], line: str) -> None:
        caplog.set_level(logging.WARNING, logger=LOGGER)

        WorkerConfig(props)

        [warning] = self._warnings(caplog)
        assert warning.endswith(f"use {line} instead")
        assert f"{' and '.join(props)} {'are' if len(props) > 1 else 'is'} no longer" in warning

    def test_a_placeholder_stays_as_written(self, caplog: pytest.LogCaptureFixture,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
        caplog.set_level(logging.WARNING, logger=LOGGER)
        monkeypatch.setenv("CP_TEST_REST_PORT", "48084")

        WorkerConfig({"config.providers": "env", "config.providers.env.class":
                      "org.apache.kafka.common.config.provider.EnvVarConfigProvider",
                      "rest.port": "${env:CP_TEST_REST_PORT}"})

        [warning] = self._warnings(caplog)
        assert warning.endswith("use listeners=http://:${env:CP_TEST_REST_PORT} instead")
        assert "48084" not in caplog.text

    def test_with_listeners_set_those_are_used(self, caplog: pytest.LogCaptureFixture
                                               ) -> None:
        caplog.set_level(logging.WARNING, logger=LOGGER)

        config = WorkerConfig({"rest.port": "8084", "listeners": "http://127.0.0.1:8085"})

        [warning] = self._warnings(caplog)
        assert warning.endswith("listeners is set and is used; remove rest.port "
                                "(= listeners=http://:8084)")
        assert config.listeners == ["http://127.0.0.1:8085"]

    def test_no_warning_without_them(self, caplog: pytest.LogCaptureFixture) -> None:
        caplog.set_level(logging.INFO, logger=LOGGER)

        WorkerConfig({"listeners": "http://127.0.0.1:8085", "rest.advertised.port": "8085"})

        assert not [r for r in caplog.records if r.name == LOGGER]


class TestConfigProviders:
    """config.providers: placeholders in worker properties resolved at start-up."""

    @pytest.fixture
    def secrets(self, tmp_path: Path) -> Path:
        file = tmp_path / "worker-secrets.properties"
        file.write_text(f"sasl.password={SECRET}\nflush.ms=1500\n", encoding="utf-8")
        return file

    def props(self, secrets: Path, **extra: str) -> dict[str, str]:
        return {
            "config.providers": "file,env",
            "config.providers.file.class":
                "org.apache.kafka.common.config.provider.FileConfigProvider",
            "config.providers.env.class": "EnvVarConfigProvider",
            "offset.flush.interval.ms": f"${{file:{secrets}:flush.ms}}",
            "producer.sasl.password": f"${{file:{secrets}:sasl.password}}",
            "client.id": "w-${env:CP_TEST_WORKER_SUFFIX}",
            **extra,
        }

    def test_raw_originals_and_typed_values(self, secrets: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("CP_TEST_WORKER_SUFFIX", "7")
        props = self.props(secrets)

        config = WorkerConfig(props)

        assert config.raw == props
        assert config.originals == {**props, "offset.flush.interval.ms": "1500",
                                    "producer.sasl.password": SECRET, "client.id": "w-7"}
        assert config.get("offset.flush.interval.ms") == 1500
        assert config.get("client.id") == "w-7"
        assert config.prefixed("producer.") == {"sasl.password": SECRET}
        assert config.unused == []

    def test_transformer_resolves_other_maps(self, secrets: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("CP_TEST_WORKER_SUFFIX", "7")
        config = WorkerConfig(self.props(secrets))

        assert config.transformer.transform(
            {"a": f"${{file:{secrets}:sasl.password}}", "b": "plain"}) == {"a": SECRET,
                                                                          "b": "plain"}

    def test_unresolvable_placeholder_fails_naming_key_and_placeholder(
            self, secrets: Path, caplog: pytest.LogCaptureFixture) -> None:
        caplog.set_level(logging.DEBUG)
        # CP_TEST_WORKER_SUFFIX is unset here.
        with pytest.raises(ConfigError) as info:
            WorkerConfig(self.props(secrets))

        assert info.value.key == "client.id"
        assert str(info.value) == (
            "Invalid value for configuration client.id: cannot resolve "
            "${env:CP_TEST_WORKER_SUFFIX}: config provider 'env' has no key "
            "'CP_TEST_WORKER_SUFFIX'")
        assert SECRET not in caplog.text

    def test_a_resolved_value_that_does_not_parse(self, secrets: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("CP_TEST_WORKER_SUFFIX", "7")
        placeholder = f"${{file:{secrets}:sasl.password}}"
        with pytest.raises(ConfigError) as info:
            WorkerConfig(self.props(secrets, **{"offset.flush.timeout.ms": placeholder}))

        assert str(info.value) == (
            "Invalid value for configuration offset.flush.timeout.ms: Not a number of type "
            f"LONG (the value of {placeholder})")
        # The parser's own exception quotes the value: it must not ride along as the cause.
        assert info.value.__cause__ is None and info.value.__suppress_context__

    def test_provider_keys_are_used_and_unlisted_ones_reported(
            self, secrets: Path, monkeypatch: pytest.MonkeyPatch,
            caplog: pytest.LogCaptureFixture) -> None:
        monkeypatch.setenv("CP_TEST_WORKER_SUFFIX", "7")
        caplog.set_level(logging.INFO, logger=LOGGER)
        props = self.props(secrets, **{
            "config.providers.file.param.allowed.paths": str(secrets.parent),
            "config.providers.vault.class": "com.example.VaultConfigProvider"})

        config = WorkerConfig(props)

        assert config.unused == ["config.providers.vault.class"]
        messages = [r.getMessage() for r in caplog.records if r.name == LOGGER]
        assert messages == ["The configuration 'config.providers.vault.class' was supplied "
                            "but isn't a known config."]

    def test_provider_parameters_are_used_as_written(self, secrets: Path) -> None:
        # A provider's own settings never go through providers.
        props = {"config.providers": "env", "config.providers.env.class": "EnvVar",
                 "config.providers.env.param.allowlist.pattern": "${env:X}"}
        config = WorkerConfig(props)
        assert config.originals == props

    def test_empty_provider_list(self) -> None:
        config = WorkerConfig({"config.providers": ""})
        assert config.unused == []
        assert config.transformer.providers == {}

    def test_no_providers_no_placeholders_resolved(self) -> None:
        with pytest.raises(ConfigError, match=r"no config provider named 'env' "
                                              r"\(config.providers of this worker: none\)"):
            WorkerConfig({"client.id": "${env:HOME}"})

    def test_a_bad_provider_fails_naming_its_key(self) -> None:
        with pytest.raises(ConfigError) as info:
            WorkerConfig({"config.providers": "file",
                          "config.providers.file.class": "com.example.Missing"})
        assert info.value.key == "config.providers.file.class"


class TestPrefixed:
    def test_strips_prefix_and_keeps_raw_values(self) -> None:
        config = WorkerConfig({"consumer.session.timeout.ms": "6000",
                               "consumer.auto.offset.reset": "earliest",
                               "producer.acks": "all", "consumerx.other": "no"})

        assert config.prefixed("consumer.") == {"session.timeout.ms": "6000",
                                                "auto.offset.reset": "earliest"}
        assert config.prefixed("producer.") == {"acks": "all"}
        assert config.prefixed("admin.") == {}

    def test_prefix_equal_to_a_whole_key_gives_empty_name(self) -> None:
        assert WorkerConfig({"x.": "1"}).prefixed("x.") == {"": "1"}


class TestStandaloneConfig:
    def test_standalone_defines_its_own_keys(self) -> None:
        config = StandaloneConfig({"offset.storage.file.filename": "/tmp/o"})

        assert config.get("offset.storage.file.filename") == "/tmp/o"
        assert config.get("storage.sql.url") is None
        assert "offset.storage.file.filename" not in config.unused

    def test_common_keys_still_apply(self) -> None:
        with pytest.raises(ConfigError) as info:
            StandaloneConfig({"offset.flush.interval.ms": "never"})
        assert info.value.key == "offset.flush.interval.ms"

    def test_explicit_sql_url_wins(self, tmp_path: Path) -> None:
        url = "postgresql+psycopg://connect@db:5432/connect"
        config = StandaloneConfig({"storage.sql.url": url,
                                   "offset.storage.file.filename": str(tmp_path / "o")})

        assert config.sql_url == url

    def test_sqlite_next_to_offsets_file(self, tmp_path: Path) -> None:
        offsets = tmp_path / "data" / "connect.offsets"
        config = StandaloneConfig({"offset.storage.file.filename": str(offsets)})

        assert config.sql_url == f"sqlite:///{tmp_path.resolve() / 'data' / 'connect.offsets.db'}"

    def test_relative_offsets_file_resolves_against_cwd(
            self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.chdir(tmp_path)
        config = StandaloneConfig({"offset.storage.file.filename": "state/connect.offsets"})

        assert config.sql_url == \
            f"sqlite:///{tmp_path.resolve() / 'state' / 'connect.offsets.db'}"

    def test_default_database_in_cwd(self, tmp_path: Path,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.chdir(tmp_path)

        assert StandaloneConfig({}).sql_url == \
            f"sqlite:///{tmp_path.resolve() / 'connect-standalone.db'}"

    def test_empty_sql_url_falls_back(self, tmp_path: Path) -> None:
        offsets = tmp_path / "o.offsets"
        config = StandaloneConfig({"storage.sql.url": "  ",
                                   "offset.storage.file.filename": str(offsets)})

        assert config.sql_url == f"sqlite:///{tmp_path.resolve() / 'o.offsets.db'}"
