"""The plugin-manifest operator's modes and failure paths, with a stand-in
``connect-plugin-path`` run as a real subprocess and a stand-in hook for the workers (the
real tool and worker: tests/integration/test_plugin_manifest_sync.py)."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from airflow.sdk.exceptions import TaskDeferred

from airflow_provider.exceptions import (
    KafkaConnectConfigError,
    KafkaConnectError,
    NotFoundError,
    PluginPathCliError,
    PluginPathOutputError,
    PluginsNotListedError,
    UntrustedWorkerUrlError,
)
from airflow_provider.operators.plugins import KafkaConnectSyncPluginManifestsOperator
from airflow_provider.triggers.plugins import ConnectorPluginsTrigger
from tests.unit.airflow_provider._fake_cli import (
    LISTING,
    PLAN_CHANGES,
    PROVIDER,
    SOURCE,
    FakeCli,
    change,
    sync_output,
)
from tests.unit.airflow_provider._fakes import FakeTI
from tests.unit.airflow_provider.hooks.test_plugin_path import FakeHook

W1, W2 = "http://w1:8083", "http://w2:8083"
CLUSTER = {"leader_url": W1, "members": [{"worker_id": "w1", "url": W1},
                                         {"worker_id": "w2", "url": W2}]}


@pytest.fixture
def fake(tmp_path: Path) -> FakeCli:
    return (FakeCli(tmp_path / "bin").answer("list", LISTING)
            .answer("dry-run", sync_output(dry_run=True))
            .answer("sync-manifests", sync_output(dry_run=False)))


def logged(capsys: pytest.CaptureFixture[str]) -> str:
    """What the task logged (Airflow's task logger writes to stdout outside a task run)."""
    out, err = capsys.readouterr()
    return out + err


def operator(fake: FakeCli, hook: FakeHook | None = None, **kwargs: Any
             ) -> KafkaConnectSyncPluginManifestsOperator:
    kwargs.setdefault("plugin_path", "/plugins")
    op = KafkaConnectSyncPluginManifestsOperator(
        task_id="plugins", connect_plugin_path=str(fake.path),
        deferrable=kwargs.pop("deferrable", False), poll_interval=0.01, **kwargs)
    if hook is not None:
        op.__dict__["hook"] = hook  # the cached_property's slot
    return op


def test_list_returns_the_listing(fake: FakeCli, capsys: pytest.CaptureFixture[str]) -> None:
    ti = FakeTI()
    result = operator(fake, mode="list", plugin_locations=["/plugins/acme-tickets"],
                      plugin_path=None).execute({"ti": ti})
    assert fake.calls == [["list", "--plugin-location", "/plugins/acme-tickets", "--json"]]
    assert result == {"mode": "list", **LISTING}
    json.dumps(result)
    assert ti.pushed == {}
    log = logged(capsys)
    assert "3 plugin(s) in 3 location(s); 1 without a manifest, 1 not loadable" in log
    assert "NOT LOADABLE: ModuleNotFoundError" in log


def test_dry_run_pushes_the_plan_and_writes_nothing(fake: FakeCli,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    ti = FakeTI()
    result = operator(fake, mode="dry_run", worker_configs="/etc/connect/worker.properties",
                      plugin_path=None).execute({"ti": ti})
    assert fake.calls == [["sync-manifests", "--worker-config",
                           "/etc/connect/worker.properties", "--dry-run", "--json"]]
    assert ti.pushed == {"plan": PLAN_CHANGES}
    assert result == {"mode": "dry_run", "dry_run": True, "applied": False,
                      "changes": PLAN_CHANGES, "counts": {"add": 2, "create-shim": 1},
                      "classes": [SOURCE, PROVIDER], "workers": None}
    json.dumps(result)
    log = logged(capsys)
    assert "Plan (3): {'add': 2, 'create-shim': 1}" in log
    assert f"add             connect_plane.source_connector: {SOURCE}" in log


def test_sync_without_waiting(fake: FakeCli) -> None:
    ti = FakeTI()
    result = operator(fake, keep_not_found="True").execute({"ti": ti})  # rendered
    assert fake.calls == [["sync-manifests", "--plugin-path", "/plugins", "--keep-not-found",
                           "--json"]]
    assert result["applied"] is True and result["workers"] is None
    assert ti.pushed == {"plan": PLAN_CHANGES}


def test_an_empty_plan(fake: FakeCli, capsys: pytest.CaptureFixture[str]) -> None:
    fake.answer("dry-run", sync_output(dry_run=True, changes=[]))
    ti = FakeTI()
    result = operator(fake, mode="dry_run").execute({"ti": ti})
    assert ti.pushed == {"plan": []} and result["changes"] == [] and result["classes"] == []
    assert "Plan: none, every manifest is in sync" in logged(capsys)


def test_sync_then_wait_for_the_cluster(fake: FakeCli) -> None:
    hook = FakeHook({W1: [[], [SOURCE]], W2: [[SOURCE]]}, cluster=CLUSTER, allowed=(W1, W2))
    result = operator(fake, hook, wait_for_workers=True).execute({"ti": FakeTI()})
    # Only the class GET /connector-plugins lists is waited for (not the config provider).
    assert result["workers"] == {W1: {SOURCE: "1.0"}, W2: {SOURCE: "1.0"}}
    assert hook.asked == [W1, W2, W1]


def test_members_outside_the_credential_scope_fail_before_anything_is_written(
        fake: FakeCli) -> None:
    hook = FakeHook({W1: [[SOURCE]], W2: [[SOURCE]]}, cluster=CLUSTER, allowed=(W1,))
    with pytest.raises(UntrustedWorkerUrlError, match=f"{W2}/ .from GET /admin/cluster"):
        operator(fake, hook, wait_for_workers=True).execute({"ti": FakeTI()})
    assert fake.calls == [] and hook.asked == []


def test_given_worker_urls_and_the_flag_reach_the_hook(fake: FakeCli) -> None:
    hook = operator(fake, worker_urls="https://w9:8443/, http://w8:8083").hook
    assert hook.trusted_worker_urls == ("https://w9:8443", "http://w8:8083")
    assert hook.allow_discovered_workers is False
    discovering = operator(fake, allow_discovered_workers=True).hook
    assert discovering.trusted_worker_urls == () and discovering.allow_discovered_workers


def test_given_worker_urls_are_the_ones_checked(fake: FakeCli) -> None:
    hook = FakeHook({"https://w9:8443": [[SOURCE]]}, cluster=NotFoundError(404, "never asked"))
    result = operator(fake, hook, wait_for_workers=True,
                      worker_urls='["https://w9:8443/"]').execute({"ti": FakeTI()})
    assert result["workers"] == {"https://w9:8443": {SOURCE: "1.0"}}


def test_the_workers_are_found_before_anything_is_written(fake: FakeCli) -> None:
    hook = FakeHook({}, cluster=KafkaConnectConfigError("the connection's host is empty"))
    with pytest.raises(KafkaConnectConfigError, match="host is empty"):
        operator(fake, hook, wait_for_workers=True).execute({"ti": FakeTI()})
    with pytest.raises(ValueError, match="not an http"):
        operator(fake, hook, wait_for_workers=True, worker_urls="w1:8083").execute(
            {"ti": FakeTI()})
    assert fake.calls == []


def test_workers_that_never_list_the_plugin_fail_the_task(fake: FakeCli) -> None:
    hook = FakeHook({W1: [[]]})
    with pytest.raises(PluginsNotListedError) as caught:
        operator(fake, hook, wait_for_workers=True, worker_urls=[W1],
                 wait_timeout=0.2).execute({"ti": FakeTI()})
    assert caught.value.missing == {W1: [SOURCE]}


def test_nothing_workers_list_was_added(fake: FakeCli) -> None:
    only_provider = [change("add", entry=f"{PROVIDER} = acme_tickets:VaultConfigProvider",
                            cls=PROVIDER, type_="configprovider",
                            group="connect_plane.config_provider")]
    fake.answer("sync-manifests", sync_output(dry_run=False, changes=only_provider))
    hook = FakeHook({})
    result = operator(fake, hook, wait_for_workers=True, worker_urls=[W1]).execute(
        {"ti": FakeTI()})
    assert result["workers"] == {W1: {}} and hook.asked == []


def test_deferrable_wait_runs_in_the_trigger(fake: FakeCli) -> None:
    op = operator(fake, FakeHook({}, cluster=CLUSTER, allowed=(W1, W2)), wait_for_workers=True,
                  deferrable=True, wait_timeout=30, kafka_connect_conn_id="kc")
    ti = FakeTI()
    with pytest.raises(TaskDeferred) as deferred:
        op.execute({"ti": ti})
    assert fake.calls[-1][0] == "sync-manifests"
    summary = ti.pushed["sync_summary"]
    assert ti.pushed == {"plan": PLAN_CHANGES, "sync_summary": summary}
    assert summary["classes"] == [SOURCE, PROVIDER] and summary["workers"] is None
    trigger = deferred.value.trigger
    assert isinstance(trigger, ConnectorPluginsTrigger)
    assert trigger.serialize()[1] == {"worker_urls": [W1, W2], "classes": [SOURCE],
                                      "kafka_connect_conn_id": "kc", "timeout": 30,
                                      "poll_interval": 0.01}
    assert deferred.value.method_name == "execute_complete"
    assert deferred.value.timeout == timedelta(seconds=150)
    json.dumps(summary)  # through the metadata database
    listed = {W1: {SOURCE: "1.2.0"}, W2: {SOURCE: "1.2.0"}}
    result = op.execute_complete({"ti": ti}, {"status": "success", "listed": listed})
    assert result == {**summary, "workers": listed}
    with pytest.raises(PluginsNotListedError, match="did not list") as caught:
        op.execute_complete({"ti": ti}, {"status": "timeout", "message": "1 of 2 worker(s) "
                                         "did not list", "missing": {W2: [SOURCE]}})
    assert caught.value.missing == {W2: [SOURCE]}
    with pytest.raises(KafkaConnectError, match="failed: AuthenticationError"):
        op.execute_complete({"ti": ti}, {"status": "error",
                                         "message": "AuthenticationError: 401"})


def test_a_failing_tool_fails_the_task_with_its_details(fake: FakeCli) -> None:
    fake.answer("sync-manifests", exit=1, stderr=(
        "Traceback (most recent call last):\n" + "  frame\n" * 100
        + "PermissionError: [Errno 13] Permission denied: '/plugins/acme/entry_points.txt'\n"))
    ti = FakeTI()
    with pytest.raises(PluginPathCliError) as caught:
        operator(fake).execute({"ti": ti})
    message = str(caught.value)
    assert message.startswith("connect-plugin-path sync-manifests --plugin-path /plugins "
                              "--json exited with code 1:\nTraceback")
    assert message.endswith("Permission denied: '/plugins/acme/entry_points.txt'")
    assert "lines left out" in message
    assert ti.pushed == {}


def test_output_that_is_not_the_contract_fails_the_task(fake: FakeCli) -> None:
    fake.answer("dry-run", "Plan: add acme_tickets.TicketSourceConnector\n")
    with pytest.raises(PluginPathOutputError, match="did not print JSON"):
        operator(fake, mode="dry_run").execute({"ti": FakeTI()})


def test_warnings_on_stderr_are_logged(fake: FakeCli, capsys: pytest.CaptureFixture[str]) -> None:
    fake.answer("list", LISTING, stderr="WARNING: module acme shadows /plugins/b/acme\n")
    operator(fake, mode="list").execute({"ti": FakeTI()})
    assert "said on stderr:\nWARNING: module acme shadows /plugins/b/acme" in logged(capsys)


def test_a_missing_executable_fails_before_anything_runs(tmp_path: Path) -> None:
    op = KafkaConnectSyncPluginManifestsOperator(
        task_id="sync", plugin_path="/plugins",
        connect_plugin_path=str(tmp_path / "nowhere" / "connect-plugin-path"))
    with pytest.raises(KafkaConnectConfigError, match="is not an executable file"):
        op.execute({"ti": FakeTI()})


def test_nothing_to_read_is_refused(fake: FakeCli) -> None:
    with pytest.raises(ValueError, match="nothing to read"):
        operator(fake, plugin_path="").execute({"ti": FakeTI()})
    assert fake.calls == []


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"mode": "apply"}, "mode must be one of"),
    ({"mode": "dry_run", "wait_for_workers": True}, "wait_for_workers applies to mode='sync'"),
    ({"wait_timeout": 0}, "must be > 0"),
])
def test_bad_arguments_fail_when_the_dag_is_parsed(kwargs: dict[str, Any],
                                                   message: str) -> None:
    with pytest.raises(ValueError, match=message):
        KafkaConnectSyncPluginManifestsOperator(task_id="x", plugin_path="/p", **kwargs)
