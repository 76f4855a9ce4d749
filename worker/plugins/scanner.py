"""Plugin scanners: finding plugins in plugin locations (Kafka's ``PluginScanner``).

:meth:`PluginScanner.discover` is the template — for each location, log it, ``scan`` it, time
the whole — and two scanners supply ``scan``:

- :class:`ModuleScanner` ("scanning", Kafka's ``ReflectionScanner``): imports every module
  of a location (packages walked recursively) and keeps the public, concrete classes defined
  there that implement a plugin SPI. In the worker's environment only the built-in package
  is scanned (``worker.plugins.builtins.CLASSPATH_SCAN_PACKAGES``).
- :class:`EntryPointScanner` (Kafka's ``ServiceLoaderScanner``): reads the location's
  manifests. With ``load=True`` it imports each declared class (failures reported, as
  Kafka's ``Failed to discover ...``); with ``load=False`` it imports nothing and returns
  lazy references (``plugin.discovery=service_load``).

A module that fails to import — syntax error, missing dependency, exception at import — is
reported with the reason and skipped; it never stops the scan.
"""

from __future__ import annotations

import importlib
import logging
import pkgutil
import time
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from types import ModuleType

from worker.errors import PluginNotFoundError
from worker.plugins.builtins import CLASSPATH_SCAN_PACKAGES
from worker.plugins.desc import PluginClassRef, describe_error
from worker.plugins.importer import PluginImporter
from worker.plugins.locations import PluginLocation
from worker.plugins.manifests import ManifestEntry, classpath_manifests, location_manifests
from worker.plugins.types import PluginType, plugin_types_of, python_path

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class FoundPlugin:
    """A plugin of one type found in one location."""

    class_name: str
    type: PluginType
    ref: PluginClassRef
    location: PluginLocation
    entry: ManifestEntry | None = None
    """The manifest entry that declares it (EntryPointScanner results)."""


@dataclass(frozen=True)
class Failure:
    """Something a scanner could not load: a module, or a manifest entry's class."""

    location: PluginLocation
    subject: str
    reason: str
    entry: ManifestEntry | None = None
    not_found: bool = False
    """The class does not exist (vs exists but cannot be loaded)."""


@dataclass
class ScanResult:
    plugins: list[FoundPlugin] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)

    def extend(self, other: ScanResult) -> None:
        self.plugins += other.plugins
        self.failures += other.failures


class PluginScanner(ABC):
    """Finds plugins in plugin locations; ``importer`` makes the locations importable."""

    def __init__(self, importer: PluginImporter) -> None:
        self.importer = importer

    def discover(self, sources: Sequence[PluginLocation]) -> ScanResult:
        """Every plugin this scanner finds in ``sources``."""
        start = time.monotonic()
        result = ScanResult()
        for source in sources:
            log.info("Loading plugin from: %s", source.name)
            result.extend(self.scan(source))
        log.info("Scanning plugins with %s took %d ms", type(self).__name__,
                 (time.monotonic() - start) * 1000)
        return result

    @abstractmethod
    def scan(self, source: PluginLocation) -> ScanResult:
        """The plugins in one location (only those loadable from it, for a loading scan)."""


class ModuleScanner(PluginScanner):
    """Imports every module of a location and finds plugin classes in them."""

    def scan(self, source: PluginLocation) -> ScanResult:
        result = ScanResult()
        if source.path is None:
            tops: Sequence[str] = CLASSPATH_SCAN_PACKAGES
        else:  # the modules another place provides are that place's (importer.py)
            tops = [n for n in source.top_level_names() if self.importer.owner(n) is source]
        refs: dict[type, PluginClassRef] = {}
        for top in tops:
            for module in self._walk(top, source, result):
                for cls in _plugin_classes(module):
                    ref = refs.setdefault(cls, PluginClassRef.of(cls))
                    for type_ in plugin_types_of(cls):
                        result.plugins.append(FoundPlugin(python_path(cls), type_, ref, source))
        return result

    def _walk(self, name: str, source: PluginLocation, result: ScanResult
              ) -> Iterator[ModuleType]:
        try:
            module = importlib.import_module(name)
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - plugin code at import
            reason = describe_error(exc)
            message = f"module {name} is not loadable: {reason}"
            log.error("Failed to discover plugins in %s: %s", source.name, message)
            source.errors.append(message)
            result.failures.append(Failure(source, name, reason))
            return
        yield module
        path = getattr(module, "__path__", None)
        if path is not None:
            for info in pkgutil.iter_modules(path, name + "."):
                yield from self._walk(info.name, source, result)


def _plugin_classes(module: ModuleType) -> Iterator[type]:
    """Public classes defined in ``module`` (nested ones too) that implement an SPI."""
    pending = [obj for key, obj in vars(module).items()
               if isinstance(obj, type) and not key.startswith("_")
               and obj.__module__ == module.__name__ and obj.__qualname__ == key]
    while pending:
        cls = pending.pop(0)
        if plugin_types_of(cls):
            yield cls
        pending += [obj for key, obj in vars(cls).items()
                    if isinstance(obj, type) and not key.startswith("_")
                    and obj.__module__ == module.__name__
                    and obj.__qualname__ == f"{cls.__qualname__}.{key}"]


class EntryPointScanner(PluginScanner):
    """Reads a location's manifests; ``load`` imports each declared class."""

    def __init__(self, importer: PluginImporter, *, load: bool) -> None:
        super().__init__(importer)
        self.load = load

    def scan(self, source: PluginLocation) -> ScanResult:
        result = ScanResult()
        if source.path is None:
            entries = classpath_manifests(source)
        else:
            entries = location_manifests(source)
        names = set(source.top_level_names())
        refs: dict[str, PluginClassRef] = {}
        for entry in entries:
            ref = refs.get(entry.target)
            if ref is None:
                ref = refs[entry.target] = self._ref(entry, source, names)
            found = self._found(entry, ref, source)
            if isinstance(found, Failure):
                log.error("Failed to discover %s in %s: %s (%s)", entry.type.simple_name,
                          source.name, found.reason, entry.line)
                result.failures.append(found)
            else:
                result.plugins.append(found)
        return result

    def _ref(self, entry: ManifestEntry, source: PluginLocation, names: set[str]
             ) -> PluginClassRef:
        top = entry.module.partition(".")[0]
        owner = self.importer.owner(entry.module)
        error, not_found = None, False
        if source.path is None and owner is not None:
            error, not_found = f"module {entry.module} is not in the worker's environment " \
                               f"but in plugin location {owner.name}", True
        elif source.path is not None and top not in names:
            error, not_found = f"module {entry.module} is not in {source.name}", True
        elif source.path is not None and owner is not source:
            where = owner.name if owner is not None else "the worker's environment"
            error = f"module {top} of {source.name} is shadowed by the one in {where}"
        return PluginClassRef(entry.module, entry.attr, version=entry.version, error=error,
                              not_found=not_found)

    def _found(self, entry: ManifestEntry, ref: PluginClassRef, source: PluginLocation
               ) -> FoundPlugin | Failure:
        if ref.error is None and self.load:
            try:
                cls = ref.load()
            except PluginNotFoundError:
                pass
            else:
                if entry.type not in plugin_types_of(cls):
                    return Failure(source, entry.line, f"{entry.target} does not implement "
                                   f"{entry.type.interface_name}", entry, not_found=True)
        if ref.error is not None:
            return Failure(source, entry.line, ref.error, entry, ref.not_found)
        return FoundPlugin(entry.name, entry.type, ref, source, entry)
