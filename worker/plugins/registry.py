"""The plugin registry: resolves class names and aliases to plugin classes.

A connector config names its plugins the way Kafka Connect's do, and every form resolves:

- the canonical name listed by ``GET /connector-plugins`` — the Java class name for built-ins
  that have one (``org.apache.kafka.connect.file.FileStreamSourceConnector``,
  ``org.apache.kafka.connect.transforms.InsertField$Value``), the name a manifest gives, else
  the Python path ``module.Class``;
- Kafka's aliases, computed as Kafka computes them: the simple class name
  (``FileStreamSourceConnector``, ``JsonConverter``) and the name pruned of its type suffix
  (``FileStreamSource``, ``Json``) — an alias that two different plugins share is ambiguous
  and resolves to neither (so ``Value``, the simple name of every ``$Value`` SMT, is unusable,
  as in Kafka) — plus explicit aliases given at registration;
- a Python import path, ``pkg.mod.Class`` or ``pkg.mod:Class``: a registered class's path
  resolves to it without importing anything; any other path is imported, then checked
  against the expected SPI base class, only inside the packages plugins may be imported
  from (``import_packages``). Kafka loads any class of its classpath by name, but loading a
  Java class runs none of its code; importing a Python module runs it, so a name that is no
  plugin must not import whatever the environment holds (``this``, ``antigravity``, a
  module that writes files at import). Discovery sets ``import_packages`` to the packages
  whose plugins the environment's manifests declare, plus the worker setting
  ``plugin.import.packages``; anything else is an error without an import. Modules of a
  plugin location are never imported this way: their plugins are what discovery found
  (``import_guard``).

Connector configs name connectors, converters, SMTs and predicates; worker properties name
config providers (``config.providers.<name>.class``) and REST extensions
(``rest.extension.classes``). Lookups and listings without a type cover the former only —
what Kafka's ``/connector-plugins`` endpoints list and describe — and worker plugins are
found when asked for by type (``PluginType.CONFIG_PROVIDER``, ``PluginType.REST_EXTENSION``).

Discovery (``worker.plugins.discovery``) fills a registry from ``plugin.path`` and manifests;
with ``service_load`` its descriptors hold classes not imported yet, and ``refresher``
re-reads manifests when a lookup misses. ``builtin_registry()`` builds a fresh registry of
the built-ins each call (no singletons), for code that runs no discovery (unit tests,
tools): it imports any path, as it serves no connector configs from the network.
"""

from __future__ import annotations

import importlib
import logging
import threading
from collections.abc import Callable, Iterable
from types import ModuleType
from typing import Any

from worker.errors import PluginNotFoundError
from worker.plugins.desc import PluginClassRef, PluginDesc, describe_error, plugin_version
from worker.plugins.types import (
    CLASSPATH,
    CONNECTOR_CONFIG_TYPES,
    CONNECTOR_TYPES,
    UNDEFINED_VERSION,
    PluginType,
    is_header_converter,
    kafka_aliases,
    plugin_types_of,
    python_path,
)

__all__ = ["CLASSPATH", "CONNECTOR_CONFIG_TYPES", "CONNECTOR_TYPES", "UNDEFINED_VERSION",
           "PluginClassRef", "PluginDesc", "PluginRegistry", "PluginType", "builtin_registry",
           "is_header_converter", "plugin_types_of", "python_path"]

log = logging.getLogger(__name__)

TypeSpec = PluginType | set[PluginType] | frozenset[PluginType] | None


def _auto_aliases(class_name: str, python_name: str, type_: PluginType) -> set[str]:
    """Kafka's simple and pruned names, for the canonical (Java) and the Python class name."""
    return set(kafka_aliases(class_name, type_)) | set(kafka_aliases(python_name, type_))


class PluginRegistry:
    """Installed plugins by canonical name, with alias and import-path resolution.

    ``refresher``, when set, is called (without the registry's lock) before a listing and
    when a lookup misses; it may register more plugins and returns whether it did (it
    rate-limits itself). ``import_guard``, when set, returns why a module must not be
    imported by path (it belongs to a plugin location), or None. ``import_packages`` are
    the packages (dotted names; a module inside one, at any depth, qualifies) whose modules
    a name that is no registered plugin may import; None: any module (a registry no
    discovery set up), empty: none — registered plugins only.
    """

    def __init__(self, import_packages: Iterable[str] | None = ()) -> None:
        self._lock = threading.RLock()
        self._by_name: dict[str, list[PluginDesc]] = {}
        self._by_class: dict[type, str] = {}
        self._by_target: dict[str, str] = {}
        self._by_dotted: dict[str, str] = {}
        self._alias_targets: dict[str, set[str]] = {}
        self._imported: dict[str, list[PluginDesc]] = {}
        self.refresher: Callable[[], bool] | None = None
        self.import_guard: Callable[[str], str | None] | None = None
        self.import_packages: frozenset[str] | None = (
            None if import_packages is None else frozenset(import_packages))

    # -- registration --------------------------------------------------------------------

    def register(self, plugin_class: type, type: PluginType, class_name: str | None = None,
                 aliases: Iterable[str] = (), version: str | None = None) -> PluginDesc:
        """List ``plugin_class`` as a plugin of ``type``; return its descriptor.

        ``class_name`` defaults to the Python path. Kafka-style aliases are added
        automatically; ``aliases`` adds more. Registering the same name and type again
        replaces the earlier descriptor.
        """
        if type not in plugin_types_of(plugin_class):
            raise TypeError(f"{python_path(plugin_class)} does not implement "
                            f"{type.interface_name} ({type.value})")
        ref = PluginClassRef.of(plugin_class, version or plugin_version(plugin_class))
        return self.register_ref(ref, type, class_name, aliases=aliases)

    def register_ref(self, ref: PluginClassRef, type: PluginType, class_name: str | None = None,
                     *, aliases: Iterable[str] = (), location: str = CLASSPATH) -> PluginDesc:
        """List the class ``ref`` points at — imported or not — as a plugin of ``type``
        found at ``location``. The type is checked when the class is loaded."""
        name = class_name or ref.python_name
        names = (_auto_aliases(name, ref.python_name, type) | set(aliases)) - {name}
        desc = PluginDesc(name, type, ref, tuple(sorted(names)), location)
        order = list(PluginType)
        with self._lock:
            descs = [d for d in self._by_name.get(name, []) if d.type is not type]
            self._by_name[name] = sorted([*descs, desc], key=lambda d: order.index(d.type))
            if ref.loaded:
                self._by_class.setdefault(ref.load(), name)
            self._by_target.setdefault(ref.target, name)
            self._by_dotted.setdefault(ref.python_name, name)
            for alias in names:
                self._alias_targets.setdefault(alias, set()).add(name)
            # An imported class may now be registered under its canonical name.
            self._imported.clear()
        return desc

    # -- lookup --------------------------------------------------------------------------

    def resolve(self, name: str, expected: TypeSpec = None) -> PluginDesc:
        """The plugin ``name`` refers to, of one of the ``expected`` types (None: any type
        a connector config names, ``CONNECTOR_CONFIG_TYPES``).

        A plugin found in a manifest is not imported by this (``plugin_class`` does).
        Raises PluginNotFoundError (with Kafka's message) if nothing matches.
        """
        wanted = _as_set(expected)
        name = name.strip()
        hint: list[str] = []
        descs = self._find(name, hint)
        if descs is None and self.refresher is not None and self.refresher():
            descs = self._find(name, hint)
        for desc in descs or ():
            if desc.type in (CONNECTOR_CONFIG_TYPES if wanted is None else wanted):
                return desc
        message = self._not_found_message(name, wanted)
        raise PluginNotFoundError(f"{message} ({hint[0]})" if hint else message)

    def _find(self, name: str, hint: list[str]) -> list[PluginDesc] | None:
        descs = self._lookup(name)
        return descs if descs is not None else self._import(name, hint)

    def _lookup(self, name: str) -> list[PluginDesc] | None:
        with self._lock:
            if name in self._by_name:
                return self._by_name[name]
            targets = self._alias_targets.get(name)
            if targets is not None and len(targets) == 1:
                return self._by_name[next(iter(targets))]
        return None

    def _import(self, name: str, hint: list[str]) -> list[PluginDesc] | None:
        """Resolve ``pkg.mod.Class`` / ``pkg.mod:Class``; None if it names no plugin class.

        A registered class's path yields its registered descriptors (canonical name
        included) without importing anything. Any other path is imported only where
        ``import_guard`` and ``import_packages`` allow; a refusal leaves its reason in
        ``hint`` and imports nothing. The cost is linear in the length of the name, however
        many dots it has.
        """
        with self._lock:
            if name in self._imported:
                return self._imported[name]
            registered = self._by_target.get(name) or self._by_dotted.get(name)
            if registered is not None:
                return self._by_name[registered]
        module_path, colon, attr_path = name.partition(":")
        parts = module_path.split(".")
        if not all(part.isidentifier() for part in parts) or (
                not _is_dotted_identifier(attr_path) if colon else len(parts) < 2):
            return None
        # The longest module it may name: pkg.mod.Outer.Inner may be class Outer.Inner of
        # pkg.mod, or class Inner of module pkg.mod.Outer. A refused module has only
        # refused prefixes.
        longest = len(parts) if colon else len(parts) - 1
        refusal = self._import_refusal(".".join(parts[:longest]))
        if refusal is not None:
            hint.append(refusal)
            return None
        module, depth = _import_prefix(name, parts[:longest])
        if module is None or (colon and depth < longest) \
                or self._import_refusal(".".join(parts[:depth])) is not None:
            return None  # no such module (the packages above it, allowed, are imported)
        if not colon:
            attr_path = ".".join(parts[depth:])
        return self._imported_plugin(name, module, attr_path)

    def _import_refusal(self, module: str) -> str | None:
        """Why ``module`` may not be imported by a class name that is no registered plugin
        (None: it may). Decided on its name alone: finding out whether a module exists
        (``importlib.util.find_spec``) imports its parent packages."""
        refusal = self.import_guard(module) if self.import_guard else None
        if refusal is not None or self.import_packages is None:
            return refusal
        if any(module == package or module.startswith(package + ".")
               for package in self.import_packages):
            return None
        return ("import paths are resolved only in the packages of installed plugins and "
                "those listed in plugin.import.packages")

    def _imported_plugin(self, name: str, module: Any, attr_path: str
                         ) -> list[PluginDesc] | None:
        obj: Any = module
        for part in attr_path.split("."):
            obj = getattr(obj, part, None)
        types = plugin_types_of(obj)
        if not types:
            return None
        with self._lock:
            registered = self._by_class.get(obj) or self._by_target.get(
                f"{obj.__module__}:{obj.__qualname__}")
            descs = self._by_name[registered] if registered else [
                PluginDesc(python_path(obj), t, PluginClassRef.of(obj)) for t in types]
            self._imported[name] = descs
        return descs

    def _not_found_message(self, name: str, wanted: set[PluginType] | None) -> str:
        if wanted is None:
            return f"Failed to find any class that implements a plugin and which name " \
                   f"matches {name}"
        interfaces = sorted({t.interface_name for t in wanted})
        message = (f"Failed to find any class that implements {' or '.join(interfaces)} and "
                   f"which name matches {name}")
        if wanted <= CONNECTOR_TYPES:
            available = ", ".join(d.class_name for d in self._listed(CONNECTOR_TYPES))
            message += f", available connectors are: {available}"
        return message

    def plugins(self, types: set[PluginType] | frozenset[PluginType] | None = None
                ) -> list[PluginDesc]:
        """Registered plugins of ``types`` (None: ``CONNECTOR_CONFIG_TYPES``, Kafka's
        ``/connector-plugins`` listing), sorted by class name then type. A plugin whose
        class failed to load is left out."""
        if self.refresher is not None:
            self.refresher()
        return self._listed(CONNECTOR_CONFIG_TYPES if types is None else types)

    def _listed(self, wanted: set[PluginType] | frozenset[PluginType]) -> list[PluginDesc]:
        order = list(PluginType)
        with self._lock:
            descs = [d for group in self._by_name.values() for d in group
                     if d.type in wanted and d.ref.error is None]
        return sorted(descs, key=lambda d: (d.class_name, order.index(d.type)))

    def aliases(self, desc: PluginDesc) -> list[str]:
        """Every unambiguous alias that resolves to ``desc``'s class name."""
        with self._lock:
            return sorted(alias for alias, targets in self._alias_targets.items()
                          if targets == {desc.class_name})

    def alias_map(self) -> dict[str, str]:
        """Every unambiguous alias and the class name it resolves to."""
        with self._lock:
            return {alias: next(iter(targets))
                    for alias, targets in self._alias_targets.items() if len(targets) == 1}

    def new_instance(self, name: str, expected: TypeSpec = None) -> Any:
        """A new instance of the plugin ``name`` resolves to."""
        return self.resolve(name, expected).plugin_class()

    @staticmethod
    def connector_type(desc: PluginDesc) -> str:
        """``"source"`` or ``"sink"``; ValueError for a plugin that is not a connector."""
        if desc.type not in CONNECTOR_TYPES:
            raise ValueError(f"{desc.class_name} is a {desc.type.value}, not a connector")
        return desc.type.value


def _as_set(expected: TypeSpec) -> set[PluginType] | None:
    if expected is None:
        return None
    if isinstance(expected, PluginType):
        return {expected}
    return set(expected)


def _is_dotted_identifier(text: str) -> bool:
    return all(part.isidentifier() for part in text.split("."))


def _import_prefix(name: str, parts: list[str]) -> tuple[ModuleType | None, int]:
    """Import ``parts[:1]``, ``parts[:2]``, ... up to the first that does not exist; the
    deepest module imported and how many parts it has. One level at a time: its parent
    already imported, no import recurses, however many parts the name has. Raises
    PluginNotFoundError for a module that exists but fails to import."""
    module: ModuleType | None = None
    for depth in range(1, len(parts) + 1):
        module_name = ".".join(parts[:depth])
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name == module_name:
                return module, depth - 1
            raise PluginNotFoundError(f"Failed to load plugin {name}: {exc}") from exc
        except Exception as exc:  # noqa: BLE001 - a broken plugin module
            raise PluginNotFoundError(f"Failed to load plugin {name}: "
                                      f"{describe_error(exc)}") from exc
    return module, len(parts)


def builtin_registry() -> PluginRegistry:
    """A new registry holding every built-in connector, converter, SMT, predicate, config
    provider and REST extension, imported (declared in the ``connect-plane``
    distribution's entry points, read back by ``worker.plugins.builtins``).

    It imports any import path (``import_packages=None``): it is for code that runs no
    discovery — unit tests, tools, worker properties read without a registry. A worker's
    registry comes from discovery, which restricts import paths (``worker.compose``)."""
    from worker.plugins.builtins import builtin_plugins

    registry = PluginRegistry(import_packages=None)
    for plugin in builtin_plugins():
        registry.register(plugin.load(), plugin.type, plugin.name)
    return registry
