"""Plugin discovery (KIP-898) on real workers: the matrix of Kafka's plugin-discovery system
test — the four ``plugin.discovery`` modes × plugins with and without manifests, before and
after ``connect-plugin-path sync-manifests`` — plus connectors from plugin locations actually
running, a manifest that appears after start, broken modules, two locations with one module,
and every kind of location.

Workers are ``connect-standalone`` subprocesses (the ``standalone_worker`` fixture); the tool
runs as its console script; plugins are generated under ``tmp_path``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.integration._rest_helpers import read_values
from tests.support import (
    WorkerProcess,
    create_topic,
    unique_name,
    wait_for_connector_state,
    wait_until,
)
from tests.unit.worker.plugins import _builder as b

pytestmark = pytest.mark.integration

TOOL = str(Path(sys.executable).parent / "connect-plugin-path")
MODES = ["only_scan", "hybrid_warn", "hybrid_fail", "service_load"]
DECLARED = "com.example.cpi.DeclaredSource"
UNDECLARED = "cpi_undeclared.UndeclaredSource"
STRING = "org.apache.kafka.connect.storage.StringConverter"


def build_tree(root: Path) -> Path:
    """A plugin path: a distribution with a manifest, and plain modules without one."""
    b.distributions_location(root, "declared", "cpi-declared",
                             {"cpi_declared.py": b.source_module("DeclaredSource")},
                             {b.SOURCE: {DECLARED: "cpi_declared:DeclaredSource"}})
    b.modules_location(root, "undeclared",
                       {"cpi_undeclared.py": b.source_module("UndeclaredSource")})
    return root


def sync(*args: str, secret: str | None = None) -> dict[str, Any]:
    done = subprocess.run([TOOL, "sync-manifests", *args, "--json"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    if secret is not None:
        assert secret not in done.stdout + done.stderr
    document: dict[str, Any] = json.loads(done.stdout)
    return document


def listed(worker: WorkerProcess, connectors_only: bool = False) -> dict[str, dict[str, Any]]:
    response = worker.client.get("/connector-plugins",
                                 params={"connectorsOnly": str(connectors_only).lower()})
    assert response.status_code == 200, response.text
    return {p["class"]: p for p in response.json()}


def put_connector(worker: WorkerProcess, name: str, cls: str, topic: str) -> httpx.Response:
    return worker.client.put(f"/connectors/{name}/config", json={
        "connector.class": cls, "tasks.max": "1", "topic": topic,
        "value.converter": STRING, "key.converter": STRING})


def wait_exit(worker: WorkerProcess, timeout: float = 60.0) -> int:
    wait_until(lambda: not worker.is_running, timeout, message="worker to exit")
    assert worker.returncode is not None
    return worker.returncode


@pytest.mark.parametrize("mode", MODES)
def test_modes_with_and_without_manifests(standalone_worker: Any, tmp_path: Path,
                                          mode: str) -> None:
    root = build_tree(tmp_path / "plugins")
    overrides = {"plugin.path": str(root), "plugin.discovery": mode}
    if mode == "hybrid_fail":
        worker = standalone_worker(overrides, start=False)
        worker.launch()
        assert wait_exit(worker) == 1
        log = worker.log_tail(200)
        assert "One or more plugins are missing ServiceLoader manifests" in log
        assert f"{root / 'undeclared'}\t{UNDECLARED}\tsource\t1.2.3" in log
        assert "To silence this error, set plugin.discovery=hybrid_warn" in log
    else:
        worker = standalone_worker(overrides)
        plugins = listed(worker, connectors_only=True)
        assert DECLARED in plugins
        assert (UNDECLARED in plugins) == (mode != "service_load")
        log = worker.log_tail(400)
        if mode == "hybrid_warn":
            assert f"{UNDECLARED}\tsource\t1.2.3\n]" in log
            assert "To silence this warning, set plugin.discovery=only_scan" in log
        if mode == "only_scan":
            assert "consider reconfiguring plugin.discovery=hybrid_warn" in log
        if mode == "service_load":  # hidden, and not usable by its import path either
            response = put_connector(worker, "hidden", UNDECLARED, "unused")
            assert response.status_code == 400, response.text
            assert "connect-plugin-path sync-manifests" in response.json()["message"]
        worker.stop()

    document = sync("--plugin-path", str(root))
    assert [(c["action"], c["class"]) for c in document["changes"]] == [
        ("create-shim", None), ("add", UNDECLARED)]

    after = standalone_worker(overrides)
    plugins = listed(after, connectors_only=True)
    assert {DECLARED, UNDECLARED} <= set(plugins)
    if mode.startswith("hybrid"):
        assert "All plugins have ServiceLoader manifests, consider reconfiguring " \
               "plugin.discovery=service_load" in after.log_tail(400)


def test_a_connector_from_a_wheel_runs_and_reports_its_version(
        standalone_worker: Any, tmp_path: Path, kafka_bootstrap: str, kafka_admin: Any) -> None:
    root = tmp_path / "plugins"
    b.wheel_location(root, "cpi-wheel", {"cpi_wheel/__init__.py": "",
                                         "cpi_wheel/source.py": b.source_module("WheelSource")},
                     {b.SOURCE: {"com.example.WheelSource": "cpi_wheel.source:WheelSource"}},
                     version="0.9.0")
    worker = standalone_worker({"plugin.path": str(root), "plugin.discovery": "service_load"})
    # Not imported yet: the version is the distribution's.
    assert listed(worker)["com.example.WheelSource"]["version"] == "0.9.0"
    topic = create_topic(kafka_admin, unique_name("wheel"))
    assert put_connector(worker, "wheel", "WheelSource", topic).status_code == 201
    wait_for_connector_state(worker.client, "wheel", "RUNNING", "RUNNING")
    assert read_values(kafka_bootstrap, topic, 5) == [f"WheelSource-{n}" for n in range(1, 6)]
    # Imported now: the class's own version.
    assert listed(worker)["com.example.WheelSource"]["version"] == "1.2.3"


def test_a_manifest_that_appears_after_start_is_usable_without_restart(
        standalone_worker: Any, tmp_path: Path, kafka_bootstrap: str, kafka_admin: Any) -> None:
    root = build_tree(tmp_path / "plugins")
    secret = "n0t-for-logs-Pa55"  # a key the worker ignores; its value must stay out of logs
    worker = standalone_worker({"plugin.path": str(root), "plugin.discovery": "service_load",
                                "acme.api.password": secret})
    pid = worker.pid
    topic = create_topic(kafka_admin, unique_name("late"))
    assert put_connector(worker, "late", UNDECLARED, topic).status_code == 400
    assert UNDECLARED not in listed(worker)
    sync("--worker-config", str(worker.props_file), secret=secret)
    # Lookups that miss re-read the manifests (at most once a second).
    wait_until(lambda: put_connector(worker, "late", "UndeclaredSource", topic)
               .status_code == 201, timeout=15, message="the connector to be accepted")
    wait_for_connector_state(worker.client, "late", "RUNNING", "RUNNING")
    assert read_values(kafka_bootstrap, topic, 5)[:5] == [
        f"UndeclaredSource-{n}" for n in range(1, 6)]
    assert UNDECLARED in listed(worker) and worker.pid == pid
    assert secret not in worker.log_path.read_text()


@pytest.mark.parametrize("mode", ["hybrid_warn", "service_load"])
def test_broken_modules_are_reported_and_the_worker_runs(standalone_worker: Any,
                                                         tmp_path: Path, mode: str) -> None:
    root = tmp_path / "plugins"
    b.distributions_location(root, "broken", "cpi-broken", {
        "cpi_good.py": b.source_module("GoodSource"), "cpi_syntax.py": b.BROKEN_SYNTAX,
        "cpi_dep.py": b.needs_missing_dependency("DepSource"),
        "cpi_raise.py": b.RAISES_AT_IMPORT,
    }, {b.SOURCE: {"cpi_good.GoodSource": "cpi_good:GoodSource",
                   "cpi_syntax.Broken": "cpi_syntax:Broken",
                   "cpi_dep.DepSource": "cpi_dep:DepSource",
                   "cpi_raise.Raising": "cpi_raise:Raising"}})
    worker = standalone_worker({"plugin.path": str(root), "plugin.discovery": mode})
    plugins = listed(worker, connectors_only=True)
    assert "cpi_good.GoodSource" in plugins
    if mode == "hybrid_warn":
        assert not {"cpi_syntax.Broken", "cpi_dep.DepSource", "cpi_raise.Raising"} & set(plugins)
        log = worker.log_tail(400)
        for reason in ("SyntaxError", "No module named 'cp_no_such_dependency_xyz'",
                       "this plugin refuses to load"):
            assert reason in log
    else:
        response = put_connector(worker, "raising", "cpi_raise.Raising", "unused")
        assert response.status_code == 400
        assert "this plugin refuses to load" in response.text
        assert "cpi_raise.Raising" not in listed(worker, connectors_only=True)
    assert worker.client.get("/health").status_code == 200


def test_two_locations_with_one_top_level_module(standalone_worker: Any, tmp_path: Path
                                                  ) -> None:
    root = tmp_path / "plugins"
    b.modules_location(root, "a-first", {"cpi_shared.py": b.source_module("FirstSource")})
    b.modules_location(root, "b-second", {"cpi_shared.py": b.source_module("SecondSource")})
    worker = standalone_worker({"plugin.path": str(root), "plugin.discovery": "only_scan"})
    plugins = listed(worker, connectors_only=True)
    assert "cpi_shared.FirstSource" in plugins and "cpi_shared.SecondSource" not in plugins
    assert f"top-level module cpi_shared is provided by both {root / 'a-first'} and " \
           f"{root / 'b-second'}" in worker.log_tail(400)


def test_every_kind_of_location_after_sync(standalone_worker: Any, tmp_path: Path) -> None:
    root = tmp_path / "plugins"
    b.wheel_location(root, "cpi-kind-wheel", {"cpi_kw/__init__.py": b.sink_module("WheelSink")},
                     None)
    b.zip_location(root, "cpi-kind-zip", {"cpi_kz.py": b.converter_module("ZipConverter")})
    b.distributions_location(root, "dists", "cpi-kind-dist",
                             {"cpi_kd.py": b.source_module("DistSource")}, None)
    b.modules_location(root, "modules", {"cpi_km.py": b.sink_module("ModuleSink")})
    sync("--plugin-path", str(root))
    worker = standalone_worker({"plugin.path": str(root), "plugin.discovery": "service_load"})
    plugins = listed(worker)
    # Nothing imported yet: a version comes from the distribution that declares the plugin
    # (the directory's distribution got the entry); a shim's entries have none, and Connect
    # leaves an undefined version out.
    assert {name: plugins[name].get("version") for name in (
        "cpi_kw.WheelSink", "cpi_kz.ZipConverter", "cpi_kd.DistSource", "cpi_km.ModuleSink")
    } == {"cpi_kw.WheelSink": None, "cpi_kz.ZipConverter": None,
          "cpi_kd.DistSource": "1.0.0", "cpi_km.ModuleSink": None}
    assert {plugins[name]["type"] for name in ("cpi_kw.WheelSink", "cpi_km.ModuleSink")} == {
        "sink"}


def test_a_config_provider_from_the_plugin_path_serves_the_worker_properties(
        standalone_worker: Any, tmp_path: Path) -> None:
    """Discovery runs before the worker config is built (as in Kafka), so a config provider
    installed on ``plugin.path`` can resolve the worker's own properties."""
    calls = tmp_path / "provider-calls.txt"
    module = b.unique("cpi_provider")
    source = '''\
from worker.api import ConfigData, ConfigProvider


class MarkerProvider(ConfigProvider):
    def configure(self, params):
        self.calls = params["calls"]

    def get(self, path, keys=None):
        with open(self.calls, "a", encoding="utf-8") as out:
            out.write(",".join(sorted(keys or ())) + "\\n")
        return ConfigData({"timeout": "4321"})

    def close(self):
        pass
'''
    root = tmp_path / "plugins"
    b.distributions_location(root, "provider", "cpi-provider", {f"{module}.py": source},
                             {"connect_plane.config_provider": {
                                 f"{module}.MarkerProvider": f"{module}:MarkerProvider"}})
    worker = standalone_worker({
        "plugin.path": str(root), "plugin.discovery": "service_load",
        "config.providers": "marker",
        "config.providers.marker.class": f"{module}.MarkerProvider",
        "config.providers.marker.param.calls": str(calls),
        "task.shutdown.graceful.timeout.ms": "${marker:unused:timeout}"})
    assert worker.client.get("/").status_code == 200
    assert calls.read_text(encoding="utf-8").splitlines() == ["timeout"]
