"""The built-in config providers: File, Directory and EnvVar, with allowed.paths (KIP-993)
and allowlist.pattern, on real files and directories."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from worker.api import ConfigData, ConfigException
from worker.connectors.config_providers import (
    DirectoryConfigProvider,
    EnvVarConfigProvider,
    FileConfigProvider,
)

SECRET = "s3cr3t-Pa55w0rd"


def configured(provider_cls: type[FileConfigProvider] | type[DirectoryConfigProvider],
               **params: str) -> FileConfigProvider | DirectoryConfigProvider:
    provider = provider_cls()
    provider.configure({k.replace("_", "."): v for k, v in params.items()})
    return provider


@pytest.fixture
def props_file(tmp_path: Path) -> Path:
    file = tmp_path / "secrets" / "db.properties"
    file.parent.mkdir()
    # java.util.Properties syntax: ':' separator, escapes, continuation lines, comments.
    file.write_text("# credentials\n"
                    f"db.password={SECRET}\n"
                    "db.user: admin\n"
                    "db.url=jdbc:postgresql://h\\:5432/\\\n"
                    "    orders\n"
                    "greeting=caf\\u00e9\n", encoding="utf-8")
    return file


class TestFileConfigProvider:
    def test_reads_requested_keys(self, props_file: Path) -> None:
        provider = configured(FileConfigProvider)

        data = provider.get(str(props_file), {"db.password", "db.user", "absent"})

        assert data.data == {"db.password": SECRET, "db.user": "admin"}
        assert data.ttl_ms is None

    def test_reads_every_key_without_keys(self, props_file: Path) -> None:
        data = configured(FileConfigProvider).get(str(props_file))

        assert data.data == {"db.password": SECRET, "db.user": "admin",
                             "db.url": "jdbc:postgresql://h:5432/orders",
                             "greeting": "café"}

    def test_rereads_the_file_on_each_get(self, props_file: Path) -> None:
        provider = configured(FileConfigProvider)
        assert provider.get(str(props_file), {"db.user"}).data == {"db.user": "admin"}

        props_file.write_text("db.user=root\n", encoding="utf-8")

        assert provider.get(str(props_file), {"db.user"}).data == {"db.user": "root"}

    def test_missing_file_names_the_path(self, tmp_path: Path) -> None:
        missing = tmp_path / "nope.properties"
        with pytest.raises(ConfigException) as info:
            configured(FileConfigProvider).get(str(missing), {"k"})
        assert info.value.reason == f"cannot read file {missing}: No such file or directory"

    def test_no_path_is_an_error(self) -> None:
        with pytest.raises(ConfigException, match="names no file"):
            configured(FileConfigProvider).get("", {"k"})

    def test_invalid_escape_does_not_quote_the_value(self, tmp_path: Path) -> None:
        file = tmp_path / "bad.properties"
        file.write_text("key=ab\\uZZ12cd\n", encoding="utf-8")
        with pytest.raises(ConfigException) as info:
            configured(FileConfigProvider).get(str(file), {"key"})
        assert info.value.reason == f"file {file} is not a valid properties file"
        assert "ZZ12" not in str(info.value)

    def test_not_utf8(self, tmp_path: Path) -> None:
        file = tmp_path / "latin1.properties"
        file.write_bytes(b"key=caf\xe9\n")
        with pytest.raises(ConfigException, match="is not valid UTF-8"):
            configured(FileConfigProvider).get(str(file), {"key"})

    def test_get_before_configure_fails(self, props_file: Path) -> None:
        with pytest.raises(RuntimeError, match="not been configured"):
            FileConfigProvider().get(str(props_file), {"db.user"})

    def test_repr_of_data_hides_values(self, props_file: Path) -> None:
        data = configured(FileConfigProvider).get(str(props_file), {"db.password"})
        assert SECRET not in repr(data)
        assert "db.password" in repr(data)


class TestAllowedPaths:
    def test_path_inside_an_allowed_root_is_read(self, props_file: Path) -> None:
        provider = configured(FileConfigProvider, allowed_paths=str(props_file.parent))
        assert provider.get(str(props_file), {"db.user"}).data == {"db.user": "admin"}

    def test_path_outside_is_refused(self, props_file: Path, tmp_path: Path) -> None:
        other = tmp_path / "other"
        other.mkdir()
        provider = configured(FileConfigProvider, allowed_paths=str(other))
        with pytest.raises(ConfigException) as info:
            provider.get(str(props_file), {"db.user"})
        assert info.value.reason == (f"path {props_file} is outside allowed.paths of this "
                                     "provider")

    def test_dot_dot_cannot_escape_the_root(self, props_file: Path, tmp_path: Path) -> None:
        allowed = tmp_path / "allowed"
        allowed.mkdir()
        provider = configured(FileConfigProvider, allowed_paths=str(allowed))
        sneaky = f"{allowed}/../secrets/db.properties"
        with pytest.raises(ConfigException, match="outside allowed.paths"):
            provider.get(sneaky, {"db.user"})

    def test_a_sibling_with_a_common_prefix_is_not_inside(self, tmp_path: Path) -> None:
        (tmp_path / "data").mkdir()
        (tmp_path / "data2").mkdir()
        file = tmp_path / "data2" / "x.properties"
        file.write_text("k=v\n", encoding="utf-8")
        provider = configured(FileConfigProvider, allowed_paths=str(tmp_path / "data"))
        with pytest.raises(ConfigException, match="outside allowed.paths"):
            provider.get(str(file), {"k"})

    def test_several_roots(self, props_file: Path, tmp_path: Path) -> None:
        other = tmp_path / "other"
        other.mkdir()
        provider = configured(FileConfigProvider,
                              allowed_paths=f"{other} , {props_file.parent}")
        assert provider.get(str(props_file), {"db.user"}).data == {"db.user": "admin"}

    @pytest.mark.parametrize("setting, reason", [
        ("relative/dir", "Path relative/dir is not absolute"),
        ("/nonexistent-root-xyz", "Path /nonexistent-root-xyz does not exist"),
    ])
    def test_bad_roots_are_rejected_at_configure(self, setting: str, reason: str) -> None:
        for provider_cls in (FileConfigProvider, DirectoryConfigProvider):
            with pytest.raises(ConfigException) as info:
                provider_cls().configure({"allowed.paths": setting})
            assert info.value.name == "allowed.paths"
            assert info.value.reason == reason

    def test_empty_setting_allows_everything(self, props_file: Path) -> None:
        provider = configured(FileConfigProvider, allowed_paths="")
        assert provider.get(str(props_file), {"db.user"}).data == {"db.user": "admin"}


class TestDirectoryConfigProvider:
    @pytest.fixture
    def secrets_dir(self, tmp_path: Path) -> Path:
        directory = tmp_path / "run-secrets"
        directory.mkdir()
        (directory / "db-password").write_text(SECRET + "\n", encoding="utf-8")
        (directory / "api-key").write_text("k-123", encoding="utf-8")
        (directory / "subdir").mkdir()
        # Kubernetes mounts secrets as symlinks into a hidden data directory.
        (directory / "..data").mkdir()
        (directory / "..data" / "token").write_text("tok", encoding="utf-8")
        os.symlink(directory / "..data" / "token", directory / "token")
        return directory

    def test_value_is_the_whole_file_with_its_trailing_newline(self, secrets_dir: Path
                                                                ) -> None:
        data = configured(DirectoryConfigProvider).get(str(secrets_dir),
                                                       {"db-password", "api-key"})
        # Kafka reads the bytes as they are: the newline stays.
        assert data.data == {"db-password": SECRET + "\n", "api-key": "k-123"}

    def test_without_keys_every_regular_file(self, secrets_dir: Path) -> None:
        data = configured(DirectoryConfigProvider).get(str(secrets_dir))
        assert data.data == {"db-password": SECRET + "\n", "api-key": "k-123",
                             "token": "tok"}

    def test_directories_and_escaping_keys_are_not_keys(self, secrets_dir: Path) -> None:
        data = configured(DirectoryConfigProvider).get(
            str(secrets_dir), {"subdir", "../run-secrets/api-key", "..", "missing"})
        assert data.data == {}

    def test_not_a_directory(self, secrets_dir: Path) -> None:
        file = secrets_dir / "api-key"
        with pytest.raises(ConfigException) as info:
            configured(DirectoryConfigProvider).get(str(file), {"x"})
        assert info.value.reason == f"{file} is not a directory"

    def test_allowed_paths(self, secrets_dir: Path, tmp_path: Path) -> None:
        inside = configured(DirectoryConfigProvider, allowed_paths=str(secrets_dir))
        assert inside.get(str(secrets_dir), {"api-key"}).data == {"api-key": "k-123"}
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        outside = configured(DirectoryConfigProvider, allowed_paths=str(elsewhere))
        with pytest.raises(ConfigException, match="outside allowed.paths"):
            outside.get(str(secrets_dir), {"api-key"})


class TestEnvVarConfigProvider:
    ENV = {"DB_PASSWORD": SECRET, "DB_USER": "admin", "HOME": "/home/x"}

    def test_reads_variables_without_a_path(self) -> None:
        provider = EnvVarConfigProvider(self.ENV)
        provider.configure({})
        assert provider.get("", {"DB_PASSWORD", "UNSET"}) == ConfigData(
            {"DB_PASSWORD": SECRET})

    def test_everything_without_keys(self) -> None:
        provider = EnvVarConfigProvider(self.ENV)
        provider.configure({})
        assert provider.get("").data == self.ENV

    def test_reads_the_process_environment_by_default(self, monkeypatch: pytest.MonkeyPatch
                                                      ) -> None:
        monkeypatch.setenv("CP_TEST_VARIABLE", "from-env")
        provider = EnvVarConfigProvider()
        provider.configure({})
        assert provider.get("", {"CP_TEST_VARIABLE"}).data == {"CP_TEST_VARIABLE": "from-env"}

    def test_allowlist_must_match_the_whole_name(self) -> None:
        provider = EnvVarConfigProvider(self.ENV)
        provider.configure({"allowlist.pattern": "DB_.*"})
        assert provider.get("").data == {"DB_PASSWORD": SECRET, "DB_USER": "admin"}
        assert provider.get("", {"DB_USER"}).data == {"DB_USER": "admin"}
        with pytest.raises(ConfigException) as info:
            provider.get("", {"HOME", "DB_USER"})
        assert info.value.reason == ("environment variable(s) HOME do not match "
                                     "allowlist.pattern of this provider")
        partial = EnvVarConfigProvider(self.ENV)
        partial.configure({"allowlist.pattern": "DB"})  # matches() in Java: whole name
        assert partial.get("").data == {}

    def test_java_named_groups_in_the_pattern(self) -> None:
        provider = EnvVarConfigProvider(self.ENV)
        provider.configure({"allowlist.pattern": "(?<prefix>DB)_USER"})
        assert provider.get("", {"DB_USER"}).data == {"DB_USER": "admin"}

    def test_invalid_pattern(self) -> None:
        with pytest.raises(ConfigException) as info:
            EnvVarConfigProvider(self.ENV).configure({"allowlist.pattern": "DB_("})
        assert info.value.name == "allowlist.pattern"

    def test_a_path_is_refused(self) -> None:
        provider = EnvVarConfigProvider(self.ENV)
        provider.configure({})
        with pytest.raises(ConfigException, match="takes no path"):
            provider.get("/etc", {"DB_USER"})
