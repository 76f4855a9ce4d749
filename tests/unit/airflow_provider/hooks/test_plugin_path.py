"""Running ``connect-plugin-path`` (a stand-in script run as a real subprocess): the
arguments of each mode, finding the executable, failures with the exit code and the
useful part of stderr; and the wait until workers list plugins, against a stand-in hook."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from airflow_provider.exceptions import (
    AuthenticationError,
    KafkaConnectConfigError,
    KafkaConnectTransportError,
    NotFoundError,
    PluginPathCliError,
    PluginPathOutputError,
    PluginsNotListedError,
    UntrustedWorkerUrlError,
)
from airflow_provider.hooks import plugin_path as cli
from airflow_provider.hooks.admin_results import ClusterMembers
from airflow_provider.hooks.connection import ConnectionSettings
from airflow_provider.hooks.credential_scope import CredentialScope
from airflow_provider.hooks.results import PluginInfo
from tests.unit.airflow_provider._fake_cli import LISTING, SOURCE, FakeCli, on_path, sync_output


@pytest.fixture
def fake(tmp_path: Path) -> FakeCli:
    return FakeCli(tmp_path / "bin")


# --------------------------------------------------------------------------- arguments


@pytest.mark.parametrize(("value", "expected"), [
    (None, []), ("", []), ("  ", []),
    ("/a", ["/a"]), ("/a, /b,", ["/a", "/b"]),
    (["/a", " /b "], ["/a", "/b"]), (("/a",), ["/a"]),
    ('["/a", "/b"]', ["/a", "/b"]),  # JSON
    ("['/a', '/b']", ["/a", "/b"]),  # a list rendered by Jinja without native objects
])
def test_templated_lists(value: Any, expected: list[str]) -> None:
    assert cli.as_list(value, "plugin_path") == expected


@pytest.mark.parametrize("value", [3, ["/a", 3], {"a": 1}, "[/a, /b", "[1, 2]"])
def test_bad_templated_lists_name_the_argument(value: Any) -> None:
    with pytest.raises(ValueError, match="plugin_path"):
        cli.as_list(value, "plugin_path")


def test_templated_flags() -> None:
    assert cli.as_bool(True, "keep_not_found") is True
    assert cli.as_bool(" False", "keep_not_found") is False
    assert cli.as_bool("TRUE", "keep_not_found") is True
    with pytest.raises(ValueError, match="keep_not_found must be true or false, got 'yes'"):
        cli.as_bool("yes", "keep_not_found")


def test_sources_become_repeated_flags() -> None:
    sources = cli.PluginSources.of(plugin_locations="/p/one", plugin_path="/p,/q",
                                   worker_configs=["/etc/w1.properties", "/etc/w2.properties"])
    assert sources.args() == ["--plugin-location", "/p/one", "--plugin-path", "/p",
                              "--plugin-path", "/q", "--worker-config", "/etc/w1.properties",
                              "--worker-config", "/etc/w2.properties"]


def test_sources_must_name_something() -> None:
    with pytest.raises(ValueError, match="give plugin_path, plugin_locations or worker_conf"):
        cli.PluginSources.of(None, "", [])


# --------------------------------------------------------------------------- the executable


def test_executable_found_on_path(fake: FakeCli, monkeypatch: pytest.MonkeyPatch) -> None:
    on_path(monkeypatch, fake.dir)
    assert cli.find_executable() == str(fake.path)
    assert cli.find_executable("connect-plugin-path") == str(fake.path)


def test_executable_next_to_the_python_running_airflow(
        fake: FakeCli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setattr(sys, "executable", str(fake.dir / "python"))
    assert cli.find_executable() == str(fake.path)


def test_a_missing_executable_is_a_clear_error(monkeypatch: pytest.MonkeyPatch,
                                               tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setattr(sys, "executable", str(tmp_path / "venv" / "bin" / "python"))
    with pytest.raises(KafkaConnectConfigError) as caught:
        cli.find_executable()
    assert "connect-plugin-path executable was found neither on PATH nor next to" in str(
        caught.value) and "connect_plugin_path=" in str(caught.value)
    with pytest.raises(KafkaConnectConfigError, match="'my-tool' is not on PATH"):
        cli.find_executable("my-tool")
    text = tmp_path / "not-executable"
    text.write_text("#!/bin/sh\n")
    with pytest.raises(KafkaConnectConfigError, match="is not an executable file"):
        cli.find_executable(str(text))
    with pytest.raises(KafkaConnectConfigError, match="is not an executable file"):
        cli.find_executable(str(tmp_path / "nowhere" / "connect-plugin-path"))


def test_an_executable_that_cannot_start_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "connect-plugin-path"
    bad.write_text("#!/nonexistent/interpreter\n")
    bad.chmod(0o755)
    with pytest.raises(KafkaConnectConfigError, match="cannot be run"):
        cli.run_cli(str(bad), ["list", "--json"])


# --------------------------------------------------------------------------- running


def test_list_runs_the_tool_and_parses_its_json(fake: FakeCli) -> None:
    fake.answer("list", LISTING, stderr="WARNING a module shadows another\n")
    sources = cli.PluginSources.of(plugin_path=["/plugins"])
    listing, run = cli.list_plugins(str(fake.path), sources)
    assert fake.calls == [["list", "--plugin-path", "/plugins", "--json"]]
    assert listing.to_dict() == LISTING
    assert run.command == "connect-plugin-path list --plugin-path /plugins --json"
    assert "shadows" in run.stderr


@pytest.mark.parametrize(("dry_run", "keep", "flags"), [
    (True, False, ["--dry-run"]), (False, False, []), (False, True, ["--keep-not-found"]),
    (True, True, ["--dry-run", "--keep-not-found"])])
def test_sync_flags(fake: FakeCli, dry_run: bool, keep: bool, flags: list[str]) -> None:
    fake.answer("dry-run", sync_output(dry_run=True))
    fake.answer("sync-manifests", sync_output(dry_run=False))
    sources = cli.PluginSources.of(worker_configs="/etc/worker.properties")
    result, _ = cli.sync_manifests(str(fake.path), sources, dry_run=dry_run,
                                   keep_not_found=keep)
    assert fake.calls == [["sync-manifests", "--worker-config", "/etc/worker.properties",
                           *flags, "--json"]]
    assert result.dry_run is dry_run


def test_a_sync_that_claims_the_other_mode_is_refused(fake: FakeCli) -> None:
    fake.answer("dry-run", sync_output(dry_run=False))  # a dry run must never write
    with pytest.raises(PluginPathOutputError, match='printed "dry_run": false'):
        cli.sync_manifests(str(fake.path), cli.PluginSources.of(plugin_path="/p"),
                           dry_run=True)


def test_a_failure_carries_the_exit_code_and_stderr(fake: FakeCli) -> None:
    fake.answer("sync-manifests", "", exit=1,
                stderr="error: cannot write /p/x/entry_points.txt: Permission denied\n")
    with pytest.raises(PluginPathCliError) as caught:
        cli.sync_manifests(str(fake.path), cli.PluginSources.of(plugin_path="/p"),
                           dry_run=False)
    error = caught.value
    assert error.returncode == 1
    assert error.command == "connect-plugin-path sync-manifests --plugin-path /p --json"
    assert str(error) == ("connect-plugin-path sync-manifests --plugin-path /p --json exited "
                          "with code 1:\nerror: cannot write /p/x/entry_points.txt: "
                          "Permission denied")


def test_a_usage_error_says_so(fake: FakeCli) -> None:
    # The stand-in answers 2 (argparse's usage error) for a subcommand it has no answer for.
    with pytest.raises(PluginPathCliError, match=r"exited with code 2 \(usage error\):\n"
                                                 "usage: connect-plugin-path"):
        cli.run_cli(str(fake.path), ["bogus"])


def test_a_long_stderr_keeps_its_head_and_tail(fake: FakeCli) -> None:
    lines = [f"line {n}" for n in range(1, 501)]
    fake.answer("list", exit=1, stderr="\n".join(["Traceback (most recent call last):",
                                                  *lines, "ValueError: the real reason"]))
    with pytest.raises(PluginPathCliError) as caught:
        cli.run_cli(str(fake.path), ["list"])
    kept = caught.value.stderr.splitlines()
    assert kept[0] == "Traceback (most recent call last):"
    assert kept[-1] == "ValueError: the real reason"
    assert "... (462 lines left out) ..." in kept
    assert len(kept) == cli.STDERR_HEAD_LINES + 1 + cli.STDERR_TAIL_LINES


def test_excerpt_cuts_long_lines_and_long_text() -> None:
    assert cli.excerpt("short\n") == "short"
    assert cli.excerpt("x" * 2000) == "x" * cli.STDERR_MAX_LINE + "..."
    huge = cli.excerpt("\n".join("y" * 499 for _ in range(40)), max_chars=1000)
    assert len(huge) < 1100 and "characters left out" in huge


def test_nothing_on_stderr_shows_stdout_instead(fake: FakeCli) -> None:
    fake.answer("list", "Error: no plugin path given", exit=1)
    with pytest.raises(PluginPathCliError, match="Error: no plugin path given"):
        cli.run_cli(str(fake.path), ["list"])


def test_a_hung_tool_is_stopped(fake: FakeCli) -> None:
    fake.answer("list", LISTING, stderr="scanning...\n", sleep=30)
    with pytest.raises(PluginPathCliError) as caught:
        cli.run_cli(str(fake.path), ["list", "--json"], timeout=1)
    assert caught.value.returncode is None
    assert "did not finish" in str(caught.value) and "stopped after 1 s" in str(caught.value)


# --------------------------------------------------------------------------- the workers


class FakeHook:
    """Answers ``list_connector_plugins`` per worker URL from a script: a list of plugin
    classes, or an exception; the last entry repeats."""

    def __init__(self, answers: dict[str, list[Any]], cluster: Any = None,
                 allowed: tuple[str, ...] = ()) -> None:
        self.answers = answers
        self.cluster = cluster
        self.asked: list[str] = []
        self.settings = ConnectionSettings(base_url="http://connect:8083",
                                           allowed_worker_urls=allowed)
        self.credential_scope = CredentialScope.of(self.settings)
        self.retry_limit = 5
        self.retries_while_asked: set[int] = set()

    def list_connector_plugins(self, connectors_only: bool = True,
                               worker_url: str | None = None) -> list[PluginInfo]:
        assert connectors_only is False and worker_url is not None
        self.asked.append(worker_url)
        self.retries_while_asked.add(self.retry_limit)
        script = self.answers[worker_url]
        answer = script.pop(0) if len(script) > 1 else script[0]
        if isinstance(answer, Exception):
            raise answer
        return [PluginInfo(name, "source", "1.0") for name in answer]

    def get_cluster(self) -> ClusterMembers:
        if isinstance(self.cluster, Exception):
            raise self.cluster
        return ClusterMembers.from_json(self.cluster)


def test_given_worker_urls() -> None:
    assert cli.given_worker_urls("http://w1:8083/, https://w2:8443") == [
        "http://w1:8083", "https://w2:8443"]
    assert cli.given_worker_urls(["http://w1:8083", "http://w1:8083/"]) == ["http://w1:8083"]
    with pytest.raises(ValueError, match="'w1:8083' is not an http"):
        cli.given_worker_urls(["w1:8083"])


def test_workers_come_from_the_cluster_or_the_connection() -> None:
    members = {"leader_url": "http://w1:8083", "members": [
        {"worker_id": "w1", "url": "http://w1:8083/"},
        {"worker_id": "w2", "url": "http://w2:8083"}]}
    allowed = ("http://w1:8083", "http://w2:8083")
    assert cli.discover_worker_urls(FakeHook({}, members, allowed)) == ["http://w1:8083",
                                                                        "http://w2:8083"]
    # Members outside the connection's origin and allow-list: refused, both named.
    with pytest.raises(UntrustedWorkerUrlError, match="http://w1:8083/, http://w2:8083/ "
                                                      r"\(from GET /admin/cluster\)"):
        cli.discover_worker_urls(FakeHook({}, members))
    assert cli.discover_worker_urls(FakeHook({}, members, ("http://*:8083",))) == [
        "http://w1:8083", "http://w2:8083"]
    # Apache Kafka Connect has no /admin/cluster: the connection's worker alone.
    apache = FakeHook({}, NotFoundError(404, "HTTP 404 Not Found"))
    assert cli.discover_worker_urls(apache) == ["http://connect:8083"]
    with pytest.raises(KafkaConnectConfigError, match="lists no members"):
        cli.discover_worker_urls(FakeHook({}, {"leader_url": None, "members": []}))


def test_wait_until_every_worker_lists_the_classes() -> None:
    refused = KafkaConnectTransportError("GET /connector-plugins got no answer")
    hook = FakeHook({"http://w1": [[], ["other.X"], [SOURCE, "other.X"]],
                     "http://w2": [refused, [SOURCE]]})
    listed = cli.wait_for_plugins(hook, ["http://w1", "http://w2"], [SOURCE], timeout=10,
                                  poll_interval=0.01)
    assert listed == {"http://w1": {SOURCE: "1.0"}, "http://w2": {SOURCE: "1.0"}}
    # A worker that listed them is not asked again.
    assert hook.asked == ["http://w1", "http://w2", "http://w1", "http://w2", "http://w1"]
    # Each poll asks once (the loop retries); the hook's own retries are back afterwards.
    assert hook.retries_while_asked == {0} and hook.retry_limit == 5


def test_wait_times_out_naming_what_each_worker_misses() -> None:
    hook = FakeHook({"http://w1": [[SOURCE]], "http://w2": [NotFoundError(404, "HTTP 404")]})
    with pytest.raises(PluginsNotListedError) as caught:
        cli.wait_for_plugins(hook, ["http://w1", "http://w2"], [SOURCE, "b.Sink"],
                             timeout=0.3, poll_interval=0.05)
    error = caught.value
    assert error.missing == {"http://w1": ["b.Sink"], "http://w2": [SOURCE, "b.Sink"]}
    assert str(error).startswith("2 of 2 worker(s) did not list the synced plugins within "
                                 "0.3 s: http://w1 does not list b.Sink; http://w2 does not "
                                 f"list {SOURCE}, b.Sink (last error: NotFoundError:")
    json.dumps(error.missing)


def test_a_refused_request_ends_the_wait_at_once() -> None:
    hook = FakeHook({"http://w1": [AuthenticationError(401, "Unauthorized")]})
    with pytest.raises(AuthenticationError):
        cli.wait_for_plugins(hook, ["http://w1"], [SOURCE], timeout=30)
    assert hook.asked == ["http://w1"]
