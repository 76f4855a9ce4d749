"""The built-in config providers: File, Directory and EnvVar, with allowed.paths (KIP-993)
and allowlist.pattern, on real files and directories; and what keeps the file and directory
providers from hanging or exhausting the worker (issue #41): regular files only, a size cap,
real paths for allowed.paths, a timeout on reads with a bounded number of threads."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from tests.support import wait_until
from worker.api import ConfigData, ConfigException
from worker.builtin import config_providers
from worker.builtin.config_providers import (
    AllowedPaths,
    BoundedReads,
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


# --- issue #41: providers that cannot hang, exhaust memory or follow links out ----------

BIG = "BIGCONTENT"
needs_proc = pytest.mark.skipif(not os.path.isdir("/proc/self/fd"),
                                reason="needs Linux's /proc")


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "allowed" / "fifo"
    path.parent.mkdir(exist_ok=True)
    os.mkfifo(path)
    return path


class TestRegularFilesOnly:
    """A FIFO or device is never waited on (a FIFO without a writer blocked a REST thread
    for ever; /dev/zero was read until MemoryError)."""

    @pytest.mark.timeout(10)
    def test_a_fifo_is_refused_at_once(self, fifo: Path) -> None:
        for provider in (configured(FileConfigProvider),
                         configured(FileConfigProvider, allowed_paths=str(fifo.parent))):
            with pytest.raises(ConfigException) as info:
                provider.get(str(fifo), {"k"})
            assert info.value.reason == f"{fifo} is not a regular file"

    @pytest.mark.timeout(10)
    @pytest.mark.parametrize("device", ["/dev/zero", "/dev/null", "/dev/tty"])
    def test_devices_are_refused(self, device: str) -> None:
        if not os.path.exists(device):
            pytest.skip(f"no {device} here")
        with pytest.raises(ConfigException) as info:
            configured(FileConfigProvider).get(device, {"k"})
        assert info.value.reason in (f"{device} is not a regular file",
                                     # /dev/tty without a controlling terminal
                                     f"cannot read file {device}: No such device or address")

    def test_a_directory_is_not_a_file(self, tmp_path: Path) -> None:
        with pytest.raises(ConfigException) as info:
            configured(FileConfigProvider).get(str(tmp_path), {"k"})
        assert info.value.reason == f"{tmp_path} is not a regular file"

    @pytest.mark.timeout(10)
    def test_directory_provider_skips_what_is_not_a_regular_file(self, fifo: Path,
                                                                 tmp_path: Path) -> None:
        directory = fifo.parent
        (directory / "zero").symlink_to("/dev/zero")
        (directory / "key").write_text("v", encoding="utf-8")
        for provider in (configured(DirectoryConfigProvider),
                         configured(DirectoryConfigProvider, allowed_paths="/dev," + str(
                             directory))):
            # As Kafka's, which lists regular files only.
            assert provider.get(str(directory), {"fifo", "zero", "key"}).data == {"key": "v"}
            assert provider.get(str(directory)).data == {"key": "v"}


class TestSizeCap:
    @pytest.fixture
    def big_file(self, tmp_path: Path) -> Path:
        file = tmp_path / "big.properties"
        file.write_text("k=" + BIG * 110_000 + "\n", encoding="utf-8")  # over 1 MiB
        return file

    def test_default_cap_is_one_mib(self, big_file: Path) -> None:
        with pytest.raises(ConfigException) as info:
            configured(FileConfigProvider).get(str(big_file), {"k"})
        assert info.value.reason == (f"file {big_file} is larger than 1048576 bytes "
                                     "(max.file.bytes of this provider)")
        assert BIG not in str(info.value)

    def test_a_file_of_exactly_the_cap_is_read(self, tmp_path: Path) -> None:
        file = tmp_path / "exact.properties"
        file.write_bytes(b"k=" + b"v" * 98)
        provider = configured(FileConfigProvider, max_file_bytes="100")
        assert provider.get(str(file), {"k"}).data == {"k": "v" * 98}
        file.write_bytes(b"k=" + b"v" * 99)
        with pytest.raises(ConfigException, match="larger than 100 bytes"):
            provider.get(str(file), {"k"})

    @needs_proc
    def test_a_file_longer_than_its_stat_says_is_cut_at_the_cap(self) -> None:
        # /proc files say they are empty; what is read is counted, not what stat says.
        provider = configured(FileConfigProvider, max_file_bytes="16")
        with pytest.raises(ConfigException) as info:
            provider.get("/proc/self/status", {"Name"})
        assert info.value.reason == ("file /proc/self/status is larger than 16 bytes "
                                     "(max.file.bytes of this provider)")

    def test_directory_provider_caps_each_file(self, tmp_path: Path) -> None:
        directory = tmp_path / "d"
        directory.mkdir()
        (directory / "small").write_text("12345", encoding="utf-8")
        (directory / "big").write_text("123456", encoding="utf-8")
        provider = configured(DirectoryConfigProvider, max_file_bytes="5")
        assert provider.get(str(directory), {"small"}).data == {"small": "12345"}
        with pytest.raises(ConfigException) as info:
            provider.get(str(directory), {"small", "big"})
        assert info.value.reason == (f"file big in {directory} is larger than 5 bytes "
                                     "(max.file.bytes of this provider)")

    @pytest.mark.parametrize("name", ["max.file.bytes", "read.timeout.ms"])
    @pytest.mark.parametrize("value", ["0", "-5", "ten", ""])
    def test_bad_settings_are_refused_at_configure(self, name: str, value: str) -> None:
        for provider_cls in (FileConfigProvider, DirectoryConfigProvider):
            with pytest.raises(ConfigException) as info:
                provider_cls().configure({name: value})
            assert info.value.name == name
            assert info.value.reason == f"{name} must be a positive integer"


class TestSymbolicLinks:
    """allowed.paths is checked on the real path (symbolic links followed)."""

    @pytest.fixture
    def dirs(self, tmp_path: Path) -> tuple[Path, Path]:
        allowed, outside = tmp_path / "allowed", tmp_path / "outside"
        allowed.mkdir()
        outside.mkdir()
        (outside / "secret.properties").write_text(f"k={SECRET}\n", encoding="utf-8")
        (allowed / "ok.properties").write_text("k=fine\n", encoding="utf-8")
        return allowed, outside

    def test_a_link_out_of_an_allowed_directory_is_refused(self, dirs: tuple[Path, Path]
                                                           ) -> None:
        allowed, outside = dirs
        link = allowed / "escape.properties"
        link.symlink_to(outside / "secret.properties")
        provider = configured(FileConfigProvider, allowed_paths=str(allowed))
        with pytest.raises(ConfigException) as info:
            provider.get(str(link), {"k"})
        assert info.value.reason == (f"path {link} is outside allowed.paths of this provider "
                                     "once its symbolic links are followed")
        assert SECRET not in str(info.value)
        # A linked directory on the way is followed too.
        (allowed / "sub").symlink_to(outside)
        with pytest.raises(ConfigException, match="once its symbolic links are followed"):
            provider.get(str(allowed / "sub" / "secret.properties"), {"k"})

    def test_a_link_to_a_device_is_outside(self, dirs: tuple[Path, Path]) -> None:
        allowed, _ = dirs
        (allowed / "zero").symlink_to("/dev/zero")
        provider = configured(FileConfigProvider, allowed_paths=str(allowed))
        with pytest.raises(ConfigException, match="is outside allowed.paths"):
            provider.get(str(allowed / "zero"), {"k"})

    def test_links_that_stay_inside_are_followed(self, dirs: tuple[Path, Path]) -> None:
        allowed, _ = dirs
        (allowed / "link.properties").symlink_to(allowed / "ok.properties")
        provider = configured(FileConfigProvider, allowed_paths=str(allowed))
        assert provider.get(str(allowed / "link.properties"), {"k"}).data == {"k": "fine"}

    def test_an_allowed_root_that_is_a_link(self, dirs: tuple[Path, Path],
                                            tmp_path: Path) -> None:
        allowed, _ = dirs
        alias = tmp_path / "alias"
        alias.symlink_to(allowed)
        provider = configured(FileConfigProvider, allowed_paths=str(alias))
        # Named through the link or by its real path: the same file, inside.
        assert provider.get(str(alias / "ok.properties"), {"k"}).data == {"k": "fine"}
        assert provider.get(str(allowed / "ok.properties"), {"k"}).data == {"k": "fine"}

    def test_a_relative_path_is_never_inside(self, dirs: tuple[Path, Path],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
        allowed, _ = dirs
        monkeypatch.chdir(allowed)
        provider = configured(FileConfigProvider, allowed_paths=str(allowed))
        with pytest.raises(ConfigException) as info:
            provider.get("ok.properties", {"k"})
        assert info.value.reason == ("path ok.properties is outside allowed.paths of this "
                                     "provider")

    def test_directory_provider_refuses_a_key_linked_out(self, dirs: tuple[Path, Path]
                                                        ) -> None:
        allowed, outside = dirs
        directory = allowed / "d"
        directory.mkdir()
        (directory / "escape").symlink_to(outside / "secret.properties")
        provider = configured(DirectoryConfigProvider, allowed_paths=str(allowed))
        with pytest.raises(ConfigException) as info:
            provider.get(str(directory), {"escape"})
        assert info.value.reason == (f"file escape in {directory} is outside allowed.paths "
                                     "of this provider once its symbolic links are followed")
        assert SECRET not in str(info.value)
        (allowed / "d-link").symlink_to(outside)
        with pytest.raises(ConfigException, match="once its symbolic links are followed"):
            provider.get(str(allowed / "d-link"), {"secret.properties"})

    @needs_proc
    def test_what_was_opened_is_checked_again(self, dirs: tuple[Path, Path]) -> None:
        # A directory on the way swapped for a link between the check and the open: the
        # descriptor's own path says where it really is.
        allowed, outside = dirs
        paths = AllowedPaths(str(allowed))
        fd = os.open(outside / "secret.properties", os.O_RDONLY)
        try:
            with pytest.raises(ConfigException, match="once its symbolic links"):
                paths.check_opened(fd, str(allowed / "secret.properties"),
                                   f"path {allowed / 'secret.properties'}")
        finally:
            os.close(fd)
        inside = os.open(allowed / "ok.properties", os.O_RDONLY)
        try:
            paths.check_opened(inside, str(allowed / "ok.properties"), "path")
        finally:
            os.close(inside)


def read_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.endswith("-read") and t.is_alive()]


class TestReadTimeout:
    """A read that hangs (a hung network file system) is given up after read.timeout.ms,
    on a bounded number of threads."""

    @pytest.mark.timeout(20)
    def test_reads_past_their_time_fail_and_hold_at_most_the_pool(self) -> None:
        release = threading.Event()
        reads = BoundedReads("test-hang", threads=2, timeout_ms=100)
        try:
            for _ in range(2):
                started = time.monotonic()
                with pytest.raises(ConfigException) as info:
                    reads.run("/nfs/x", lambda: release.wait(30))
                assert info.value.reason == ("reading /nfs/x did not finish within 100 ms "
                                             "(read.timeout.ms of this provider)")
                assert time.monotonic() - started < 5
            assert len([t for t in read_threads() if t.name == "test-hang-read"]) == 2
            # Every thread is held by a read past its time: the next fails at once.
            started = time.monotonic()
            with pytest.raises(ConfigException) as info:
                reads.run("/nfs/y", lambda: "never run")
            assert time.monotonic() - started < 0.1
            assert info.value.reason == (
                "cannot read /nfs/y: 2 earlier reads of this provider are still running "
                "past read.timeout.ms (100 ms); is its file system hung?")
        finally:
            release.set()
        # Once they come back, reads work again.
        wait_until(lambda: not [t for t in read_threads() if t.name == "test-hang-read"],
                   timeout=10, interval=0.01, message="the released reads' threads to end")
        assert reads.run("/nfs/z", lambda: "read") == "read"

    def test_errors_of_the_read_reach_the_caller(self) -> None:
        def fail() -> str:
            raise ConfigException("path", "/p", "boom")

        with pytest.raises(ConfigException, match="boom"):
            BoundedReads("test-error").run("/p", fail)

    @pytest.mark.timeout(20)
    def test_a_provider_gives_up_on_a_hung_read(self, props_file: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
        release = threading.Event()

        def hung(fd: int, limit: int) -> bytes:
            release.wait(30)
            return b""

        monkeypatch.setattr(config_providers, "read_at_most", hung)
        provider = configured(FileConfigProvider, read_timeout_ms="200")
        try:
            with pytest.raises(ConfigException) as info:
                provider.get(str(props_file), {"db.user"})
            assert info.value.reason == (f"reading {props_file} did not finish within "
                                         "200 ms (read.timeout.ms of this provider)")
        finally:
            release.set()
