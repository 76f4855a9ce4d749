"""Plugin-manifest sync from Airflow (KIP-898) against a real ``connect-standalone`` worker
with ``plugin.discovery=service_load`` and a ``plugin.path`` holding a connector without a
manifest, through real ``dag.test()`` runs of the operator and of the
``kafka_connect_plugin_manifest_sync`` DAG, which run the real ``connect-plugin-path``:

* ``list`` shows the plugin found by scanning and declared by no manifest; the worker does
  not list it and refuses a connector of it;
* a dry run shows the plan and leaves the plugin path byte-identical;
* a sync writes the manifest, and the worker lists the plugin afterwards — no restart —
  waited for in the task or in the trigger; a connector of it then runs;
* the DAG syncs when the plan is not empty, checks the workers, and its next run has an
  empty plan and skips; reading the plugin path from the worker's config works alike;
* a failing tool fails the task with its exit code and stderr; no secret of the worker
  config reaches a log;
* in a distributed cluster sharing one plugin path, the wait finds every member through
  ``GET /admin/cluster`` (the connection's ``allowed_worker_urls`` admitting the other
  member) and each lists the plugin; a worker that never does fails it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from airflow_provider.testing import record_trigger_runs, task_states, xcom
from airflow_provider.triggers.plugins import ConnectorPluginsTrigger
from tests.conftest import DistributedClusterFactory
from tests.support import WorkerProcess, wait_for_connector_state, wait_until

pytestmark = pytest.mark.integration

DAG_FILE = Path(__file__).parent / "airflow_dags" / "plugin_manifest_sync_dags.py"
EXAMPLE_DAG = Path(__file__).parents[2] / "dags" / "kafka_connect_plugin_manifest_sync.py"
PLUGIN = "acme_feed.FeedSourceConnector"
VERSION = "2.0.1"
#: A secret in the worker config the tool reads: it must reach no log.
SECRET = "feed-api-pw-5d1e"

PLUGIN_SOURCE = f'''"""A third-party source connector: one plain module, no manifest."""

from __future__ import annotations

import threading
from collections.abc import Mapping

from worker.api import SourceConnector, SourceRecord, SourceTask
from worker.api.data import STRING_SCHEMA


class FeedSourceConnector(SourceConnector):
    def version(self) -> str:
        return "{VERSION}"

    def start(self, props: Mapping[str, str]) -> None:
        self._props = dict(props)

    def task_class(self) -> type[SourceTask]:
        return FeedSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self._props)]

    def stop(self) -> None:
        pass


class FeedSourceTask(SourceTask):
    def start(self, props: Mapping[str, str]) -> None:
        self._topic = props["topic"]
        self._sent = False
        self._stopping = threading.Event()

    def poll(self) -> list[SourceRecord] | None:
        if self._sent:
            self._stopping.wait(0.2)
            return None
        self._sent = True
        return [SourceRecord({{"feed": "acme"}}, {{"n": 0}}, self._topic, None, STRING_SCHEMA,
                             "k", STRING_SCHEMA, "hello")]

    def stop(self) -> None:
        self._stopping.set()
'''


class PluginWorker:
    """A worker whose ``plugin.path`` holds ``acme-feed/acme_feed.py`` (no manifest)."""

    def __init__(self, worker: WorkerProcess, plugin_path: Path) -> None:
        self.worker = worker
        self.plugin_path = plugin_path
        self.properties = worker.props_file

    def listed(self) -> dict[str, str]:
        response = self.worker.client.get("/connector-plugins",
                                          params={"connectorsOnly": "false"})
        assert response.status_code == 200, response.text
        return {plugin["class"]: plugin.get("version") for plugin in response.json()}

    def tree(self) -> dict[str, str]:
        """Every file of the plugin path and its SHA-256."""
        return {str(path.relative_to(self.plugin_path)):
                hashlib.sha256(path.read_bytes()).hexdigest()
                for path in sorted(self.plugin_path.rglob("*")) if path.is_file()
                and "__pycache__" not in path.parts}

    def manifests(self) -> list[Path]:
        return sorted(self.plugin_path.rglob("entry_points.txt"))

    def log(self) -> str:
        return self.worker.log_path.read_text(encoding="utf-8", errors="replace")


@pytest.fixture
def plugin_worker(standalone_worker: Callable[..., WorkerProcess], tmp_path: Path,
                  kafka_connect_conn: Callable[..., str]) -> PluginWorker:
    plugin_path = tmp_path / "plugins"
    (plugin_path / "acme-feed").mkdir(parents=True)
    (plugin_path / "acme-feed" / "acme_feed.py").write_text(PLUGIN_SOURCE, encoding="utf-8")
    worker = standalone_worker({"plugin.path": plugin_path, "plugin.discovery": "service_load",
                                # A key the worker ignores: its value must stay out of logs.
                                "acme.feed.api.password": SECRET})
    kafka_connect_conn(host=worker.url)
    return PluginWorker(worker, plugin_path)


def run(airflow_dag: Callable[..., Any], dag_id: str, dag_file: Path = DAG_FILE,
        **conf: Any) -> Any:
    return airflow_dag(dag_file, dag_id).test(run_conf=conf)


def output(capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture,
           marker: str) -> str:
    """What the DAG runs logged: printed (Airflow's task logs go to stdout under
    ``dag.test()``) and through ``logging`` (the DAG's own tasks); ``marker``, a line the
    task logs, proves the task logs are in it."""
    out, err = capfd.readouterr()
    logged = out + err + caplog.text
    assert marker in logged, logged[-3000:]
    return logged


def test_list_shows_the_plugin_without_a_manifest(plugin_worker: PluginWorker,
                                                  airflow_dag: Any) -> None:
    assert PLUGIN not in plugin_worker.listed()
    refused = plugin_worker.worker.client.put("/connectors/feed/config", json={
        "connector.class": PLUGIN, "topic": "feed"})
    assert refused.status_code == 400 and PLUGIN in refused.json()["message"]

    dag_run = run(airflow_dag, "kc_plugins_list", plugin_path=[str(plugin_worker.plugin_path)])
    assert task_states(dag_run) == {"plugins": "success"}
    listing = xcom(dag_run, "plugins")
    (ours,) = [p for p in listing["plugins"] if p["class"] == PLUGIN]
    assert ours == {"class": PLUGIN, "aliases": ours["aliases"], "version": VERSION,
                    "type": "source", "scanned": True, "manifest": False, "loadable": True,
                    "error": None, "location": str(plugin_worker.plugin_path / "acme-feed")}
    assert "FeedSourceConnector" in ours["aliases"]
    builtin = {p["class"]: p for p in listing["plugins"]}[
        "org.apache.kafka.connect.file.FileStreamSourceConnector"]
    assert builtin["manifest"] is True and builtin["location"] == "classpath"


def test_a_dry_run_plans_and_writes_nothing(plugin_worker: PluginWorker,
                                            airflow_dag: Any) -> None:
    before = plugin_worker.tree()
    dag_run = run(airflow_dag, "kc_plugins_dry_run",
                  worker_configs=[str(plugin_worker.properties)])
    assert task_states(dag_run) == {"plugins": "success"}
    result = xcom(dag_run, "plugins")
    assert result["dry_run"] is True and result["applied"] is False
    assert result["classes"] == [PLUGIN]
    assert xcom(dag_run, "plugins", "plan") == result["changes"]
    added = [c for c in result["changes"] if c["class"] == PLUGIN]
    assert [c["entry"] for c in added] == [f"{PLUGIN} = acme_feed:FeedSourceConnector"]
    assert added[0]["group"] == "connect_plane.source_connector"
    assert plugin_worker.tree() == before and plugin_worker.manifests() == []
    assert PLUGIN not in plugin_worker.listed()


@pytest.mark.parametrize("dag_id", ["kc_plugins_sync", "kc_plugins_sync_deferred"])
def test_a_sync_makes_the_worker_list_and_run_the_plugin(
        plugin_worker: PluginWorker, airflow_dag: Any, dag_id: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    triggers, _ = record_trigger_runs(monkeypatch, ConnectorPluginsTrigger)
    pid = plugin_worker.worker.pid
    dag_run = run(airflow_dag, dag_id, plugin_path=[str(plugin_worker.plugin_path)])
    assert task_states(dag_run) == {"plugins": "success"}
    result = xcom(dag_run, "plugins")
    url = plugin_worker.worker.url
    assert result["applied"] is True and result["classes"] == [PLUGIN]
    # service_load imports a plugin on first use only: its version may not be known yet.
    assert list(result["workers"]) == [url] and list(result["workers"][url]) == [PLUGIN]
    assert result["workers"][url][PLUGIN] in (VERSION, None)
    if dag_id.endswith("deferred"):  # the wait ran in the trigger
        assert [t["worker_urls"] for t in triggers] == [[url]]
    else:
        assert triggers == []
    (manifest,) = plugin_worker.manifests()
    assert f"{PLUGIN} = acme_feed:FeedSourceConnector" in manifest.read_text()
    assert PLUGIN in plugin_worker.listed()
    assert plugin_worker.worker.pid == pid

    created = plugin_worker.worker.client.put("/connectors/feed/config", json={
        "connector.class": PLUGIN, "topic": "feed", "tasks.max": "1"})
    assert created.status_code == 201, created.text
    wait_for_connector_state(plugin_worker.worker.client, "feed", "RUNNING",
                             tasks_state="RUNNING")
    assert plugin_worker.listed()[PLUGIN] == VERSION  # imported now


def test_the_dag_syncs_once_then_skips(plugin_worker: PluginWorker, airflow_dag: Any,
                                       capfd: pytest.CaptureFixture[str],
                                       caplog: pytest.LogCaptureFixture) -> None:
    conf = {"plugin_path": None, "worker_config": str(plugin_worker.properties)}
    first = run(airflow_dag, "kafka_connect_plugin_manifest_sync", EXAMPLE_DAG, **conf)
    assert task_states(first) == {"plan": "success", "should_sync": "success",
                                  "sync": "success", "check_workers": "success"}
    url = plugin_worker.worker.url
    checked = xcom(first, "check_workers")
    assert checked["classes"] == [PLUGIN] and list(checked["workers"]) == [url]
    assert checked["workers"][url] == {PLUGIN: plugin_worker.listed()[PLUGIN]}
    synced = plugin_worker.tree()

    second = run(airflow_dag, "kafka_connect_plugin_manifest_sync", EXAMPLE_DAG, **conf)
    assert task_states(second) == {"plan": "success", "should_sync": "success",
                                   "sync": "skipped", "check_workers": "skipped"}
    assert xcom(second, "plan")["changes"] == [] and xcom(second, "plan", "plan") == []
    assert plugin_worker.tree() == synced
    logged = output(capfd, caplog, "Nothing to sync")
    assert SECRET not in logged + plugin_worker.log()


def test_a_failing_tool_fails_the_task_with_its_details(
        plugin_worker: PluginWorker, airflow_dag: Any, tmp_path: Path,
        capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture) -> None:
    missing = tmp_path / "nowhere" / "worker.properties"
    dag_run = run(airflow_dag, "kafka_connect_plugin_manifest_sync", EXAMPLE_DAG,
                  plugin_path=None, worker_config=str(missing))
    assert task_states(dag_run) == {"plan": "failed", "should_sync": "upstream_failed",
                                    "sync": "upstream_failed",
                                    "check_workers": "upstream_failed"}
    logged = output(capfd, caplog, "PluginPathCliError")
    assert "connect-plugin-path sync-manifests --worker-config" in logged
    assert "exited with code" in logged and str(missing) in logged
    assert plugin_worker.manifests() == []


def test_the_wait_gives_up_on_a_worker_that_never_lists_the_plugin(
        plugin_worker: PluginWorker, standalone_worker: Callable[..., WorkerProcess],
        airflow_dag: Any, tmp_path: Path, capfd: pytest.CaptureFixture[str],
        caplog: pytest.LogCaptureFixture) -> None:
    # A second worker whose plugin.path is elsewhere: it never sees the synced manifest.
    (tmp_path / "empty").mkdir()
    elsewhere = standalone_worker({"plugin.path": tmp_path / "empty",
                                   "plugin.discovery": "service_load"})
    urls = [plugin_worker.worker.url, elsewhere.url]
    dag_run = run(airflow_dag, "kc_plugins_sync_short_wait",
                  plugin_path=[str(plugin_worker.plugin_path)], worker_urls=urls)
    assert task_states(dag_run) == {"plugins": "failed"}
    assert xcom(dag_run, "plugins") is None
    assert xcom(dag_run, "plugins", "plan")[-1]["class"] == PLUGIN
    # The manifest was written (the sync is not undone) and the first worker lists it.
    assert len(plugin_worker.manifests()) == 1
    wait_until(lambda: PLUGIN in plugin_worker.listed(), timeout=10,
               message="the first worker to list the plugin")
    logged = output(capfd, caplog, "PluginsNotListedError")
    assert f"{elsewhere.url} does not list {PLUGIN}" in logged


def test_every_member_of_a_cluster_lists_the_synced_plugin(
        distributed_cluster: DistributedClusterFactory, kafka_connect_conn: Callable[..., str],
        airflow_dag: Any, tmp_path: Path) -> None:
    plugin_path = tmp_path / "shared-plugins"
    (plugin_path / "acme-feed").mkdir(parents=True)
    (plugin_path / "acme-feed" / "acme_feed.py").write_text(PLUGIN_SOURCE, encoding="utf-8")
    cluster = distributed_cluster(2, {"plugin.path": plugin_path,
                                      "plugin.discovery": "service_load"})
    # The other member may receive the connection's credentials: the allow-list says so
    # (a member /admin/cluster names outside it would fail the task before the sync).
    kafka_connect_conn(host=cluster.workers[0].url,
                       extra={"allowed_worker_urls": [cluster.workers[1].url]})
    dag_run = run(airflow_dag, "kc_plugins_sync_deferred", plugin_path=[str(plugin_path)])
    assert task_states(dag_run) == {"plugins": "success"}
    # No worker_urls: both members, found through the first one's /admin/cluster.
    listed = xcom(dag_run, "plugins")["workers"]
    assert sorted(listed) == sorted(worker.url for worker in cluster.workers)
    assert all(list(classes) == [PLUGIN] for classes in listed.values())
    for worker in cluster.workers:
        response = worker.client.get("/connector-plugins")
        assert PLUGIN in {plugin["class"] for plugin in response.json()}
