"""Which modules a class name may import (issue #41): registered plugins resolve without an
import; other import paths are imported only inside ``import_packages``; discovery sets
those to the environment's plugin packages plus ``plugin.import.packages``.

Modules are generated under ``tmp_path`` with unique names, so ``sys.modules`` tells exactly
which of them were imported.
"""

from __future__ import annotations

import importlib
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.unit.worker.plugins import _builder as b
from worker.compose import discover_plugins
from worker.config.worker_config import StandaloneConfig
from worker.errors import ConfigError, PluginNotFoundError
from worker.plugins.desc import PluginClassRef
from worker.plugins.discovery import DiscoveryMode, PluginDiscovery
from worker.plugins.registry import PluginRegistry, PluginType, builtin_registry

REFUSED = ("import paths are resolved only in the packages of installed plugins and those "
           "listed in plugin.import.packages")

SINK = """
from worker.api import SinkConnector

class Sink(SinkConnector):
    def start(self, props): pass
    def task_class(self): return None
    def task_configs(self, max_tasks): return []
    def stop(self): pass
    def version(self): return "1.0"

    class Inner(SinkConnector):
        def start(self, props): pass
        def task_class(self): return None
        def task_configs(self, max_tasks): return []
        def stop(self): pass
"""


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A fresh importable package ``<name>`` with ``plugins``, ``other`` and ``sub.deep``."""
    name = b.unique("cp_policy")
    b.write_modules(tmp_path, {
        f"{name}/__init__.py": "",
        f"{name}/plugins.py": textwrap.dedent(SINK),
        f"{name}/other.py": "VALUE = 1\n",
        f"{name}/sub/__init__.py": "",
        f"{name}/sub/deep.py": textwrap.dedent(SINK),
    })
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    for module in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
        del sys.modules[module]


def imported(package: str) -> list[str]:
    """The modules of ``package`` imported so far."""
    return sorted(m for m in sys.modules if m == package or m.startswith(package + "."))


def not_found(registry: PluginRegistry, name: str,
              expected: PluginType | set[PluginType] | None = None) -> str:
    with pytest.raises(PluginNotFoundError) as info:
        registry.resolve(name, expected)
    return str(info.value)


# --- the registry's rule --------------------------------------------------------------------

def test_a_bare_registry_imports_nothing(package: str) -> None:
    registry = PluginRegistry()
    for name in (f"{package}.plugins.Sink", f"{package}.plugins:Sink", "this.s",
                 f"{package}.sub.deep.Sink.Inner"):
        message = not_found(registry, name, PluginType.SINK)
        assert message.startswith("Failed to find any class that implements Connector and "
                                  f"which name matches {name}, available connectors are: ")
        assert message.endswith(f"({REFUSED})")
    assert imported(package) == []


def test_only_modules_inside_the_listed_packages_are_imported(package: str) -> None:
    registry = PluginRegistry(import_packages=[f"{package}.sub"])
    desc = registry.resolve(f"{package}.sub.deep.Sink", PluginType.SINK)
    assert (desc.class_name, desc.type) == (f"{package}.sub.deep.Sink", PluginType.SINK)
    assert registry.resolve(f"{package}.sub.deep.Sink.Inner").class_name == \
        f"{package}.sub.deep.Sink.Inner"
    assert imported(package) == [package, f"{package}.sub", f"{package}.sub.deep"]
    # The package itself and its siblings are out of reach; so is a name that only starts
    # with the same letters.
    for name in (f"{package}.plugins.Sink", f"{package}.other.VALUE", f"{package}.Sink",
                 f"{package}.subway.Sink"):
        assert not_found(registry, name).endswith(f"({REFUSED})")
    assert imported(package) == [package, f"{package}.sub", f"{package}.sub.deep"]


def test_a_name_that_is_no_import_path_gets_no_hint(package: str) -> None:
    registry = PluginRegistry()
    for name in ("NoSuchConnector", "bad name.X", "a..b", f"{package}:", ":Sink",
                 "org.apache.kafka.connect.transforms.InsertField$Value"):
        assert "plugin.import.packages" not in not_found(registry, name)
    assert imported(package) == []


def test_registered_plugins_resolve_by_their_path_without_an_import(package: str) -> None:
    registry = PluginRegistry()
    registry.register_ref(PluginClassRef(f"{package}.plugins", "Sink"), PluginType.SINK,
                          "com.example.Sink")
    for name in ("com.example.Sink", "Sink", f"{package}.plugins.Sink",
                 f"{package}.plugins:Sink"):
        assert registry.resolve(name, PluginType.SINK).class_name == "com.example.Sink"
    assert imported(package) == []
    # Using it imports its module: the lazy import of a registered class.
    assert type(registry.new_instance("Sink")).__module__ == f"{package}.plugins"
    assert imported(package) == [package, f"{package}.plugins"]


def test_builtins_resolve_by_java_name_alias_and_path_in_a_strict_registry() -> None:
    registry = builtin_registry()
    registry.import_packages = frozenset()
    for name in ("org.apache.kafka.connect.file.FileStreamSourceConnector",
                 "FileStreamSource",
                 "worker.builtin.connectors.file_stream.FileStreamSourceConnector",
                 "worker.builtin.connectors.file_stream:FileStreamSourceConnector"):
        assert registry.resolve(name, PluginType.SOURCE).class_name == \
            "org.apache.kafka.connect.file.FileStreamSourceConnector"


def test_the_plugin_location_guard_still_comes_first(package: str) -> None:
    registry = PluginRegistry(import_packages=[package])
    registry.import_guard = lambda module: "it is on the plugin path" \
        if module.startswith(package) else None
    assert not_found(registry, f"{package}.plugins.Sink").endswith(
        "(it is on the plugin path)")
    assert imported(package) == []


def test_a_name_of_many_parts_costs_a_bounded_number_of_imports(
        package: str, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real = importlib.import_module

    def counting(name: str, package_: str | None = None) -> Any:
        calls.append(name)
        return real(name, package_)

    monkeypatch.setattr(importlib, "import_module", counting)
    registry = PluginRegistry(import_packages=[package])
    long_name = f"{package}.sub." + "x." * 5000 + "Sink"
    with pytest.raises(PluginNotFoundError):
        registry.resolve(long_name)
    # One level at a time, up to the first that does not exist (no recursion either).
    assert calls == [package, f"{package}.sub", f"{package}.sub.x"]
    calls.clear()
    with pytest.raises(PluginNotFoundError):
        PluginRegistry().resolve("this." + "x." * 5000 + "s")
    assert calls == []


# --- discovery and the worker setting -------------------------------------------------------

@pytest.fixture
def discoveries() -> Iterator[list[PluginDiscovery]]:
    found: list[PluginDiscovery] = []
    yield found
    for discovery in found:
        discovery.close()


@pytest.mark.parametrize("mode", list(DiscoveryMode))
def test_discovery_allows_the_environments_plugin_packages_and_the_setting(
        package: str, mode: DiscoveryMode, discoveries: list[PluginDiscovery]) -> None:
    discovery = PluginDiscovery([], mode, import_packages=[f"{package}.sub"])
    discoveries.append(discovery)
    registry = discovery.run().registry
    # connect-plane's manifests (and the built-ins scanning finds) make worker a plugin
    # package; the setting adds the listed package.
    assert registry.import_packages == frozenset({"worker", f"{package}.sub"})
    assert registry.resolve(f"{package}.sub.deep.Sink").type is PluginType.SINK
    assert not_found(registry, f"{package}.plugins.Sink").endswith(f"({REFUSED})")
    assert not_found(registry, "this.s").endswith(f"({REFUSED})")
    assert imported(package) == [package, f"{package}.sub", f"{package}.sub.deep"]


def test_the_worker_setting_reaches_discovery(package: str) -> None:
    props = {"plugin.discovery": "service_load", "plugin.import.packages": f" {package} "}
    registry = discover_plugins(props)
    guard = registry.import_guard
    assert guard is not None
    importer = guard.__self__  # type: ignore[attr-defined]  # the discovery's PluginImporter
    try:
        assert registry.resolve(f"{package}.plugins:Sink").type is PluginType.SINK
    finally:
        importer.uninstall()
    assert imported(package) == [package, f"{package}.plugins"]


def test_the_setting_defaults_to_empty_and_takes_package_names_only() -> None:
    assert StandaloneConfig({}).get("plugin.import.packages") == []
    assert StandaloneConfig({"plugin.import.packages": "a, b.c"}).get(
        "plugin.import.packages") == ["a", "b.c"]
    for bad in ("a/b", "a,,b", "1a", "a.", "a b"):
        with pytest.raises(ConfigError, match="plugin.import.packages"):
            StandaloneConfig({"plugin.import.packages": bad})
