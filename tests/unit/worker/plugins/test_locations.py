"""plugin.path semantics: which paths are plugin locations, of which kind, providing what."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from tests.unit.worker.plugins import _builder as b
from worker.plugins.locations import (
    ARCHIVE_SHIM_SUFFIX,
    SHIM_DIR_NAME,
    LocationKind,
    classpath_location,
    plugin_locations,
)


@pytest.fixture
def plugin_dir(tmp_path: Path) -> Path:
    root = tmp_path / "plugins"
    b.modules_location(root, "b-plain", {"plain_a.py": "", "pkg_a/__init__.py": "",
                                         "ns_a/mod.py": "", "not-an-identifier.py": ""})
    b.distributions_location(root, "c-dists", "acme", {"acme/__init__.py": ""}, None)
    b.wheel_location(root, "wheely", {"wheely/__init__.py": "", "wheely_mod.py": ""}, None)
    b.zip_location(root, "a-zipped", {"zmod.py": "", "zpkg/__init__.py": ""})
    (root / "README.txt").write_text("not a location")
    (root / ".hidden").mkdir()
    (root / "__pycache__").mkdir()
    return root


def test_a_directory_entry_holds_locations_sorted_by_name(plugin_dir: Path) -> None:
    locations = plugin_locations([str(plugin_dir)])
    assert [(loc.path.name if loc.path else None, loc.kind) for loc in locations] == [
        ("a-zipped.zip", LocationKind.ZIP), ("b-plain", LocationKind.MODULES),
        ("c-dists", LocationKind.DISTRIBUTIONS),
        ("wheely-1.0.0-py3-none-any.whl", LocationKind.WHEEL)]
    assert all(not loc.errors for loc in locations)


def test_top_level_names_of_each_kind(plugin_dir: Path) -> None:
    names = {loc.path.name: loc.top_level_names() for loc in plugin_locations([str(plugin_dir)])
             if loc.path is not None}
    assert names == {"a-zipped.zip": ["zmod", "zpkg"], "b-plain": ["ns_a", "pkg_a", "plain_a"],
                     "c-dists": ["acme"], "wheely-1.0.0-py3-none-any.whl": ["wheely",
                                                                             "wheely_mod"]}


def test_an_archive_entry_is_a_location_and_entries_are_trimmed(plugin_dir: Path) -> None:
    wheel = next(plugin_dir.glob("*.whl"))
    locations = plugin_locations([f"  {wheel} ", "", f" {plugin_dir / 'a-zipped.zip'}"])
    assert [loc.path for loc in locations] == [wheel, plugin_dir / "a-zipped.zip"]


def test_a_missing_entry_is_logged_and_skipped_or_raises_with_fail_fast(
        plugin_dir: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    missing = tmp_path / "nowhere"
    with caplog.at_level(logging.ERROR):
        locations = plugin_locations([str(missing), str(plugin_dir)])
    assert len(locations) == 4
    assert f"Could not get listing for plugin path: {missing}. Ignoring." in caplog.text
    with pytest.raises(FileNotFoundError, match="nowhere"):
        plugin_locations([str(missing)], fail_fast=True)


def test_shims_belong_to_their_location(plugin_dir: Path) -> None:
    wheel = next(plugin_dir.glob("*.whl"))
    (plugin_dir / (wheel.name + ARCHIVE_SHIM_SUFFIX)).mkdir()
    (plugin_dir / "b-plain" / SHIM_DIR_NAME).mkdir()
    locations = {loc.path: loc for loc in plugin_locations([str(plugin_dir)])}
    assert len(locations) == 4  # the archive's shim is not a location of its own
    assert locations[wheel].shim_dir == plugin_dir / (wheel.name + ARCHIVE_SHIM_SUFFIX)
    plain = locations[plugin_dir / "b-plain"]
    assert plain.kind is LocationKind.MODULES  # a shim does not make it "distributions"
    assert plain.distribution_paths() == [plugin_dir / "b-plain" / SHIM_DIR_NAME]
    assert "connect_plugin_path_shim" not in plain.top_level_names()


def test_misplaced_packages_and_metadata_are_reported_and_inert(tmp_path: Path) -> None:
    root = tmp_path / "plugins"
    b.write_modules(root, {"mypkg/__init__.py": "raise SystemExit('never imported')\n",
                           "mypkg/connector.py": ""})
    (root / "mypkg-1.0.dist-info").mkdir()
    locations = plugin_locations([str(root)])
    assert [loc.misplaced for loc in locations] == [True, True]
    assert "is itself a Python package" in locations[0].errors[0]
    assert "pip install --target" in locations[1].errors[0]
    assert [loc.top_level_names() for loc in locations] == [[], []]


def test_the_classpath_location(tmp_path: Path) -> None:
    classpath = classpath_location()
    assert (classpath.name, classpath.kind, classpath.top_level_names()) == (
        "classpath", LocationKind.CLASSPATH, [])
    with pytest.raises(ValueError, match="not written to"):
        _ = classpath.shim_dir
