"""Plugin discovery (KIP-898): ``plugin.path`` and ``plugin.discovery`` to a registry.

The modes, as in Kafka's ``PluginDiscoveryMode`` (``plugin.discovery``, case-insensitive):

- ``only_scan``: plugins are found by importing every module of every plugin location
  (``ModuleScanner``); manifests only name what scanning finds. Warns that manifests go
  unchecked.
- ``hybrid_warn`` (default): scanning and manifests; each plugin found by scanning but
  declared by no manifest is listed in a warning (Kafka's text); when every plugin has a
  manifest, the warning suggests ``service_load`` instead.
- ``hybrid_fail``: as ``hybrid_warn``, but a plugin without a manifest stops the worker
  with an error listing every one.
- ``service_load``: manifests only (``EntryPointScanner(load=False)``); no plugin module is
  imported until a connector uses it. Beyond Kafka: a lookup that misses, and a listing,
  re-read the plugin path's manifests (at most once per ``REFRESH_INTERVAL_S``), so a
  plugin whose manifest appears after start is usable without a restart.

In every mode the worker's environment (``classpath``) contributes the plugins its
distributions' manifests declare (Kafka, too, service-loads some plugin types in every
mode), and scanning covers only its built-in package. See docs/plugins.md.

Discovery also decides which modules a class name that is no registered plugin may import
(``PluginRegistry.import_packages``): those of the top-level packages of the environment's
registered plugins — the packages of installed plugin distributions, connect-plane's
``worker`` among them — and of ``plugin.import.packages``. Nothing else of the environment
is imported by a connector config; a plugin location's modules never are.
"""

from __future__ import annotations

import importlib
import logging
import threading
import time
from collections.abc import Sequence
from enum import StrEnum

from worker.errors import ConfigError, WorkerError
from worker.plugins.importer import PluginImporter
from worker.plugins.locations import PluginLocation, classpath_location, plugin_locations
from worker.plugins.registry import PluginRegistry
from worker.plugins.scanner import EntryPointScanner, FoundPlugin, ModuleScanner, ScanResult
from worker.plugins.types import PluginType

log = logging.getLogger(__name__)

PLUGIN_PATH_CONFIG = "plugin.path"
PLUGIN_DISCOVERY_CONFIG = "plugin.discovery"
PLUGIN_IMPORT_PACKAGES_CONFIG = "plugin.import.packages"
#: Where the hybrid warnings send users (Kafka's message points at Kafka's documentation).
DOCUMENTATION = "docs/plugins.md#migrating-plugins-to-manifests"
#: ``service_load`` re-reads manifests at most this often (lookups that miss, listings).
REFRESH_INTERVAL_S = 1.0


class DiscoveryMode(StrEnum):
    """``plugin.discovery``: how plugins are found."""

    ONLY_SCAN = "only_scan"
    HYBRID_WARN = "hybrid_warn"
    HYBRID_FAIL = "hybrid_fail"
    SERVICE_LOAD = "service_load"

    @property
    def reflectively_scan(self) -> bool:
        return self is not DiscoveryMode.SERVICE_LOAD

    @property
    def service_load(self) -> bool:
        return self is not DiscoveryMode.ONLY_SCAN

    @classmethod
    def parse(cls, value: str) -> DiscoveryMode:
        """Case-insensitive, as Kafka's ``WorkerConfig.pluginDiscovery``."""
        try:
            return cls(value.strip().lower())
        except ValueError:
            raise ConfigError(PLUGIN_DISCOVERY_CONFIG, "must be one of "
                              f"{', '.join(m.value for m in cls)}") from None


PluginKey = tuple[int, PluginType]


class PluginDiscovery:
    """One discovery of ``plugin_path`` in ``mode`` into ``registry``; ``run()`` does it.

    ``locations`` are the plugin locations followed by the ``classpath``; ``scanned`` and
    ``declared`` what each scanner found (the CLI and the tests read them); ``missing`` the
    plugins scanning found that no manifest declares. ``import_packages`` (the setting
    ``plugin.import.packages``) are packages of the environment whose classes connector
    configs may name by import path without a manifest.
    """

    def __init__(self, plugin_path: Sequence[str], mode: DiscoveryMode,
                 registry: PluginRegistry | None = None,
                 import_packages: Sequence[str] = ()) -> None:
        self.plugin_path = list(plugin_path)
        self.mode = mode
        self.registry = registry or PluginRegistry()
        self.import_packages = [p.strip() for p in import_packages if p.strip()]
        self.importer = PluginImporter()
        self.locations: list[PluginLocation] = []
        self.scanned = ScanResult()
        self.declared = ScanResult()
        self.missing: list[FoundPlugin] = []
        self._registered: set[tuple[str, PluginType]] = set()
        self._signatures: dict[str, tuple[tuple[str, int, int], ...]] = {}
        self._refresh_lock = threading.Lock()
        self._last_refresh = 0.0

    def run(self) -> PluginDiscovery:
        """Discover, report (raising WorkerError under ``hybrid_fail``), then register."""
        self.importer.install()
        self.locations = [self.importer.add(loc) for loc in plugin_locations(self.plugin_path)]
        self.locations.append(classpath_location())
        if self.mode is DiscoveryMode.SERVICE_LOAD:  # what refresh() compares against
            self._signatures = {loc.name: loc.signature() for loc in self.locations}
        if self.mode is DiscoveryMode.ONLY_SCAN:
            log.warning("%s=%s finds plugins by importing every module of every plugin "
                        "location and does not check manifests; consider reconfiguring "
                        "%s=%s to find the plugins that are missing manifests",
                        PLUGIN_DISCOVERY_CONFIG, self.mode, PLUGIN_DISCOVERY_CONFIG,
                        DiscoveryMode.HYBRID_WARN)
        try:
            self.declared = EntryPointScanner(
                self.importer, load=self.mode is not DiscoveryMode.SERVICE_LOAD
            ).discover(self.locations)
        except Exception as exc:
            raise WorkerError(
                f"Unable to perform ServiceLoader scanning as requested by "
                f"{PLUGIN_DISCOVERY_CONFIG}={self.mode}. It may be possible to fix this issue "
                f"by reconfiguring {PLUGIN_DISCOVERY_CONFIG}={DiscoveryMode.ONLY_SCAN}: "
                f"{exc}") from exc
        if self.mode.reflectively_scan:
            self.scanned = ModuleScanner(self.importer).discover(self.locations)
        plugins = self._merge()
        self._report_hybrid_issue()
        self._install(plugins)
        self.registry.import_guard = self.importer.import_refusal
        self.registry.import_packages = self.classpath_packages() | set(self.import_packages)
        if self.mode is DiscoveryMode.SERVICE_LOAD:
            self._last_refresh = time.monotonic()
            self.registry.refresher = self.refresh
        return self

    def classpath_packages(self) -> frozenset[str]:
        """The top-level packages of the plugins the worker's environment provides: those
        its manifests declare (installed plugin distributions) and the built-in package
        scanning finds. Their modules are made for the worker; the rest of the
        environment is not (a module may do anything when imported)."""
        return frozenset(
            plugin.ref.module.partition(".")[0]
            for result in (self.declared, self.scanned) for plugin in result.plugins
            if plugin.location.path is None)

    def close(self) -> None:
        """Stop importing from the plugin locations (tests that discover in-process)."""
        self.importer.uninstall()

    # -- merging and reporting -----------------------------------------------------------

    def _merge(self) -> list[FoundPlugin]:
        """The plugins to register: manifest names win; scanning adds what manifests lack
        (under ``only_scan`` a plugin location's manifests only name what scanning finds)."""
        declared: dict[PluginKey, FoundPlugin] = {}
        for plugin in self.declared.plugins:
            if plugin.ref.loaded:
                declared.setdefault((id(plugin.ref.load()), plugin.type), plugin)
        if not self.mode.reflectively_scan:
            return list(self.declared.plugins)
        merged: dict[PluginKey, FoundPlugin] = {}
        for plugin in self.scanned.plugins:
            key = (id(plugin.ref.load()), plugin.type)
            named = declared.get(key)
            if named is None:
                self.missing.append(plugin)
                merged.setdefault(key, plugin)
            else:
                merged.setdefault(key, FoundPlugin(named.class_name, plugin.type, plugin.ref,
                                                   plugin.location, named.entry))
        for key, plugin in declared.items():
            if self.mode.service_load or plugin.location.path is None:
                merged.setdefault(key, plugin)
        return list(merged.values())

    def _report_hybrid_issue(self) -> None:
        """Kafka's ``Plugins.maybeReportHybridDiscoveryIssue``, word for word but for the
        documentation it points at."""
        if self.mode not in (DiscoveryMode.HYBRID_WARN, DiscoveryMode.HYBRID_FAIL):
            return
        if not self.missing:
            log.warning("All plugins have ServiceLoader manifests, consider reconfiguring "
                        "%s=%s", PLUGIN_DISCOVERY_CONFIG, DiscoveryMode.SERVICE_LOAD)
            return
        rows = sorted(f"{p.location.name}\t{p.class_name}\t{p.type}\t{p.ref.version()}"
                      for p in self.missing)
        message = (f"One or more plugins are missing ServiceLoader manifests may not be usable "
                   f"with {PLUGIN_DISCOVERY_CONFIG}={DiscoveryMode.SERVICE_LOAD}: "
                   f"[\n{chr(10).join(rows)}\n]\nRead the documentation at {DOCUMENTATION} "
                   "for instructions on migrating your plugins to take advantage of the "
                   f"performance improvements of {DiscoveryMode.SERVICE_LOAD} mode.")
        if self.mode is DiscoveryMode.HYBRID_WARN:
            log.warning("%s To silence this warning, set %s=%s in the worker config.",
                        message, PLUGIN_DISCOVERY_CONFIG, DiscoveryMode.ONLY_SCAN)
        else:
            raise WorkerError(f"{message} To silence this error, set "
                               f"{PLUGIN_DISCOVERY_CONFIG}={DiscoveryMode.HYBRID_WARN} in the "
                               "worker config.")

    def _install(self, plugins: Sequence[FoundPlugin]) -> None:
        added = []
        for plugin in plugins:
            key = (plugin.class_name, plugin.type)
            if key in self._registered:
                continue
            self._registered.add(key)
            self.registry.register_ref(plugin.ref, plugin.type, plugin.class_name,
                                       location=plugin.location.name)
            added.append(plugin.class_name)
        for name in dict.fromkeys(added):
            log.info("Added plugin '%s'", name)
        names = set(added)
        for alias, name in sorted(self.registry.alias_map().items()):
            if name in names:
                log.info("Added alias '%s' to plugin '%s'", alias, name)

    # -- service_load: manifests that appear after start ---------------------------------

    def refresh(self) -> bool:
        """Re-read the manifests of new plugin locations and of those whose manifests
        changed; register what they declare that is new. At most once per
        ``REFRESH_INTERVAL_S`` (other callers wait for a refresh under way, then see its
        result). Returns whether anything was added."""
        with self._refresh_lock:
            now = time.monotonic()
            if now - self._last_refresh < REFRESH_INTERVAL_S:
                return False
            self._last_refresh = now
            changed = []
            for found in plugin_locations(self.plugin_path, log_errors=False):
                location = self.importer.add(found)
                if not any(known is location for known in self.locations):
                    log.info("New plugin location %s", location.name)
                    self.locations.insert(-1, location)
                signature = location.signature()
                if self._signatures.get(location.name) != signature:
                    self._signatures[location.name] = signature
                    changed.append(location)
            if not changed:
                return False
            importlib.invalidate_caches()  # directory listings cached by the import system
            result = EntryPointScanner(self.importer, load=False).discover(changed)
            self.declared.extend(result)
            before = len(self._registered)
            self._install(result.plugins)
            return len(self._registered) > before


def discover(plugin_path: Sequence[str], mode: DiscoveryMode | str,
             registry: PluginRegistry | None = None,
             import_packages: Sequence[str] = ()) -> PluginDiscovery:
    """Run a discovery (WorkerError when ``hybrid_fail`` finds plugins without manifests)."""
    if isinstance(mode, str):
        mode = DiscoveryMode.parse(mode)
    return PluginDiscovery(plugin_path, mode, registry, import_packages).run()
