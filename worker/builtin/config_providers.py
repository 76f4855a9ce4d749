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
list of absolute, existing paths; when set, only paths inside them may be read. Unlike
Kafka, which compares paths lexically (after ``..`` is collapsed), the check is made on the
*real* path, symbolic links followed, so a link inside an allowed directory cannot point
out of it; the real path is what is then opened. Each ``get`` reads the file system again,
so a rotated secret is picked up the next time a value is resolved.

A ``get`` must not hang or exhaust the worker whatever path a placeholder names (any REST
user may have one resolved by validating a config), so unlike Kafka's, these providers
(connect-plane settings, ``config.providers.<name>.param.*``):

- open without blocking (a FIFO, a device, a terminal) and read regular files only: the
  file provider refuses anything else with an error, the directory provider skips it as
  Kafka does (it lists regular files only);
- read at most ``max.file.bytes`` (default 1 MiB, Kubernetes' limit for a Secret) of a
  file; a bigger one is refused, naming the path and the cap;
- give up on a read after ``read.timeout.ms`` (default 10 s): a regular file on a hung
  network file system still blocks. Reads run on at most :data:`READ_THREADS` threads per
  provider; a read that never returns keeps its thread, and once every thread is held so,
  further reads fail at once until one comes back.

Where Kafka quietly returns no data (a path outside ``allowed.paths``, a path that is not a
directory, a variable outside the allowlist) these raise ``ConfigException`` naming the path
or variable, so the worker's error says why the placeholder did not resolve. Messages and
reprs name paths and keys only, never a value.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import PurePath
from typing import Generic, TypeVar, cast

from worker.api import ConfigData, ConfigException, ConfigProvider
from worker.builtin._regex import java_regex
from worker.config.properties import parse_properties
from worker.errors import ConfigError
from worker.util.files import open_regular, read_at_most

T = TypeVar("T")

ALLOWED_PATHS_CONFIG = "allowed.paths"
ALLOWLIST_PATTERN_CONFIG = "allowlist.pattern"
MAX_FILE_BYTES_CONFIG = "max.file.bytes"
READ_TIMEOUT_MS_CONFIG = "read.timeout.ms"
DEFAULT_MAX_FILE_BYTES = 1024 * 1024
DEFAULT_READ_TIMEOUT_MS = 10_000
#: Threads a file or directory provider reads on; as many reads can hang at once.
READ_THREADS = 4

# Where Linux shows what a descriptor was opened on (absent elsewhere: not checked there).
_FD_LINKS = "/proc/self/fd"


def _error(path: str, reason: str) -> ConfigException:
    # ConfigException(name, value, reason): the path is the "value" a provider was given;
    # callers show ``reason``.
    return ConfigException("path", path, reason)


def _positive_int(params: Mapping[str, str], name: str, default: int) -> int:
    raw = params.get(name)
    if raw is None:
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        raise ConfigException(name, raw, f"{name} must be a positive integer") from None
    if value <= 0:
        raise ConfigException(name, raw, f"{name} must be a positive integer")
    return value


class AllowedPaths:
    """Kafka's ``allowed.paths``: None (everything allowed) or absolute, existing roots,
    compared with real paths (symbolic links followed)."""

    def __init__(self, setting: str | None) -> None:
        self.roots: list[PurePath] | None = None
        self._real_roots: list[PurePath] = []
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
        self._real_roots = [PurePath(os.path.realpath(root)) for root in roots]

    def _inside(self, path: PurePath, roots: list[PurePath]) -> bool:
        # Component-wise containment, as Java's Path.startsWith: /data2 is not in /data.
        return any(path.is_relative_to(root) for root in roots)

    def _refuse(self, path: str, shown: str) -> ConfigException:
        lexical = PurePath(os.path.normpath(path))
        roots = [*(self.roots or ()), *self._real_roots]
        how = (" once its symbolic links are followed"
               if lexical.is_absolute() and self._inside(lexical, roots) else "")
        return _error(path, f"{shown} is outside {ALLOWED_PATHS_CONFIG} of this "
                            f"provider{how}")

    def check(self, path: str, shown: str | None = None) -> str:
        """What to open for ``path``: its real path when allowed.paths is set (raises
        ConfigException, naming ``shown`` or else the path, when that is outside them);
        ``path`` unchanged when it is not set. May block on a hung file system."""
        if self.roots is None:
            return path
        shown = shown or f"path {path}"
        # A relative path is never inside (Java: a relative Path never startsWith an
        # absolute one), whatever the worker's working directory.
        real = PurePath(os.path.realpath(path)) if os.path.isabs(path) else None
        if real is None or not self._inside(real, self._real_roots):
            raise self._refuse(path, shown)
        return str(real)

    def check_opened(self, fd: int, path: str, shown: str) -> None:
        """Whether what ``fd`` was opened on is still inside (a directory on the way may
        have been swapped for a link after :meth:`check`); checked where the system says
        (Linux), else trusted."""
        if self.roots is None:
            return
        try:
            opened = os.readlink(f"{_FD_LINKS}/{fd}")
        except OSError:
            return
        if not self._inside(PurePath(opened), self._real_roots):
            raise self._refuse(path, shown)


class _Call(Generic[T]):
    """One read handed to a thread of :class:`BoundedReads`, and its outcome."""

    def __init__(self, fn: Callable[[], T]) -> None:
        self.fn = fn
        self.done = threading.Event()
        self.abandoned = False
        self.value: T | None = None
        self.error: BaseException | None = None


class BoundedReads:
    """Runs file system reads on at most ``threads`` daemon threads, waiting ``timeout_ms``
    for each (its slot included): a read stuck in the kernel (a hung NFS mount) cannot be
    interrupted, so its thread is left to it, but no more than ``threads`` are ever held,
    and once all are held by reads past their time, further reads fail at once."""

    def __init__(self, name: str, threads: int = READ_THREADS,
                 timeout_ms: int = DEFAULT_READ_TIMEOUT_MS) -> None:
        self.name = name
        self.threads = threads
        self.timeout_ms = timeout_ms
        self._cond = threading.Condition()
        self._running = 0
        self._abandoned = 0

    def run(self, path: str, fn: Callable[[], T]) -> T:
        deadline = time.monotonic() + self.timeout_ms / 1000
        with self._cond:
            while self._running >= self.threads:
                if self._abandoned >= self.threads:
                    raise _error(path, f"cannot read {path}: {self._abandoned} earlier reads "
                                       "of this provider are still running past "
                                       f"{READ_TIMEOUT_MS_CONFIG} ({self.timeout_ms} ms); is "
                                       "its file system hung?")
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise self._timed_out(path)
                self._cond.wait(remaining)
            self._running += 1
        call = _Call(fn)
        try:
            threading.Thread(target=self._body, args=(call,), daemon=True,
                             name=f"{self.name}-read").start()
        except RuntimeError:  # no thread to be had
            with self._cond:
                self._running -= 1
                self._cond.notify()
            raise _error(path, f"cannot read {path}: no thread to read it on") from None
        if not call.done.wait(max(0.0, deadline - time.monotonic())):
            with self._cond:
                if not call.done.is_set():
                    call.abandoned = True
                    self._abandoned += 1
                    raise self._timed_out(path)
        if call.error is not None:
            raise call.error
        return cast(T, call.value)

    def _timed_out(self, path: str) -> ConfigException:
        return _error(path, f"reading {path} did not finish within {self.timeout_ms} ms "
                            f"({READ_TIMEOUT_MS_CONFIG} of this provider)")

    def _body(self, call: _Call[T]) -> None:
        try:
            call.value = call.fn()
        except BaseException as exc:  # handed to the waiting caller
            call.error = exc
        finally:
            with self._cond:
                call.done.set()
                self._running -= 1
                if call.abandoned:
                    self._abandoned -= 1
                self._cond.notify()


class _PathProvider(ConfigProvider):
    """Shared by the file and directory providers: ``allowed.paths``, the size cap and
    the bounded, timed reads."""

    def __init__(self) -> None:
        self._allowed: AllowedPaths | None = None
        self._max_bytes = DEFAULT_MAX_FILE_BYTES
        self._reads = BoundedReads(type(self).__name__)

    def configure(self, params: dict[str, str]) -> None:
        self._max_bytes = _positive_int(params, MAX_FILE_BYTES_CONFIG, DEFAULT_MAX_FILE_BYTES)
        self._reads.timeout_ms = _positive_int(params, READ_TIMEOUT_MS_CONFIG,
                                               DEFAULT_READ_TIMEOUT_MS)
        self._allowed = AllowedPaths(params.get(ALLOWED_PATHS_CONFIG))

    def _configured(self, path: str, what: str) -> AllowedPaths:
        if self._allowed is None:
            raise RuntimeError(f"{type(self).__name__} has not been configured yet")
        if not path:
            raise _error(path, f"the placeholder names no {what} "
                               f"(write ${{provider:/path/to/{what}:key}})")
        return self._allowed

    def _read(self, allowed: AllowedPaths, path: str, shown: str, *, outside: str,
              optional: bool) -> bytes | None:
        """The content of the regular file at ``path``. ``shown`` names it in errors
        (``outside`` when it is outside allowed.paths). A path that does not exist or is
        not a regular file is None when ``optional``, else an error; one that is outside,
        too big or unreadable is always a ConfigException."""
        target = allowed.check(path, outside)
        try:
            fd = open_regular(target, no_follow=allowed.roots is not None)
        except FileNotFoundError as exc:
            if optional:
                return None
            raise _error(path, f"cannot read {shown}: {exc.strerror}") from None
        except OSError as exc:
            raise _error(path, f"cannot read {shown}: {exc.strerror}") from None
        if fd is None:
            if optional:
                return None
            raise _error(path, f"{path} is not a regular file")
        try:
            allowed.check_opened(fd, path, outside)
            data = read_at_most(fd, self._max_bytes)
        except OSError as exc:
            raise _error(path, f"cannot read {shown}: {exc.strerror}") from None
        finally:
            os.close(fd)
        if data is None:
            raise _error(path, f"{shown} is larger than {self._max_bytes} bytes "
                               f"({MAX_FILE_BYTES_CONFIG} of this provider)")
        return data


class FileConfigProvider(_PathProvider):
    """Keys of a ``.properties`` file; the path is the file."""

    def get(self, path: str, keys: set[str] | None = None) -> ConfigData:
        allowed = self._configured(path, "file")
        content = self._reads.run(path, lambda: self._read(
            allowed, path, f"file {path}", outside=f"path {path}", optional=False))
        assert content is not None  # not optional
        try:
            text = content.decode("utf-8")
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
        allowed = self._configured(path, "directory")
        return ConfigData(self._reads.run(path, lambda: self._read_dir(allowed, path, keys)))

    def _read_dir(self, allowed: AllowedPaths, path: str, keys: set[str] | None
                  ) -> dict[str, str]:
        directory = allowed.check(path)
        if not os.path.isdir(directory):
            raise _error(path, f"{path} is not a directory")
        try:
            names = os.listdir(directory) if keys is None else [
                k for k in keys if k and os.sep not in k and k not in (".", "..")]
        except OSError as exc:
            raise _error(path, f"cannot list directory {path}: {exc.strerror}") from None
        data: dict[str, str] = {}
        for name in names:
            # Follows symbolic links, as Files.isRegularFile does: Kubernetes mounts each
            # key as a link into a hidden data directory.
            shown = f"file {name} in {path}"
            content = self._read(allowed, os.path.join(directory, name), shown,
                                 outside=shown, optional=True)
            if content is None:  # not a regular file, or no such file: not a key
                continue
            try:
                data[name] = content.decode("utf-8")
            except UnicodeDecodeError:
                raise _error(path, f"file {name} in {path} is not valid UTF-8") from None
        return data


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
