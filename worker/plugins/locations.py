"""Plugin locations: what ``plugin.path`` names, with Kafka's semantics.

``plugin.path`` is a comma-separated list. Each entry is a directory whose immediate children
are plugin locations, or is itself an archive (Kafka's ``PluginUtils.pluginLocations``). A
location is one of:

- ``wheel``: a ``.whl`` file (a zip holding packages and a ``*.dist-info``);
- ``zip``: a ``.zip`` file of modules and packages (with or without a ``*.dist-info``);
- ``distributions``: a directory of installed distributions — packages beside their
  ``*.dist-info`` directories, as ``pip install --target DIR`` leaves them;
- ``modules``: a directory tree of plain ``.py`` modules and packages, no metadata.

The worker's own environment (its ``sys.path``: the built-ins and every installed
distribution) is the ``classpath`` location, as in Kafka.

Archives are never rewritten (a wheel's ``RECORD`` vouches for its files, and a running
worker may be importing from it): the manifest ``connect-plugin-path sync-manifests`` adds
for an archive lives in a shim ``.dist-info`` directory beside it, named after it
(``<archive>.connect-plugin-path-shim.dist-info``), which belongs to the archive's location.
A directory location's shim lives inside it (``connect_plugin_path_shim-1.0.0.dist-info``,
the KIP's shim jar).
"""

from __future__ import annotations

import errno
import logging
import os
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from importlib.machinery import all_suffixes
from pathlib import Path

from worker.plugins.types import CLASSPATH

log = logging.getLogger(__name__)

ARCHIVE_SUFFIXES = (".whl", ".zip")
SHIM_DIST_NAME = "connect-plugin-path-shim"
SHIM_VERSION = "1.0.0"
#: The shim inside a directory location.
SHIM_DIR_NAME = f"connect_plugin_path_shim-{SHIM_VERSION}.dist-info"
#: The suffix of the shim beside an archive: ``<archive file name><suffix>``.
ARCHIVE_SHIM_SUFFIX = ".connect-plugin-path-shim.dist-info"
_METADATA_SUFFIXES = (".dist-info", ".egg-info")
_MODULE_SUFFIXES = tuple(sorted(set(all_suffixes()), key=len, reverse=True))


class LocationKind(StrEnum):
    WHEEL = "wheel"
    ZIP = "zip"
    DISTRIBUTIONS = "distributions"
    MODULES = "modules"
    CLASSPATH = "classpath"


def is_archive(path: Path) -> bool:
    return path.name.lower().endswith(ARCHIVE_SUFFIXES)


def is_shim(path: Path) -> bool:
    return path.name == SHIM_DIR_NAME or path.name.endswith(ARCHIVE_SHIM_SUFFIX)


@dataclass
class PluginLocation:
    """One plugin location (``path`` None: the worker's environment, ``classpath``).

    ``errors`` collects what went wrong with it (unreadable, modules that fail to import,
    modules another location also provides); nothing about one location stops another.
    """

    path: Path | None
    kind: LocationKind
    errors: list[str] = field(default_factory=list)
    #: Set for a directory that cannot be a location as it is (a package or a ``.dist-info``
    #: put straight into a plugin.path entry): reported, nothing in it is imported or read.
    misplaced: bool = False

    @property
    def name(self) -> str:
        """How logs and the tool name it: its path, or ``classpath``."""
        return CLASSPATH if self.path is None else str(self.path)

    @property
    def is_archive(self) -> bool:
        return self.kind in (LocationKind.WHEEL, LocationKind.ZIP)

    @property
    def shim_dir(self) -> Path:
        """Where this location's shim ``.dist-info`` is (or would be created)."""
        if self.path is None:
            raise ValueError("the classpath has no shim: the worker's environment is not "
                             "written to")
        if self.is_archive:
            return self.path.with_name(self.path.name + ARCHIVE_SHIM_SUFFIX)
        return self.path / SHIM_DIR_NAME

    def top_level_names(self) -> list[str]:
        """The top-level modules and packages this location provides, sorted."""
        if self.path is None or self.misplaced:
            return []
        try:
            if self.is_archive:
                with zipfile.ZipFile(self.path) as archive:
                    entries = {name.split("/", 1)[0] + ("/" if "/" in name else "")
                               for name in archive.namelist()}
                return sorted(filter(None, (_module_name(e.rstrip("/"), e.endswith("/"))
                                            for e in entries)))
            with os.scandir(self.path) as listing:
                return sorted(filter(None, (_module_name(e.name, e.is_dir())
                                            for e in listing)))
        except (OSError, zipfile.BadZipFile) as exc:
            self.errors.append(f"cannot list {self.path}: {exc}")
            return []

    def distribution_paths(self) -> list[Path | zipfile.Path]:
        """Its ``*.dist-info`` directories (the shim last), in name order."""
        if self.path is None or self.misplaced:
            return []
        found: list[Path | zipfile.Path] = []
        try:
            if self.is_archive:
                root = zipfile.Path(self.path)
                found = [p for p in sorted(root.iterdir(), key=lambda p: p.name)
                         if p.is_dir() and p.name.endswith(".dist-info")]
            else:
                found = [p for p in sorted(self.path.iterdir())
                         if p.is_dir() and p.name.endswith(".dist-info") and not is_shim(p)]
        except (OSError, zipfile.BadZipFile) as exc:
            self.errors.append(f"cannot list {self.path}: {exc}")
        if self.shim_dir.is_dir():
            found.append(self.shim_dir)
        return found

    def signature(self) -> tuple[tuple[str, int, int], ...]:
        """Cheap fingerprint of what its manifests could say: modification times and
        sizes of the location, its metadata directories and their ``entry_points.txt``."""
        paths: list[Path] = []
        if self.path is not None:
            paths = [self.path, self.shim_dir, self.shim_dir / "entry_points.txt"]
            if not self.is_archive:
                for dist in self.distribution_paths():
                    if isinstance(dist, Path):
                        paths += [dist, dist / "entry_points.txt"]
        out = []
        for path in paths:
            try:
                stat = path.stat()
                out.append((str(path), stat.st_mtime_ns, stat.st_size))
            except OSError:
                out.append((str(path), -1, -1))
        return tuple(out)


def _module_name(entry: str, is_dir: bool) -> str | None:
    """The importable top-level name a directory entry provides, if any."""
    if is_dir:
        if entry.endswith(_METADATA_SUFFIXES) or entry == "__pycache__" \
                or not entry.isidentifier():
            return None
        return entry
    for suffix in _MODULE_SUFFIXES:
        if entry.endswith(suffix):
            stem = entry[: -len(suffix)]
            return stem if stem.isidentifier() and stem != "__init__" else None
    return None


def location_at(path: Path) -> PluginLocation | None:
    """The location ``path`` is, or None for something that is not one (a loose file,
    a shim, ``__pycache__``, a hidden directory)."""
    name = path.name
    if name.startswith(".") or name == "__pycache__" or is_shim(path):
        return None
    if path.is_dir():
        if name.endswith(_METADATA_SUFFIXES):
            location = PluginLocation(path, LocationKind.DISTRIBUTIONS, misplaced=True)
            location.errors.append(
                f"{path} is a distribution's metadata directly in a plugin.path entry; "
                "install distributions into a directory of their own (pip install --target "
                f"{path.parent}/<plugin>) so that it is one plugin location")
            return location
        kind = LocationKind.MODULES
        try:
            if any(p.name.endswith(".dist-info") and not is_shim(p) for p in path.iterdir()):
                kind = LocationKind.DISTRIBUTIONS
        except OSError:
            pass
        if (path / "__init__.py").exists():
            return PluginLocation(path, kind, [
                f"{path} is itself a Python package: a plugin location is a directory that "
                f"contains packages; move {name} into a directory of its own"], misplaced=True)
        return PluginLocation(path, kind)
    if path.is_file() and is_archive(path):
        kind = LocationKind.WHEEL if name.lower().endswith(".whl") else LocationKind.ZIP
        location = PluginLocation(path, kind)
        if not zipfile.is_zipfile(path):
            location.errors.append(f"{path} is not a readable zip archive")
        return location
    return None


def plugin_locations(plugin_path: Iterable[str], *, fail_fast: bool = False,
                     log_errors: bool = True) -> list[PluginLocation]:
    """The plugin locations ``plugin.path`` names, in order (entries in the order given,
    the children of a directory entry sorted by name), without duplicates.

    An entry that does not exist or cannot be listed is logged (Kafka's "Could not get
    listing for plugin path: {}. Ignoring.") and skipped, or raises FileNotFoundError /
    OSError with ``fail_fast`` (the ``connect-plugin-path`` tool), its ``filename`` the
    entry's absolute path; ``log_errors=False`` skips it silently (a re-read of a path
    already reported).
    """
    locations: dict[Path, PluginLocation] = {}
    for raw in plugin_path:
        entry = raw.strip()
        if not entry:
            continue
        path = Path(entry).absolute()
        try:
            if not path.exists():
                raise FileNotFoundError(errno.ENOENT, "does not exist", str(path))
            if path.is_dir():
                for child in sorted(path.iterdir()):
                    location = location_at(child)
                    if location is not None and child not in locations:
                        locations[child] = location
                    elif location is None and child.suffix == ".py" and log_errors:
                        log.warning("Plugin path element %s is a module directly in a "
                                    "plugin.path entry, not a plugin location: put it in a "
                                    "directory of its own. Ignoring.", child)
            elif is_archive(path):
                location = location_at(path)
                if location is not None:
                    locations.setdefault(path, location)
            elif log_errors:
                log.warning("Plugin path element %s is neither a directory nor a .whl/.zip "
                            "archive. Ignoring.", path)
        except OSError as exc:
            if fail_fast:
                raise
            if log_errors:
                log.error("Could not get listing for plugin path: %s. Ignoring. (%s)", entry,
                          exc)
    return list(locations.values())


def classpath_location() -> PluginLocation:
    """The worker's own environment."""
    return PluginLocation(None, LocationKind.CLASSPATH)
