"""Making plugin locations importable, and reporting modules two places provide.

Python has one interpreter and one module namespace (``sys.modules``): there is no
per-plugin class loader, so a top-level module name means one module for the whole worker.
:class:`PluginImporter` is a finder appended to ``sys.meta_path`` that maps each top-level
name a plugin location provides to that location, and imports it from there; submodules
follow their package's ``__path__`` as usual, and zip and wheel locations go through
``zipimport``. Nothing is added to ``sys.path``, so the worker's own imports never search
the plugin path.

Who wins when two places provide the same top-level module, decided once and reported:

1. the worker's environment (the standard library, the worker and its dependencies — the
   "classpath") always wins: a plugin location cannot replace a module the worker runs on;
2. between plugin locations, the first in ``plugin.path`` order wins (entries in the order
   given, a directory entry's children sorted by name).

The loser's copy is never imported; both places are named in the location's errors and in
a warning, and manifests naming classes in the shadowed module report them as not loadable.
"""

from __future__ import annotations

import importlib.abc
import logging
import sys
import threading
from collections.abc import Iterable, Sequence
from importlib.machinery import ModuleSpec, PathFinder
from importlib.metadata import Distribution, DistributionFinder, MetadataPathFinder
from pathlib import Path
from types import ModuleType

from worker.plugins.locations import PluginLocation

log = logging.getLogger(__name__)


class PluginImporter(importlib.abc.MetaPathFinder):
    """The finder of plugin-location modules (one per discovery; see the module doc)."""

    def __init__(self) -> None:
        self._owners: dict[str, PluginLocation] = {}
        self._locations: dict[Path | None, PluginLocation] = {}
        self._decided: set[tuple[Path | None, str]] = set()
        self._lock = threading.Lock()

    # -- set-up --------------------------------------------------------------------------

    def install(self) -> PluginImporter:
        """Append to ``sys.meta_path`` (after the environment's finders: they win)."""
        if self not in sys.meta_path:
            sys.meta_path.append(self)
        return self

    def uninstall(self) -> None:
        if self in sys.meta_path:
            sys.meta_path.remove(self)

    def add(self, location: PluginLocation) -> PluginLocation:
        """Make ``location``'s top-level modules importable, except those the environment
        or an earlier location provides (reported in both locations' errors). Adding a
        known location again takes in the modules it gained since; the location object
        first added is returned."""
        names = location.top_level_names()
        with self._lock:
            known = self._locations.setdefault(location.path, location)
            for name in names:
                if (known.path, name) in self._decided:
                    continue
                self._decided.add((known.path, name))
                owner = self._owners.get(name)
                if owner is not None:
                    message = (f"top-level module {name} is provided by both {owner.name} "
                               f"and {known.name}; the one in {owner.name} is imported "
                               "(the first location on plugin.path wins)")
                    owner.errors.append(message)
                    known.errors.append(message)
                    log.warning("%s", message)
                elif self._environment_provides(name):
                    message = (f"top-level module {name} of {known.name} is also provided "
                               "by the worker's environment (classpath), whose module is "
                               "imported; this location's copy is not used")
                    known.errors.append(message)
                    log.warning("%s", message)
                else:
                    self._owners[name] = known
        return known

    def _environment_provides(self, name: str) -> bool:
        if name in sys.builtin_module_names or name in sys.stdlib_module_names \
                or name in sys.modules:
            return True
        for finder in sys.meta_path:
            if isinstance(finder, PluginImporter):
                continue
            find_spec = getattr(finder, "find_spec", None)
            try:
                if find_spec is not None and find_spec(name, None) is not None:
                    return True
            except Exception:  # noqa: BLE001 - a third-party finder's failure is not ours
                continue
        return False

    # -- queries -------------------------------------------------------------------------

    @property
    def locations(self) -> Sequence[PluginLocation]:
        return tuple(self._locations.values())

    def owner(self, module: str) -> PluginLocation | None:
        """The plugin location a module is imported from (None: the environment's)."""
        return self._owners.get(module.partition(".")[0])

    def import_refusal(self, module: str) -> str | None:
        """Why ``module`` is not imported by an import path in a connector config: its
        plugins are found by discovery only (``PluginRegistry.import_guard``)."""
        location = self.owner(module)
        if location is None:
            return None
        return (f"module {module} is in plugin location {location.name}, whose plugins are "
                "those its manifests declare or scanning finds; declare it with "
                "connect-plugin-path sync-manifests")

    # -- the finder protocol -------------------------------------------------------------

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> ModuleSpec | None:
        if path is not None:
            return None  # a submodule: found through its package's __path__
        location = self._owners.get(fullname)
        if location is None or location.path is None:
            return None
        return PathFinder.find_spec(fullname, [str(location.path)])

    def find_distributions(self, context: DistributionFinder.Context | None = None
                           ) -> Iterable[Distribution]:
        """The plugin locations' distributions, for ``importlib.metadata`` lookups that
        search the default path (so a plugin can read its own version). A lookup given an
        explicit path is not ours to answer."""
        context = context or DistributionFinder.Context()
        if "path" in vars(context):
            return iter(())
        paths = [str(loc.path) for loc in self._locations.values()
                 if loc.path is not None and not loc.misplaced]
        return MetadataPathFinder.find_distributions(
            DistributionFinder.Context(name=context.name, path=paths))
