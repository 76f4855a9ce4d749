"""What the ``connect-plugin-path`` tool sees in each plugin location: one row per plugin
class and type, whether scanning finds it, whether a manifest declares it, whether it loads.

Both scanners run on every location (Kafka's tool does the same), loading what manifests
declare. A manifest entry that does not load gives a row with the reason; ``not_found``
tells a class that does not exist from one that exists but fails to import.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from worker.plugins.desc import PluginClassRef
from worker.plugins.importer import PluginImporter
from worker.plugins.locations import PluginLocation
from worker.plugins.manifests import ManifestEntry
from worker.plugins.scanner import EntryPointScanner, ModuleScanner
from worker.plugins.types import UNDEFINED_VERSION, PluginType, kafka_aliases


@dataclass
class PluginRow:
    """One plugin (class and type) in one location."""

    class_name: str
    type: PluginType
    location: PluginLocation
    module: str
    attr: str
    version: str = UNDEFINED_VERSION
    scanned: bool = False
    manifest: bool = False
    loadable: bool = True
    error: str | None = None
    not_found: bool = False
    entries: list[ManifestEntry] = field(default_factory=list)
    """The manifest entries that declare it."""

    @property
    def aliases(self) -> list[str]:
        """Kafka's simple and pruned names (none for a plugin that does not load)."""
        return kafka_aliases(self.class_name, self.type) if self.loadable else []

    @property
    def value(self) -> str:
        """The entry-point value that declares it: ``module:Class``."""
        return f"{self.module}:{self.attr}"

    def to_json(self) -> dict[str, Any]:
        return {"class": self.class_name, "aliases": self.aliases, "version": self.version,
                "type": self.type.value, "scanned": self.scanned, "manifest": self.manifest,
                "loadable": self.loadable, "error": self.error,
                "location": self.location.name}


@dataclass
class LocationInventory:
    location: PluginLocation
    rows: list[PluginRow]

    def to_json(self) -> dict[str, Any]:
        return {"path": self.location.name, "kind": self.location.kind.value,
                "errors": list(self.location.errors)}


def take_inventory(locations: Sequence[PluginLocation]) -> list[LocationInventory]:
    """The rows of every location. The locations are made importable first, all of them,
    so that modules two locations provide are reported before anything is imported."""
    importer = PluginImporter().install()
    try:
        for location in locations:
            if location.path is not None:
                importer.add(location)
        return [LocationInventory(loc, _rows(loc, importer)) for loc in locations]
    finally:
        importer.uninstall()


def _rows(location: PluginLocation, importer: PluginImporter) -> list[PluginRow]:
    declared = EntryPointScanner(importer, load=True).scan(location)
    scanned = ModuleScanner(importer).scan(location)
    rows: dict[tuple[int, PluginType], PluginRow] = {}
    for plugin in declared.plugins:
        key = (id(plugin.ref.load()), plugin.type)
        row = rows.get(key)
        if row is None:
            row = rows[key] = _row(plugin.class_name, plugin.type, location, plugin.ref)
        row.manifest = True
        if plugin.entry is not None:
            row.entries.append(plugin.entry)
    for plugin in scanned.plugins:
        key = (id(plugin.ref.load()), plugin.type)
        row = rows.get(key)
        if row is None:
            row = rows[key] = _row(plugin.class_name, plugin.type, location, plugin.ref)
        row.scanned = True
    failed = []
    for failure in declared.failures:
        entry = failure.entry
        if entry is None:
            continue
        failed.append(PluginRow(entry.name, entry.type, location, entry.module, entry.attr,
                                entry.version or UNDEFINED_VERSION, manifest=True,
                                loadable=False, error=failure.reason,
                                not_found=failure.not_found, entries=[entry]))
    return sorted([*rows.values(), *failed], key=lambda r: (r.class_name, r.type.value))


def _row(class_name: str, type_: PluginType, location: PluginLocation, ref: PluginClassRef
         ) -> PluginRow:
    return PluginRow(class_name, type_, location, ref.module, ref.attr, ref.version())
