"""Running ``connect-plugin-path`` (KIP-898's tool) and checking what the workers list
afterwards, without an Airflow context: used by
:class:`~airflow_provider.operators.plugins.KafkaConnectSyncPluginManifestsOperator`, its
trigger and the ``kafka_connect_plugin_manifest_sync`` DAG.

The tool ships with the worker (the ``connect-plane`` distribution's console script); the
provider only runs it, with ``--json``, and reads its output
(:mod:`airflow_provider.utils.plugin_manifests`). What to read is given as in the tool:
plugin locations, ``plugin.path`` entries, or worker config files (each contributes its
``plugin.path``) — :class:`PluginSources`.
"""

from __future__ import annotations

import ast
import json
import logging
import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from airflow_provider.exceptions import (
    WAIT_OUT_ERRORS,
    KafkaConnectConfigError,
    NotFoundError,
    PluginPathCliError,
    PluginPathOutputError,
    PluginsNotListedError,
)
from airflow_provider.hooks.kafka_connect import KafkaConnectHook
from airflow_provider.hooks.results import PluginInfo
from airflow_provider.utils.plugin_manifests import (
    ManifestSync,
    PluginListing,
    parse_listing,
    parse_sync,
)

EXECUTABLE = "connect-plugin-path"
DEFAULT_CLI_TIMEOUT_S = 300.0
#: How much of a long stderr an error keeps: the first lines (what failed) and the last
#: ones (the end of a traceback), each line and the whole cut to a readable size.
STDERR_HEAD_LINES, STDERR_TAIL_LINES, STDERR_MAX_LINE, STDERR_MAX_CHARS = 10, 30, 500, 8000

log = logging.getLogger(__name__)


# --------------------------------------------------------------------------- arguments


def as_list(value: Any, what: str) -> list[str]:
    """A templated argument as a list of strings: a list, a JSON (or Python-literal, as
    Jinja renders a list) list, or a comma-separated string; ``None`` or ``""``: empty."""
    if value is None:
        return []
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            try:
                value = json.loads(text)
            except ValueError:
                try:
                    value = ast.literal_eval(text)
                except (ValueError, SyntaxError):
                    raise ValueError(f"{what} is not a list: {text[:100]!r}") from None
        else:
            value = text.split(",")
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{what} must be a string or a list of strings")
    return [item.strip() for item in value if item.strip()]


def as_bool(value: Any, what: str) -> bool:
    """A templated flag: a bool, or ``true``/``false`` (any case) as Jinja renders it."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise ValueError(f"{what} must be true or false, got {value!r}")


@dataclass(frozen=True)
class PluginSources:
    """What the tool reads: ``--plugin-location``, ``--plugin-path`` and ``--worker-config``
    values (each repeatable; a ``plugin.path`` string is split at commas, as the worker
    splits it)."""

    plugin_locations: tuple[str, ...] = ()
    plugin_paths: tuple[str, ...] = ()
    worker_configs: tuple[str, ...] = ()

    @classmethod
    def of(cls, plugin_locations: Any = None, plugin_path: Any = None,
           worker_configs: Any = None) -> PluginSources:
        """From the operator's (rendered) arguments; at least one must name something."""
        sources = cls(tuple(as_list(plugin_locations, "plugin_locations")),
                      tuple(as_list(plugin_path, "plugin_path")),
                      tuple(as_list(worker_configs, "worker_configs")))
        if not (sources.plugin_locations or sources.plugin_paths or sources.worker_configs):
            raise ValueError("nothing to read: give plugin_path, plugin_locations or "
                             "worker_configs")
        return sources

    def args(self) -> list[str]:
        flags = (("--plugin-location", self.plugin_locations),
                 ("--plugin-path", self.plugin_paths), ("--worker-config", self.worker_configs))
        return [arg for flag, values in flags for value in values for arg in (flag, value)]


def find_executable(given: str | None = None) -> str:
    """The ``connect-plugin-path`` to run: ``given`` (a path, or a name looked up on
    ``PATH``); by default the one on ``PATH``, else the one next to the Python running
    Airflow (a virtualenv's ``bin/``, which need not be on ``PATH``)."""
    if given:
        if os.sep in given or (os.altsep and os.altsep in given):
            if os.path.isfile(given) and os.access(given, os.X_OK):
                return given
            raise KafkaConnectConfigError(f"connect_plugin_path {given!r} is not an "
                                          "executable file")
        found = shutil.which(given)
        if found is None:
            raise KafkaConnectConfigError(f"connect_plugin_path {given!r} is not on PATH")
        return found
    found = shutil.which(EXECUTABLE)
    if found is not None:
        return found
    beside = Path(sys.executable).parent / EXECUTABLE  # not resolved: a venv's bin/
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    raise KafkaConnectConfigError(
        f"the {EXECUTABLE} executable was found neither on PATH nor next to "
        f"{sys.executable}: install connect-plane (its console script) where Airflow "
        "runs, or pass connect_plugin_path=")


# --------------------------------------------------------------------------- running


def excerpt(text: str, head: int = STDERR_HEAD_LINES, tail: int = STDERR_TAIL_LINES,
            max_line: int = STDERR_MAX_LINE, max_chars: int = STDERR_MAX_CHARS) -> str:
    """``text`` cut to its first ``head`` and last ``tail`` lines (each at most
    ``max_line`` characters, all at most ``max_chars``), saying how much was left out."""
    lines = [line if len(line) <= max_line else f"{line[:max_line]}..."
             for line in text.rstrip().splitlines()]
    if len(lines) > head + tail:
        lines = [*lines[:head], f"... ({len(lines) - head - tail} lines left out) ...",
                 *lines[-tail:]]
    kept = "\n".join(lines)
    if len(kept) > max_chars:
        first = max_chars // 4
        left_out = f"... ({len(kept) - max_chars} characters left out) ..."
        kept = f"{kept[:first]}\n{left_out}\n{kept[-(max_chars - first):]}"
    return kept


@dataclass(frozen=True)
class CliRun:
    """A finished run: the command line (for messages), stdout and stderr."""

    command: str
    stdout: str
    stderr: str = field(repr=False)


def run_cli(executable: str, args: Sequence[str], timeout: float = DEFAULT_CLI_TIMEOUT_S
            ) -> CliRun:
    """Run ``executable args``; :class:`PluginPathCliError` (exit code, stderr's head and
    tail) unless it exits 0 within ``timeout`` seconds."""
    argv = [executable, *args]
    command = shlex.join([Path(executable).name, *args])
    try:
        done = subprocess.run(argv, capture_output=True, text=True, errors="replace",
                              timeout=timeout, check=False, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as exc:
        # What it said before it was stopped (bytes even in text mode, on some paths).
        said = (exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes)
                else exc.stderr or "")
        raise PluginPathCliError(command, None, excerpt(
            f"{said}\n(stopped after {timeout:g} s)".strip())) from None
    except OSError as exc:  # not executable after all, a bad interpreter line, ...
        raise KafkaConnectConfigError(f"{executable} cannot be run: {exc.strerror or exc}"
                                      ) from None
    if done.returncode != 0:
        said = done.stderr if done.stderr.strip() else done.stdout
        raise PluginPathCliError(command, done.returncode, excerpt(said))
    return CliRun(command, done.stdout, done.stderr)


def list_plugins(executable: str, sources: PluginSources,
                 timeout: float = DEFAULT_CLI_TIMEOUT_S) -> tuple[PluginListing, CliRun]:
    """``connect-plugin-path list ... --json``."""
    run = run_cli(executable, ["list", *sources.args(), "--json"], timeout)
    return parse_listing(run.stdout, run.command), run


def sync_manifests(executable: str, sources: PluginSources, *, dry_run: bool,
                   keep_not_found: bool = False, timeout: float = DEFAULT_CLI_TIMEOUT_S
                   ) -> tuple[ManifestSync, CliRun]:
    """``connect-plugin-path sync-manifests ... [--dry-run] [--keep-not-found] --json``;
    checks that the output says it was (or was not) a dry run."""
    args = ["sync-manifests", *sources.args()]
    args += ["--dry-run"] if dry_run else []
    args += ["--keep-not-found"] if keep_not_found else []
    run = run_cli(executable, [*args, "--json"], timeout)
    result = parse_sync(run.stdout, run.command)
    if result.dry_run != dry_run:
        raise PluginPathOutputError(f"{run.command} printed \"dry_run\": "
                                    f"{json.dumps(result.dry_run)}")
    return result, run


# --------------------------------------------------------------------------- the workers


def given_worker_urls(urls: Any) -> list[str]:
    """``worker_urls`` as given (a list, a JSON list or a comma-separated string of
    ``http(s)://`` URLs), without duplicates."""
    found = [url.rstrip("/") for url in as_list(urls, "worker_urls")]
    for url in found:
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"worker_urls: {url!r} is not an http(s) URL")
    return list(dict.fromkeys(found))


def discover_worker_urls(hook: KafkaConnectHook) -> list[str]:
    """Every member of the connection's cluster (``GET /admin/cluster``); a cluster
    without that connect-plane extension (Apache Kafka Connect: 404) is the connection's
    worker alone. The members advertise their URLs themselves: each must be in the hook's
    credential scope (else :class:`~airflow_provider.exceptions.UntrustedWorkerUrlError`,
    raised before any member is asked)."""
    try:
        urls = hook.get_cluster().urls
    except NotFoundError:
        log.warning("%s has no /admin/cluster (not a connect-plane worker): checking that "
                    "worker only; give worker_urls to check every worker of the cluster",
                    hook.settings.base_url)
        return [hook.settings.base_url]
    if not urls:
        raise KafkaConnectConfigError(f"the cluster of {hook.settings.base_url} lists no "
                                      "members")
    hook.credential_scope.check_all(urls, source="GET /admin/cluster")
    return list(dict.fromkeys(url.rstrip("/") for url in urls))


@dataclass
class PluginWait:
    """Which of ``classes`` each worker of ``urls`` has not listed yet: fed with each
    worker's ``GET /connector-plugins?connectorsOnly=false`` answer (:meth:`seen`) or the
    error asking for it (:meth:`failed`)."""

    urls: list[str]
    classes: list[str]
    missing: dict[str, list[str]] = field(default_factory=dict)
    listed: dict[str, dict[str, str | None]] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.missing = {url: list(self.classes) for url in self.urls}

    def pending(self) -> list[str]:
        """The workers still to ask."""
        return [url for url, classes in self.missing.items() if classes]

    @property
    def done(self) -> bool:
        return not self.pending()

    def seen(self, url: str, plugins: Iterable[PluginInfo]) -> None:
        versions = {plugin.class_name: plugin.version for plugin in plugins}
        self.missing[url] = [name for name in self.classes if name not in versions]
        self.listed[url] = {name: versions[name] for name in self.classes if name in versions}
        self.errors.pop(url, None)

    def failed(self, url: str, error: Exception) -> None:
        self.errors[url] = f"{type(error).__name__}: {error}"

    def timeout_message(self, timeout: float) -> str:
        parts = []
        for url in self.pending():
            reason = f" (last error: {self.errors[url]})" if url in self.errors else ""
            parts.append(f"{url} does not list {', '.join(self.missing[url])}{reason}")
        return (f"{len(parts)} of {len(self.urls)} worker(s) did not list the synced "
                f"plugins within {timeout:g} s: " + "; ".join(parts))


def wait_for_plugins(hook: KafkaConnectHook, urls: Sequence[str], classes: Sequence[str], *,
                     timeout: float, poll_interval: float = 1.0
                     ) -> dict[str, dict[str, str | None]]:
    """Poll every worker's ``GET /connector-plugins?connectorsOnly=false`` until each
    lists every class of ``classes``; returns ``{url: {class: version}}``.
    :class:`PluginsNotListedError` after ``timeout`` seconds; a worker that cannot be
    reached, or answers 404 or 409 for a while, is waited out."""
    wait = PluginWait(list(urls), list(classes))
    deadline = time.monotonic() + timeout
    # No retries (and their backoff) inside one poll: the loop is the retry, bounded by
    # the deadline.
    saved, hook.retry_limit = hook.retry_limit, 0
    try:
        while True:
            for url in wait.pending():
                try:
                    wait.seen(url, hook.list_connector_plugins(connectors_only=False,
                                                               worker_url=url))
                except WAIT_OUT_ERRORS as exc:
                    wait.failed(url, exc)
            if wait.done:
                return wait.listed
            if time.monotonic() >= deadline:
                raise PluginsNotListedError(wait.timeout_message(timeout),
                                            missing={url: wait.missing[url]
                                                     for url in wait.pending()})
            time.sleep(min(poll_interval, max(0.0, deadline - time.monotonic())))
    finally:
        hook.retry_limit = saved
