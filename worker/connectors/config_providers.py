"""The built-in config providers, as Apache Kafka ships them (KIP-297, KIP-887, KIP-993).

- :class:`FileConfigProvider` (``org.apache.kafka.common.config.provider.FileConfigProvider``):
  ``${file:/etc/kafka/secrets.properties:db.password}`` — a key of a ``.properties`` file,
  read with ``java.util.Properties``' rules;
- :class:`DirectoryConfigProvider` (``...DirectoryConfigProvider``):
  ``${dir:/run/secrets:db-password}`` — the whole content of a file in a directory (one file
  per key, as Kubernetes and Docker mount secrets), byte for byte: a trailing newline is
  kept, as Kafka keeps it;
- :class:`EnvVarConfigProvider` (``...EnvVarConfigProvider``): ``${env:DB_PASSWORD}`` — an
  environment variable of the worker process; ``allowlist.pattern`` (a Java regex that must
  match the whole name, default ``.*``) limits which ones.

The file and directory providers take Kafka's ``allowed.paths`` (KIP-993): a comma-separated
list of absolute, existing paths; when set, only paths inside them (after ``..`` is
collapsed) may be read. Each ``get`` reads the file system again, so a rotated secret is
picked up the next time a value is resolved.

Where Kafka quietly returns no data (a path outside ``allowed.paths``, a path that is not a
directory, a variable outside the allowlist) these raise ``ConfigException`` naming the path
or variable, so the worker's error says why the placeholder did not resolve. Messages and
reprs name paths and keys only, never a value.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import PurePath

from worker.api import ConfigData, ConfigException, ConfigProvider
from worker.config.properties import parse_properties
from worker.connectors.regex import java_regex
from worker.errors import ConfigError

ALLOWED_PATHS_CONFIG = "allowed.paths"
ALLOWLIST_PATTERN_CONFIG = "allowlist.pattern"


def _error(path: str, reason: str) -> ConfigException:
    # ConfigException(name, value, reason): the path is the "value" a provider was given;
    # callers show ``reason``.
    return ConfigException("path", path, reason)


class AllowedPaths:
    """Kafka's ``allowed.paths``: None (everything allowed) or absolute, existing roots."""

    def __init__(self, setting: str | None) -> None:
        self.roots: list[PurePath] | None = None
        if not setting or not setting.strip():
            return
        roots = []
        for entry in setting.split(","):
            root = PurePath(os.path.normpath(entry.strip()))
            if not root.is_absolute():
                raise ConfigException(ALLOWED_PATHS_CONFIG, setting,
                                      f"Path {root} is not absolute")
            if not os.path.exists(root):
                raise ConfigException(ALLOWED_PATHS_CONFIG, setting,
                                      f"Path {root} does not exist")
            roots.append(root)
        self.roots = roots

    def check(self, path: str) -> str:
        """``path`` normalised when allowed.paths is set (as Kafka does); else unchanged."""
        if self.roots is None:
            return path
        normalised = PurePath(os.path.normpath(path))
        # Component-wise containment, as Java's Path.startsWith: /data2 is not in /data.
        if not any(normalised.is_relative_to(root) for root in self.roots):
            raise _error(path, f"path {path} is outside {ALLOWED_PATHS_CONFIG} of this "
                               "provider")
        return str(normalised)


class _PathProvider(ConfigProvider):
    """Shared by the file and directory providers: ``allowed.paths`` and path checks."""

    def __init__(self) -> None:
        self._allowed: AllowedPaths | None = None

    def configure(self, params: dict[str, str]) -> None:
        self._allowed = AllowedPaths(params.get(ALLOWED_PATHS_CONFIG))

    def _checked(self, path: str, what: str) -> str:
        if self._allowed is None:
            raise RuntimeError(f"{type(self).__name__} has not been configured yet")
        if not path:
            raise _error(path, f"the placeholder names no {what} "
                               f"(write ${{provider:/path/to/{what}:key}})")
        return self._allowed.check(path)


class FileConfigProvider(_PathProvider):
    """Keys of a ``.properties`` file; the path is the file."""

    def get(self, path: str, keys: set[str] | None = None) -> ConfigData:
        file = self._checked(path, "file")
        try:
            with open(file, encoding="utf-8") as handle:
                text = handle.read()
        except OSError as exc:
            raise _error(path, f"cannot read file {path}: {exc.strerror}") from None
        except UnicodeDecodeError:
            raise _error(path, f"file {path} is not valid UTF-8") from None
        try:
            data = parse_properties(text, path)
        except ConfigError:
            # Its message may quote a few characters of a value: say only where it failed.
            raise _error(path, f"file {path} is not a valid properties file") from None
        if keys is not None:
            data = {k: v for k, v in data.items() if k in keys}
        return ConfigData(data)


class DirectoryConfigProvider(_PathProvider):
    """One key per regular file of a directory; the path is the directory, the value the
    file's whole content (UTF-8, trailing newline kept)."""

    def get(self, path: str, keys: set[str] | None = None) -> ConfigData:
        directory = self._checked(path, "directory")
        if not os.path.isdir(directory):
            raise _error(path, f"{path} is not a directory")
        try:
            names = os.listdir(directory) if keys is None else [
                k for k in keys if k and os.sep not in k and k not in (".", "..")]
        except OSError as exc:
            raise _error(path, f"cannot list directory {path}: {exc.strerror}") from None
        data: dict[str, str] = {}
        for name in names:
            file = os.path.join(directory, name)
            if not os.path.isfile(file):  # follows symlinks, as Files.isRegularFile does
                continue
            try:
                with open(file, encoding="utf-8", newline="") as handle:
                    data[name] = handle.read()
            except OSError as exc:
                raise _error(path, f"cannot read file {name} in {path}: "
                                   f"{exc.strerror}") from None
            except UnicodeDecodeError:
                raise _error(path, f"file {name} in {path} is not valid UTF-8") from None
        return ConfigData(data)


class EnvVarConfigProvider(ConfigProvider):
    """Environment variables of the worker process, as they were when it was built.

    ``environ`` replaces ``os.environ`` (for tests and embedding).
    """

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        self._environ = dict(os.environ if environ is None else environ)
        self._pattern = java_regex(".*", ALLOWLIST_PATTERN_CONFIG)

    def configure(self, params: dict[str, str]) -> None:
        if ALLOWLIST_PATTERN_CONFIG in params:
            self._pattern = java_regex(params[ALLOWLIST_PATTERN_CONFIG],
                                       ALLOWLIST_PATTERN_CONFIG)

    def get(self, path: str, keys: set[str] | None = None) -> ConfigData:
        if path:
            raise _error(path, "EnvVarConfigProvider takes no path (write ${env:VARIABLE})")
        if keys is None:
            return ConfigData({k: v for k, v in self._environ.items()
                               if self._pattern.fullmatch(k)})
        refused = sorted(k for k in keys if not self._pattern.fullmatch(k))
        if refused:
            raise _error(path, f"environment variable(s) {', '.join(refused)} do not match "
                               f"{ALLOWLIST_PATTERN_CONFIG} of this provider")
        return ConfigData({k: self._environ[k] for k in keys if k in self._environ})
