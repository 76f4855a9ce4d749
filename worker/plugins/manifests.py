"""Manifests: the entry points that declare plugins (KIP-898's ServiceLoader manifests).

A distribution declares its plugins in ``*.dist-info/entry_points.txt``, one group per plugin
type (``connect_plane.source_connector``, ... — ``worker.plugins.types.ENTRY_POINT_GROUPS``);
the entry's name is the plugin's canonical class name and its value ``module:Class``::

    [connect_plane.sink_connector]
    com.example.MySinkConnector = my_connector.sink:MySinkConnector

Reading a manifest imports nothing. The file format is the one ``importlib.metadata`` reads
(an INI file); :func:`parse_entry_points` keeps the lines so the ``connect-plugin-path`` tool
can edit a file without disturbing what it does not own.
"""

from __future__ import annotations

import logging
import sys
import zipfile
from dataclasses import dataclass
from importlib.metadata import PathDistribution
from pathlib import Path

from worker.plugins.locations import PluginLocation, is_shim
from worker.plugins.types import TYPES_BY_GROUP, PluginType

log = logging.getLogger(__name__)

ENTRY_POINTS = "entry_points.txt"
_GROUP_PREFIX = "connect_plane."


@dataclass(frozen=True)
class ManifestEntry:
    """One plugin declared by one manifest."""

    name: str
    type: PluginType
    module: str
    attr: str
    manifest: str
    """The path of the ``entry_points.txt`` (inside an archive: ``archive/dist-info/...``)."""
    version: str | None
    """The declaring distribution's version (None for a connect-plugin-path shim)."""

    @property
    def target(self) -> str:
        return f"{self.module}:{self.attr}"

    @property
    def line(self) -> str:
        """How the entry reads in its file: ``name = module:Class``."""
        return f"{self.name} = {self.target}"


@dataclass(frozen=True)
class EntryLine:
    group: str
    name: str
    value: str


def parse_entry_points(text: str) -> list[EntryLine]:
    """The ``name = value`` lines of an ``entry_points.txt``, with their group."""
    entries: list[EntryLine] = []
    group = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            group = line[1:-1].strip()
            continue
        name, sep, value = line.partition("=")
        if sep and group:
            entries.append(EntryLine(group, name.strip(), value.strip()))
    return entries


def split_target(value: str) -> tuple[str, str] | None:
    """``module:Class`` (extras in brackets ignored) as (module, Class); None if malformed."""
    module, sep, attr = value.partition("[")[0].strip().partition(":")
    module, attr = module.strip(), attr.strip()
    if not sep or not _dotted(module) or not _dotted(attr):
        return None
    return module, attr


def _dotted(text: str) -> bool:
    return bool(text) and all(part.isidentifier() for part in text.split("."))


def read_entries(dist_path: Path | zipfile.Path, errors: list[str],
                 *, shim: bool = False) -> list[ManifestEntry]:
    """The plugins one ``*.dist-info`` directory declares; malformed entries are reported
    in ``errors`` and skipped. Its version is read only if it declares any."""
    dist = PathDistribution(dist_path)
    try:
        text = dist.read_text(ENTRY_POINTS)
    except (OSError, UnicodeDecodeError, zipfile.BadZipFile) as exc:
        errors.append(f"cannot read {dist_path}/{ENTRY_POINTS}: {exc}")
        return []
    if not text or _GROUP_PREFIX not in text:
        return []
    manifest = f"{dist_path}/{ENTRY_POINTS}" if isinstance(dist_path, zipfile.Path) else \
        str(Path(dist_path) / ENTRY_POINTS)
    version: str | None = None
    entries = []
    for line in parse_entry_points(text):
        type_ = TYPES_BY_GROUP.get(line.group)
        if type_ is None:
            continue
        target = split_target(line.value)
        if target is None or not line.name:
            errors.append(f"{manifest}: entry '{line.name} = {line.value}' in "
                          f"[{line.group}] is not 'class name = module:Class'")
            continue
        if version is None and not shim:
            version = dist.version or ""
        entries.append(ManifestEntry(line.name, type_, target[0], target[1], manifest,
                                     version or None))
    return entries


def location_manifests(location: PluginLocation) -> list[ManifestEntry]:
    """Every plugin a location's manifests declare (its distributions', then its shim's)."""
    entries: list[ManifestEntry] = []
    for dist_path in location.distribution_paths():
        shim = isinstance(dist_path, Path) and is_shim(dist_path)
        entries += read_entries(dist_path, location.errors, shim=shim)
    return entries


def classpath_manifests(location: PluginLocation) -> list[ManifestEntry]:
    """Every plugin the worker's environment's distributions declare: each ``sys.path``
    directory's ``*.dist-info``/``*.egg-info``; a distribution found twice counts once,
    the first on ``sys.path`` winning (as ``importlib.metadata`` does)."""
    entries: list[ManifestEntry] = []
    seen: set[str] = set()
    for entry in list(sys.path):
        directory = Path(entry or ".")
        try:
            children = sorted(p for p in directory.iterdir()
                              if p.name.endswith((".dist-info", ".egg-info")) and p.is_dir())
        except OSError:
            continue
        for dist_path in children:
            found = read_entries(dist_path, location.errors)
            if not found:
                continue
            name = (PathDistribution(dist_path).metadata["Name"] or dist_path.name)
            key = name.lower().replace("_", "-").replace(".", "-")
            if key in seen:
                continue
            seen.add(key)
            entries += found
    return entries
