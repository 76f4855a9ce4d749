"""Manifests: the built-ins' entry points, parsing, lazy class references."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.unit.worker.plugins import _builder as b
from worker.errors import PluginNotFoundError
from worker.plugins.builtins import CLASSPATH_SCAN_PACKAGES, builtin_plugins
from worker.plugins.desc import PluginClassRef, PluginDesc
from worker.plugins.locations import classpath_location
from worker.plugins.manifests import classpath_manifests, parse_entry_points, split_target
from worker.plugins.registry import PluginRegistry, builtin_registry
from worker.plugins.types import (
    ENTRY_POINT_GROUPS,
    PluginType,
    kafka_aliases,
    plugin_types_of,
)


def test_every_declared_builtin_loads_and_implements_its_type() -> None:
    """pyproject.toml's ``connect_plane.*`` entry points are the one list of built-ins: each
    imports, implements the type of its group, lives where module scanning looks, and the
    plugin types that Kafka ships built-ins of all have one."""
    plugins = builtin_plugins()
    assert len(plugins) == len({(p.name, p.type) for p in plugins}), "a built-in declared twice"
    for plugin in plugins:
        cls = plugin.load()
        assert plugin.type in plugin_types_of(cls), (plugin.name, plugin.target)
        assert cls.__module__.startswith(CLASSPATH_SCAN_PACKAGES), cls.__module__
    assert {p.type for p in plugins} == set(PluginType)


def test_the_classpath_manifests_name_the_builtins_with_kafkas_names() -> None:
    entries = classpath_manifests(classpath_location())
    names = {(e.name, e.type) for e in entries}
    assert ("org.apache.kafka.connect.transforms.InsertField$Value",
            PluginType.TRANSFORMATION) in names
    assert {(p.name, p.type) for p in builtin_plugins()} <= names
    assert {e.version for e in entries if e.module.startswith("worker.")} == {"0.1.0"}


def test_one_group_per_plugin_type() -> None:
    assert set(ENTRY_POINT_GROUPS) == set(PluginType)
    assert len(set(ENTRY_POINT_GROUPS.values())) == len(PluginType)
    assert all(g.startswith("connect_plane.") for g in ENTRY_POINT_GROUPS.values())


def test_parse_entry_points_keeps_groups_and_ignores_comments() -> None:
    text = "# generated\n[connect_plane.sink_connector]\na.B = a:B\n; note\n\n[console_scripts]" \
           "\ntool = a.cli:main\n"
    assert [(e.group, e.name, e.value) for e in parse_entry_points(text)] == [
        ("connect_plane.sink_connector", "a.B", "a:B"), ("console_scripts", "tool",
                                                         "a.cli:main")]
    assert split_target("pkg.mod:Outer.Inner [extra]") == ("pkg.mod", "Outer.Inner")
    assert split_target("pkg.mod.Class") is None and split_target("pkg:") is None


def test_kafka_aliases() -> None:
    assert kafka_aliases("org.apache.kafka.connect.json.JsonConverter", PluginType.CONVERTER) \
        == ["JsonConverter", "Json"]
    assert kafka_aliases("a.b.JsonConverter", PluginType.HEADER_CONVERTER) == ["JsonConverter"]
    assert kafka_aliases("x.InsertField$Value", PluginType.TRANSFORMATION) == ["Value"]


def test_a_lazy_reference_imports_once_and_remembers_failure(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    good, bad = b.unique("lazygood"), b.unique("lazybad")
    b.write_modules(tmp_path, {f"{good}.py": b.sink_module("S", version="7"),
                               f"{bad}.py": b.RAISES_AT_IMPORT})
    monkeypatch.syspath_prepend(str(tmp_path))
    ref = PluginClassRef(good, "S", version="1.0")
    desc = PluginDesc(f"{good}.S", PluginType.SINK, ref)
    assert (ref.loaded, desc.version, good in sys.modules) == (False, "1.0", False)
    assert desc.plugin_class.__name__ == "S" and desc.version == "7"
    wrong = PluginDesc(f"{good}.S", PluginType.SOURCE, ref)
    with pytest.raises(PluginNotFoundError, match="does not implement Connector"):
        _ = wrong.plugin_class
    broken = PluginClassRef(bad, "C")
    for _ in range(2):
        with pytest.raises(PluginNotFoundError, match="refuses to load"):
            broken.load()
    assert broken.not_found is False
    missing = PluginClassRef(f"{good}_nope", "C")
    with pytest.raises(PluginNotFoundError):
        missing.load()
    assert missing.not_found is True
    no_attr = PluginClassRef(good, "Nope")
    with pytest.raises(PluginNotFoundError, match="has no attribute Nope"):
        no_attr.load()
    assert no_attr.not_found is True


def test_registry_lists_lazy_plugins_and_drops_those_that_fail_to_load(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bad = b.unique("lazybroken")
    b.write_modules(tmp_path, {f"{bad}.py": b.RAISES_AT_IMPORT})
    monkeypatch.syspath_prepend(str(tmp_path))
    registry = PluginRegistry()
    registry.register_ref(PluginClassRef(bad, "BadSource", version="5"), PluginType.SOURCE,
                          "com.example.BadSource", location="/plugins/x")
    [listed] = registry.plugins({PluginType.SOURCE})
    assert (listed.class_name, listed.version, listed.location) == (
        "com.example.BadSource", "5", "/plugins/x")
    assert registry.resolve("BadSource") is listed  # resolving does not import
    with pytest.raises(PluginNotFoundError, match="refuses to load"):
        registry.new_instance("BadSource")
    assert registry.plugins({PluginType.SOURCE}) == []


def test_import_guard_refuses_plugin_location_modules() -> None:
    registry = builtin_registry()
    registry.import_guard = lambda module: "it is on the plugin path" \
        if module.startswith("json") else None
    with pytest.raises(PluginNotFoundError, match=r"\(it is on the plugin path\)$"):
        registry.resolve("json.JSONDecoder")
    # A registered class resolves by its module:Class path without any import.
    path = "worker.builtin.converters.json_converter:JsonConverter"
    assert registry.resolve(path).class_name == "org.apache.kafka.connect.json.JsonConverter"
