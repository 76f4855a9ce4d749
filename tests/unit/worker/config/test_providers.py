"""worker.config.providers: the placeholder syntax, the transformer, building providers;
what one map may cost (linear scanning, bounded reads and resolved size: issue #41).

Providers here are the real built-ins over real files and environments, plus two small
providers written for the test (one counting its calls, one failing with a secret in its
message)."""

from __future__ import annotations

import itertools
import os
import re
import sys
import textwrap
import time
from pathlib import Path

import pytest

from worker.api import ConfigData, ConfigProvider
from worker.builtin.config_providers import (
    DirectoryConfigProvider,
    EnvVarConfigProvider,
    FileConfigProvider,
)
from worker.config.providers import (
    KAFKA_PATTERN,
    MAX_LOOKUPS,
    PLACEHOLDER,
    ConfigTransformer,
    Placeholder,
    build_providers,
    has_placeholders,
    placeholders,
    restore_placeholders,
)
from worker.errors import ConfigError
from worker.plugins.registry import builtin_registry

SECRET = "s3cr3t-Pa55w0rd"


class CountingProvider(ConfigProvider):
    """Serves fixed values and records each get(path, keys)."""

    def __init__(self, values: dict[str, dict[str, str]]) -> None:
        self.values = values
        self.calls: list[tuple[str, set[str] | None]] = []
        self.closed = False

    def get(self, path: str, keys: set[str] | None = None) -> ConfigData:
        self.calls.append((path, keys))
        found = self.values.get(path, {})
        return ConfigData({k: v for k, v in found.items() if keys is None or k in keys})

    def close(self) -> None:
        self.closed = True


class LeakyProvider(ConfigProvider):
    def get(self, path: str, keys: set[str] | None = None) -> ConfigData:
        raise RuntimeError(f"backend said: the password is {SECRET}")


@pytest.fixture
def secrets_file(tmp_path: Path) -> Path:
    file = tmp_path / "secrets.properties"
    file.write_text(f"db.password={SECRET}\ndb.user=admin\nport=5432\n", encoding="utf-8")
    return file


@pytest.fixture
def transformer(secrets_file: Path, tmp_path: Path) -> ConfigTransformer:
    file, directory, env = FileConfigProvider(), DirectoryConfigProvider(), \
        EnvVarConfigProvider({"DB_HOST": "db.example", "TOKEN": "tok-1"})
    for provider in (file, directory, env):
        provider.configure({})
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "api-key").write_text("key-9\n", encoding="utf-8")
    return ConfigTransformer({"file": file, "dir": directory, "env": env})


class TestSyntax:
    """Kafka's ConfigTransformer.DEFAULT_PATTERN: ${provider:[path:]key}."""

    @pytest.mark.parametrize("text, expected", [
        ("${file:/etc/x.properties:password}",
         [Placeholder("file", "/etc/x.properties", "password",
                      "${file:/etc/x.properties:password}")]),
        ("${env:DB_PASSWORD}", [Placeholder("env", "", "DB_PASSWORD", "${env:DB_PASSWORD}")]),
        # The path ends at the first ':' after the provider; the key takes the rest.
        ("${vault:secret/db:user:name}",
         [Placeholder("vault", "secret/db", "user:name", "${vault:secret/db:user:name}")]),
        ("jdbc://${env:HOST}:${file:/p:port}/db",
         [Placeholder("env", "", "HOST", "${env:HOST}"),
          Placeholder("file", "/p", "port", "${file:/p:port}")]),
        ("${novar}", []), ("$env:X", []), ("{env:X}", []), ("plain", []),
    ])
    def test_placeholders(self, text: str, expected: list[Placeholder]) -> None:
        assert placeholders(text) == expected
        assert has_placeholders(text) is bool(expected)

    def test_has_placeholders_of_none(self) -> None:
        assert has_placeholders(None) is False

    def test_same_matches_as_kafkas_pattern(self) -> None:
        # Every string of up to 7 characters over the pattern's own alphabet: the linear
        # scanner finds what re finds with Kafka's pattern, and substitutes the same.
        kafka = re.compile(KAFKA_PATTERN)
        checked = 0
        for length in range(8):
            for chars in itertools.product("${}:a", repeat=length):
                text = "".join(chars)
                expected = [Placeholder(m.group(1), m.group(3) or "", m.group(4), m.group(0))
                            for m in kafka.finditer(text)]
                assert placeholders(text) == expected, text
                assert PLACEHOLDER.sub("<>", text) == kafka.sub("<>", text), text
                checked += 1
        assert checked == sum(5 ** n for n in range(8))

    @pytest.mark.timeout(30)
    @pytest.mark.parametrize("unit", ["${", "${a:", "${a:b:", "${:", "$", "${a:}", ":}"])
    def test_scanning_takes_linear_time(self, unit: str) -> None:
        # Python's re took 100 s on 2,000 characters of "${a:" with Kafka's pattern.
        text = unit * (1024 * 1024 // len(unit)) + "}"
        started = time.monotonic()
        found = placeholders(text)
        substituted = PLACEHOLDER.sub("", text)
        assert time.monotonic() - started < 10
        assert has_placeholders(text) is bool(found)
        assert len(substituted) <= len(text)


class TestTransform:
    def test_resolves_file_dir_and_env(self, transformer: ConfigTransformer,
                                       secrets_file: Path, tmp_path: Path) -> None:
        configs = {"password": f"${{file:{secrets_file}:db.password}}",
                   "key": f"${{dir:{tmp_path / 'dir'}:api-key}}",
                   "host": "${env:DB_HOST}", "plain": "as-is"}

        assert transformer.transform(configs) == {
            "password": SECRET, "key": "key-9\n", "host": "db.example", "plain": "as-is"}

    def test_several_placeholders_in_one_value(self, transformer: ConfigTransformer,
                                               secrets_file: Path) -> None:
        value = (f"postgres://${{file:{secrets_file}:db.user}}:"
                 f"${{file:{secrets_file}:db.password}}@${{env:DB_HOST}}:"
                 f"${{file:{secrets_file}:port}}/orders")

        assert transformer.transform({"url": value}) == {
            "url": f"postgres://admin:{SECRET}@db.example:5432/orders"}

    def test_one_lookup_per_provider_and_path(self) -> None:
        provider = CountingProvider({"/a": {"x": "1", "y": "2"}, "/b": {"x": "3"}})
        transformer = ConfigTransformer({"p": provider})

        result = transformer.transform({"k1": "${p:/a:x}-${p:/a:y}", "k2": "${p:/a:x}",
                                        "k3": "${p:/b:x}"})

        assert result == {"k1": "1-2", "k2": "1", "k3": "3"}
        assert sorted(provider.calls, key=lambda c: c[0]) == [("/a", {"x", "y"}),
                                                              ("/b", {"x"})]

    def test_single_pass(self) -> None:
        # A resolved value that looks like a placeholder stays as it is (as in Kafka).
        provider = CountingProvider({"": {"a": "${p:b}", "b": "never"}})
        assert ConfigTransformer({"p": provider}).transform({"k": "${p:a}"}) == {
            "k": "${p:b}"}

    def test_a_map_without_placeholders_needs_no_provider(self) -> None:
        assert ConfigTransformer().transform({"a": "1", "b": "${x}"}) == {"a": "1", "b": "${x}"}

    def test_unknown_provider(self, transformer: ConfigTransformer) -> None:
        with pytest.raises(ConfigError) as info:
            transformer.transform({"token": "${vault:secret/db:token}"})
        assert info.value.key == "token"
        assert str(info.value) == (
            "Invalid value for configuration token: cannot resolve ${vault:secret/db:token}: "
            "no config provider named 'vault' (config.providers of this worker: dir, env, "
            "file)")

    def test_unknown_provider_without_any_configured(self) -> None:
        with pytest.raises(ConfigError, match=r"config.providers of this worker: none"):
            ConfigTransformer().transform({"k": "${env:X}"})

    def test_missing_key_names_the_placeholder_not_the_secret(
            self, transformer: ConfigTransformer, secrets_file: Path) -> None:
        placeholder = f"${{file:{secrets_file}:db.pasword}}"  # a typo
        with pytest.raises(ConfigError) as info:
            transformer.transform({"password": placeholder,
                                   "user": f"${{file:{secrets_file}:db.password}}"})
        assert info.value.key == "password"
        assert str(info.value) == (
            f"Invalid value for configuration password: cannot resolve {placeholder}: "
            f"config provider 'file' has no key 'db.pasword' at path {secrets_file}")
        assert SECRET not in str(info.value)

    def test_missing_env_variable(self, transformer: ConfigTransformer) -> None:
        with pytest.raises(ConfigError, match=r"cannot resolve \$\{env:NOPE\}: config "
                                              r"provider 'env' has no key 'NOPE'$"):
            transformer.transform({"k": "${env:NOPE}"})

    def test_missing_file(self, transformer: ConfigTransformer, tmp_path: Path) -> None:
        missing = tmp_path / "gone.properties"
        with pytest.raises(ConfigError) as info:
            transformer.transform({"k": f"${{file:{missing}:x}}"})
        assert str(info.value).endswith(
            f"cannot resolve ${{file:{missing}:x}}: cannot read file {missing}: "
            "No such file or directory")

    def test_path_not_allowed(self, secrets_file: Path, tmp_path: Path) -> None:
        allowed = tmp_path / "allowed"
        allowed.mkdir()
        provider = FileConfigProvider()
        provider.configure({"allowed.paths": str(allowed)})
        placeholder = f"${{file:{secrets_file}:db.password}}"
        with pytest.raises(ConfigError) as info:
            ConfigTransformer({"file": provider}).transform({"password": placeholder})
        assert str(info.value) == (
            f"Invalid value for configuration password: cannot resolve {placeholder}: "
            f"path {secrets_file} is outside allowed.paths of this provider")

    def test_first_failing_key_in_key_order(self, transformer: ConfigTransformer) -> None:
        with pytest.raises(ConfigError) as info:
            transformer.transform({"z": "${env:NOPE}", "a": "${env:ALSO_NOPE}"})
        assert info.value.key == "a"

    def test_provider_errors_do_not_show_their_message(self) -> None:
        with pytest.raises(ConfigError) as info:
            ConfigTransformer({"leaky": LeakyProvider()}).transform({"k": "${leaky:x}"})
        assert str(info.value) == ("Invalid value for configuration k: cannot resolve "
                                   "${leaky:x}: config provider 'leaky' failed with "
                                   "RuntimeError")
        assert info.value.__cause__ is None and info.value.__context__ is None

    def test_close_closes_every_provider(self) -> None:
        providers = {"a": CountingProvider({}), "b": CountingProvider({})}
        ConfigTransformer(providers).close()
        assert all(p.closed for p in providers.values())


class TestResolve:
    def test_reports_each_failing_key_and_keeps_it_as_written(
            self, transformer: ConfigTransformer, secrets_file: Path) -> None:
        configs = {"ok": f"${{file:{secrets_file}:db.password}}", "bad1": "${env:NOPE}",
                   "bad2": "x-${vault:y}", "plain": "p"}

        resolution = transformer.resolve(configs)

        assert resolution.data == {"ok": SECRET, "bad1": "${env:NOPE}",
                                   "bad2": "x-${vault:y}", "plain": "p"}
        assert set(resolution.errors) == {"bad1", "bad2"}
        assert "${vault:y}" in resolution.errors["bad2"]
        assert SECRET not in repr(resolution)

    def test_redact_writes_resolved_values_back_as_placeholders(
            self, transformer: ConfigTransformer, secrets_file: Path) -> None:
        placeholder = f"${{file:{secrets_file}:db.password}}"
        resolution = transformer.resolve({"password": placeholder, "user": "${env:TOKEN}"})

        message = f"Invalid value {SECRET} for configuration password: bad; token tok-1."

        assert resolution.redact(message) == (
            f"Invalid value {placeholder} for configuration password: bad; token "
            "${env:TOKEN}.")

    def test_redact_replaces_each_value_once_however_it_was_reached(self) -> None:
        provider = CountingProvider({"/a": {"k": SECRET}, "/a/": {"k": SECRET}})
        resolution = ConfigTransformer({"p": provider}).resolve(
            {"x": "${p:/a:k}", "y": "${p:/a/:k}"})
        assert resolution.redact(f"bad {SECRET}") in ("bad ${p:/a:k}", "bad ${p:/a/:k}")

    def test_redact_leaves_words_that_merely_contain_a_short_value(self) -> None:
        provider = CountingProvider({"": {"n": "1", "a": "a"}})
        resolution = ConfigTransformer({"p": provider}).resolve({"x": "${p:n}", "y": "${p:a}"})
        assert resolution.redact("Value a1 must be at least 1, a") == \
            "Value a1 must be at least ${p:n}, ${p:a}"


class TestBounds:
    """What one map may cost: MAX_LOOKUPS reads and max_resolved_chars characters."""

    def test_a_repeated_placeholder_cannot_multiply_a_value(self) -> None:
        provider = CountingProvider({"": {"big": "v" * 1000}})
        transformer = ConfigTransformer({"p": provider}, max_resolved_chars=5000)

        resolution = transformer.resolve({"a": "${p:big}" * 3, "b": "${p:big}" * 3})

        # 1,000 looked up, then three expansions fit; the fourth does not.
        assert resolution.data["a"] == "v" * 3000
        assert resolution.data["b"] == "${p:big}" * 3
        assert resolution.errors == {"b": "cannot resolve ${p:big}: the values resolved for "
                                          "this config would take more than 5000 characters"}

    def test_what_a_provider_returns_counts(self) -> None:
        provider = CountingProvider({"/1": {"k": "x" * 600}, "/2": {"k": "y" * 600}})
        transformer = ConfigTransformer({"p": provider}, max_resolved_chars=1000)
        resolution = transformer.resolve({"a": "${p:/1:k}", "b": "${p:/2:k}"})
        # The second lookup does not fit; nor, after both lookups, does expanding the first.
        reason = "the values resolved for this config would take more than 1000 characters"
        assert resolution.errors == {"a": f"cannot resolve ${{p:/1:k}}: {reason}",
                                     "b": f"cannot resolve ${{p:/2:k}}: {reason}"}
        assert "x" * 600 not in str(resolution.errors) and "y" * 600 not in repr(resolution)

    def test_keys_not_asked_for_are_dropped(self) -> None:
        class Everything(ConfigProvider):
            def get(self, path: str, keys: set[str] | None = None) -> ConfigData:
                return ConfigData({"wanted": "w", "other": "o" * 10_000})

        transformer = ConfigTransformer({"p": Everything()}, max_resolved_chars=100)
        assert transformer.transform({"k": "${p:wanted}"}) == {"k": "w"}

    def test_at_most_max_lookups_paths_are_read(self) -> None:
        provider = CountingProvider({f"/{n}": {"k": str(n)} for n in range(MAX_LOOKUPS + 5)})
        configs = {f"c{n:04}": f"${{p:/{n}:k}}" for n in range(MAX_LOOKUPS + 5)}

        resolution = ConfigTransformer({"p": provider}).resolve(configs)

        assert len(provider.calls) == MAX_LOOKUPS
        assert sorted(resolution.errors) == [f"c{n:04}" for n in range(MAX_LOOKUPS,
                                                                       MAX_LOOKUPS + 5)]
        assert resolution.errors[f"c{MAX_LOOKUPS:04}"] == (
            f"cannot resolve ${{p:/{MAX_LOOKUPS}:k}}: this config names more than "
            f"{MAX_LOOKUPS} provider paths")

    @pytest.mark.timeout(30)
    def test_a_fifo_placeholder_fails_the_key_at_once(self, tmp_path: Path) -> None:
        fifo = tmp_path / "fifo"
        os.mkfifo(fifo)
        provider = FileConfigProvider()
        provider.configure({"allowed.paths": str(tmp_path)})
        placeholder = f"${{file:{fifo}:k}}"
        with pytest.raises(ConfigError) as info:
            ConfigTransformer({"file": provider}).transform({"topic": placeholder})
        assert str(info.value) == (f"Invalid value for configuration topic: cannot resolve "
                                   f"{placeholder}: {fifo} is not a regular file")


class TestRestorePlaceholders:
    def test_keys_written_with_placeholders_get_them_back(self) -> None:
        written = {"file": "${file:/s.properties:path}", "topics": "t", "batch": "${env:B}"}
        generated = [{"file": "/out/secret-path", "topics": "t", "task.class": "x.Task"},
                     {"file": "/out/secret-path", "extra": "derived"}]

        assert restore_placeholders(generated, written) == [
            {"file": "${file:/s.properties:path}", "topics": "t", "task.class": "x.Task"},
            {"file": "${file:/s.properties:path}", "extra": "derived"}]


class TestBuildProviders:
    def test_builds_by_java_name_alias_and_python_path(self, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
        module = tmp_path / "my_providers.py"
        module.write_text(textwrap.dedent("""
            from worker.api import ConfigData, ConfigProvider

            class StaticProvider(ConfigProvider):
                def configure(self, params):
                    self.params = dict(params)

                def get(self, path, keys=None):
                    return ConfigData({k: f"{self.params['prefix']}{path}/{k}"
                                       for k in keys or ()})
        """), encoding="utf-8")
        monkeypatch.syspath_prepend(str(tmp_path))
        monkeypatch.delitem(sys.modules, "my_providers", raising=False)
        props = {
            "config.providers": "file, env,custom",
            "config.providers.file.class":
                "org.apache.kafka.common.config.provider.FileConfigProvider",
            "config.providers.env.class": "EnvVar",
            "config.providers.env.param.allowlist.pattern": "CP_.*",
            "config.providers.custom.class": "my_providers.StaticProvider",
            "config.providers.custom.param.prefix": "static:",
            "config.providers.unlisted.class": "File",
        }

        settings = build_providers(props, builtin_registry())

        assert list(settings.providers) == ["file", "env", "custom"]
        assert isinstance(settings.providers["file"], FileConfigProvider)
        assert isinstance(settings.providers["env"], EnvVarConfigProvider)
        assert settings.used_keys == set(props) - {"config.providers.unlisted.class"}
        transformer = ConfigTransformer(settings.providers)
        assert transformer.transform({"k": "${custom:vault/db:user}"}) == {
            "k": "static:vault/db/user"}
        with pytest.raises(ConfigError, match="do not match allowlist.pattern"):
            transformer.transform({"k": "${env:HOME}"})

    @pytest.mark.parametrize("props, key, message", [
        ({"config.providers": "file"}, "config.providers.file.class",
         "config provider 'file' is listed in config.providers but has no class"),
        ({"config.providers": "file", "config.providers.file.class": "NoSuchProvider"},
         "config.providers.file.class",
         "Class NoSuchProvider could not be found. Failed to find any class that implements "
         "ConfigProvider and which name matches NoSuchProvider"),
        # A plugin of another type is no provider.
        ({"config.providers": "file", "config.providers.file.class": "JsonConverter"},
         "config.providers.file.class", "Class JsonConverter could not be found."),
        ({"config.providers": "file", "config.providers.file.class": "File",
          "config.providers.file.param.allowed.paths": "not/absolute"},
         "config.providers.file.param.allowed.paths", "Path not/absolute is not absolute"),
        ({"config.providers": "file", "config.providers.file.class": "File",
          "config.providers.file.param.max.file.bytes": "0"},
         "config.providers.file.param.max.file.bytes",
         "max.file.bytes must be a positive integer"),
        ({"config.providers": "dir", "config.providers.dir.class": "Directory",
          "config.providers.dir.param.read.timeout.ms": "soon"},
         "config.providers.dir.param.read.timeout.ms",
         "read.timeout.ms must be a positive integer"),
        ({"config.providers": "env", "config.providers.env.class": "EnvVarConfigProvider",
          "config.providers.env.param.allowlist.pattern": "("},
         "config.providers.env.param.allowlist.pattern", "Invalid regex"),
    ])
    def test_bad_settings_name_the_key(self, props: dict[str, str], key: str,
                                       message: str) -> None:
        with pytest.raises(ConfigError) as info:
            build_providers(props, builtin_registry())
        assert info.value.key == key
        assert message in str(info.value)

    def test_no_providers(self) -> None:
        assert build_providers({}, builtin_registry()).providers == {}
        settings = build_providers({"config.providers": " "}, builtin_registry())
        assert settings.providers == {} and settings.used_keys == {"config.providers"}
