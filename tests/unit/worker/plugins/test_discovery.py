"""Discovery in one process: the four modes × plugins with and without manifests, broken
modules, modules two locations provide, lazy descriptors, manifests that appear later.

Plugin modules are generated under ``tmp_path`` with unique names; each discovery's importer
is removed from ``sys.meta_path`` and its modules from ``sys.modules`` afterwards.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.unit.worker.plugins import _builder as b
from worker.errors import ConfigError, PluginNotFoundError, WorkerError
from worker.plugins import discovery as discovery_module
from worker.plugins.discovery import DiscoveryMode, PluginDiscovery, discover
from worker.plugins.registry import PluginType

Discover = Callable[..., PluginDiscovery]


@dataclass
class Tree:
    """A plugin path: ``declared`` (a distribution with a manifest) and ``undeclared``
    (plain modules) locations, a source connector each."""

    root: Path
    declared_module: str
    undeclared_module: str

    @property
    def declared(self) -> str:
        return f"com.example.{self.declared_module}.DeclaredSource"

    @property
    def undeclared(self) -> str:
        return f"{self.undeclared_module}.UndeclaredSource"


@pytest.fixture
def tree(tmp_path: Path) -> Tree:
    root = tmp_path / "plugins"
    declared, undeclared = b.unique("declared"), b.unique("undeclared")
    b.distributions_location(root, "declared", "declared-dist",
                             {f"{declared}.py": b.source_module("DeclaredSource")},
                             {b.SOURCE: {f"com.example.{declared}.DeclaredSource":
                                         f"{declared}:DeclaredSource"}})
    b.modules_location(root, "undeclared",
                       {f"{undeclared}.py": b.source_module("UndeclaredSource")})
    return Tree(root, declared, undeclared)


@pytest.fixture
def run(tmp_path: Path) -> Iterator[Discover]:
    discoveries: list[PluginDiscovery] = []

    def make(plugin_path: list[str], mode: str) -> PluginDiscovery:
        found = PluginDiscovery(plugin_path, DiscoveryMode.parse(mode))
        discoveries.append(found)
        return found.run()

    yield make
    for found in discoveries:
        found.close()
    for name, module in list(sys.modules.items()):
        if str(getattr(module, "__file__", None) or "").startswith(str(tmp_path)):
            del sys.modules[name]


def names(found: PluginDiscovery) -> set[str]:
    return {d.class_name for d in found.registry.plugins()}


def test_only_scan_finds_both_and_warns_that_manifests_go_unchecked(
        tree: Tree, run: Discover, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        found = run([str(tree.root)], "only_scan")
    assert {tree.declared, tree.undeclared} <= names(found)
    assert "plugin.discovery=only_scan finds plugins by importing every module" in caplog.text
    assert "consider reconfiguring plugin.discovery=hybrid_warn" in caplog.text
    assert "missing ServiceLoader manifests" not in caplog.text


def test_hybrid_warn_names_each_plugin_without_a_manifest(
        tree: Tree, run: Discover, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        found = run([str(tree.root)], "HYBRID_WARN")  # case-insensitive, as in Kafka
    assert {tree.declared, tree.undeclared} <= names(found)
    assert [p.class_name for p in found.missing] == [tree.undeclared]
    warning = next(r.getMessage() for r in caplog.records if "manifests" in r.getMessage())
    assert warning.startswith("One or more plugins are missing ServiceLoader manifests may not "
                              "be usable with plugin.discovery=service_load: [\n")
    assert f"{tree.root / 'undeclared'}\t{tree.undeclared}\tsource\t1.2.3\n]" in warning
    assert tree.declared not in warning
    assert warning.endswith("To silence this warning, set plugin.discovery=only_scan in the "
                            "worker config.")


def test_hybrid_fail_refuses_and_lists_every_plugin_without_a_manifest(
        tree: Tree, run: Discover, tmp_path: Path) -> None:
    other = b.unique("other")
    b.modules_location(tree.root, "more", {f"{other}.py": b.converter_module("OtherConverter")})
    with pytest.raises(WorkerError) as info:
        run([str(tree.root)], "hybrid_fail")
    message = str(info.value)
    assert tree.undeclared in message and f"{other}.OtherConverter\tconverter" in message
    assert tree.declared not in message
    assert message.endswith("To silence this error, set plugin.discovery=hybrid_warn in the "
                            "worker config.")


def test_all_manifests_present_suggests_service_load(
        tree: Tree, run: Discover, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        found = run([str(tree.root / "declared")], "hybrid_fail")  # an archive-less entry
    assert found.missing == []
    assert "All plugins have ServiceLoader manifests, consider reconfiguring " \
           "plugin.discovery=service_load" in caplog.text


def test_service_load_reads_manifests_only_and_imports_nothing_until_used(
        tree: Tree, run: Discover) -> None:
    found = run([str(tree.root)], "service_load")
    assert tree.declared in names(found) and tree.undeclared not in names(found)
    assert tree.declared_module not in sys.modules
    assert tree.undeclared_module not in sys.modules
    desc = found.registry.resolve("DeclaredSource")  # Kafka's alias, still not imported
    assert (desc.version, desc.loaded, desc.location) == ("1.0.0", False,
                                                          str(tree.root / "declared"))
    connector = found.registry.new_instance("DeclaredSource", PluginType.SOURCE)
    assert type(connector).__module__ == tree.declared_module
    assert (desc.loaded, desc.version) == (True, "1.2.3")  # the class's own, once imported
    # The built-ins are lazy too, and resolve by their Java names.
    assert found.registry.resolve("org.apache.kafka.connect.json.JsonConverter").type \
        is PluginType.CONVERTER


def test_service_load_does_not_import_undeclared_plugin_modules_by_path(
        tree: Tree, run: Discover) -> None:
    found = run([str(tree.root)], "service_load")
    with pytest.raises(PluginNotFoundError) as info:
        found.registry.resolve(tree.undeclared, PluginType.SOURCE)
    assert "connect-plugin-path sync-manifests" in str(info.value)
    assert tree.undeclared_module not in sys.modules


def test_service_load_picks_up_a_manifest_that_appears_later(
        tree: Tree, run: Discover, monkeypatch: pytest.MonkeyPatch) -> None:
    found = run([str(tree.root)], "service_load")
    monkeypatch.setattr(discovery_module, "REFRESH_INTERVAL_S", 0.0)
    late = b.unique("late")
    b.distributions_location(tree.root, "late", "late-dist",
                             {f"{late}.py": b.sink_module("LateSink")},
                             {b.SINK: {f"{late}.LateSink": f"{late}:LateSink"}})
    shim = tree.root / "undeclared" / "connect_plugin_path_shim-1.0.0.dist-info"
    b.write_modules(shim, {"entry_points.txt": b.entry_points_text(
        {b.SOURCE: {tree.undeclared: f"{tree.undeclared_module}:UndeclaredSource"}})})
    assert found.registry.resolve("LateSink").class_name == f"{late}.LateSink"
    assert {tree.undeclared, f"{late}.LateSink"} <= {
        d.class_name for d in found.registry.plugins({PluginType.SOURCE, PluginType.SINK})}
    assert found.registry.new_instance(tree.undeclared, PluginType.SOURCE) is not None


def test_refresh_is_rate_limited(tree: Tree, run: Discover) -> None:
    found = run([str(tree.root)], "service_load")
    assert found.refresh() is False  # just ran: nothing is re-read within the interval


@pytest.mark.parametrize("mode", ["hybrid_warn", "service_load"])
def test_broken_modules_are_reported_never_fatal(
        tmp_path: Path, run: Discover, mode: str, caplog: pytest.LogCaptureFixture) -> None:
    root = tmp_path / "plugins"
    good, syntax, missing, raising = (b.unique(n) for n in ("good", "syntax", "dep", "raise"))
    entries = {f"{m}.C": f"{m}:C" for m in (syntax, missing, raising)}
    b.distributions_location(root, "broken", "broken-dist", {
        f"{good}.py": b.source_module("Good"), f"{syntax}.py": b.BROKEN_SYNTAX,
        f"{missing}.py": b.needs_missing_dependency("C"), f"{raising}.py": b.RAISES_AT_IMPORT,
    }, {b.SOURCE: {f"{good}.Good": f"{good}:Good", **entries}})
    with caplog.at_level(logging.ERROR):
        found = run([str(root)], mode)
    assert f"{good}.Good" in names(found)
    if mode == "hybrid_warn":
        assert not set(entries) & names(found)
        for reason in ("SyntaxError", "cp_no_such_dependency_xyz",
                       "this plugin refuses to load"):
            assert reason in caplog.text
        assert f"Failed to discover SourceConnector in {root / 'broken'}" in caplog.text
    else:  # lazy: known broken only when used, then no longer listed
        with pytest.raises(PluginNotFoundError, match="this plugin refuses to load"):
            found.registry.new_instance(f"{raising}.C")
        with pytest.raises(PluginNotFoundError, match="cp_no_such_dependency_xyz"):
            found.registry.new_instance(f"{missing}.C")
        assert f"{raising}.C" not in names(found) and f"{syntax}.C" in names(found)


def test_two_locations_with_one_top_level_module(tmp_path: Path, run: Discover) -> None:
    root, shared = tmp_path / "plugins", b.unique("shared")
    b.modules_location(root, "first", {f"{shared}.py": b.source_module("FromFirst")})
    b.modules_location(root, "second", {f"{shared}.py": b.source_module("FromSecond")})
    found = run([str(root)], "only_scan")
    first, second = found.locations[:2]
    assert f"{shared}.FromFirst" in names(found) and f"{shared}.FromSecond" not in names(found)
    for location in (first, second):
        assert any(str(root / "first") in e and str(root / "second") in e
                   for e in location.errors)


def test_a_location_cannot_replace_a_module_of_the_worker(tmp_path: Path, run: Discover
                                                           ) -> None:
    root = tmp_path / "plugins"
    b.modules_location(root, "sneaky", {"json.py": b.source_module("Sneaky")})
    found = run([str(root)], "only_scan")
    assert "json.Sneaky" not in names(found)
    assert "also provided by the worker's environment" in found.locations[0].errors[0]


def test_wheel_and_zip_locations_import_through_zipimport(tmp_path: Path, run: Discover
                                                          ) -> None:
    root = tmp_path / "plugins"
    wheel_pkg, zipped = b.unique("wheelpkg"), b.unique("zipped")
    b.wheel_location(root, "wheel-dist", {f"{wheel_pkg}/__init__.py": "",
                                          f"{wheel_pkg}/conv.py": b.converter_module("WConv")},
                     {b.CONVERTER: {f"{wheel_pkg}.conv.WConv": f"{wheel_pkg}.conv:WConv"}})
    b.zip_location(root, "plain", {f"{zipped}.py": b.sink_module("ZSink")})
    found = run([str(root)], "hybrid_warn")
    assert {f"{wheel_pkg}.conv.WConv", f"{zipped}.ZSink"} <= names(found)
    assert ".whl" in str(sys.modules[f"{wheel_pkg}.conv"].__file__)
    assert [p.class_name for p in found.missing] == [f"{zipped}.ZSink"]


def test_a_manifest_naming_the_wrong_type_is_reported(tmp_path: Path, run: Discover) -> None:
    root, module = tmp_path / "plugins", b.unique("wrongtype")
    b.distributions_location(root, "loc", "wrong", {f"{module}.py": b.sink_module("S")},
                             {b.CONVERTER: {f"{module}.S": f"{module}:S"}})
    found = run([str(root)], "hybrid_warn")
    assert [f.reason for f in found.declared.failures] == [f"{module}:S does not implement "
                                                           "Converter"]
    assert f"{module}.S" in names(found)  # as the sink scanning finds


def test_mode_names_are_checked() -> None:
    assert DiscoveryMode.parse(" Service_Load ") is DiscoveryMode.SERVICE_LOAD
    with pytest.raises(ConfigError, match="plugin.discovery"):
        discover([], "fast")
