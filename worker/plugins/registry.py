"""The plugin registry: resolves class names and aliases to plugin classes.

A connector config names its plugins the way Kafka Connect's do, and every form resolves:

- the canonical name listed by ``GET /connector-plugins`` — the Java class name for built-ins
  that have one (``org.apache.kafka.connect.file.FileStreamSourceConnector``,
  ``org.apache.kafka.connect.transforms.InsertField$Value``), else the Python path
  ``module.Class``;
- Kafka's aliases, computed as Kafka computes them: the simple class name
  (``FileStreamSourceConnector``, ``JsonConverter``) and the name pruned of its type suffix
  (``FileStreamSource``, ``Json``) — an alias that two different plugins share is ambiguous
  and resolves to neither (so ``Value``, the simple name of every ``$Value`` SMT, is unusable,
  as in Kafka) — plus explicit aliases given at registration;
- any importable Python path, ``pkg.mod.Class`` or ``pkg.mod:Class``, imported lazily and
  checked against the expected SPI base class.

Connector configs name connectors, converters, SMTs and predicates; worker properties name
config providers (``config.providers.<name>.class``) and REST extensions
(``rest.extension.classes``). Lookups and listings without a type cover the former only —
what Kafka's ``/connector-plugins`` endpoints list and describe — and worker plugins are
found when asked for by type (``PluginType.CONFIG_PROVIDER``, ``PluginType.REST_EXTENSION``).

Registration stays open: discovery scanners (KIP-898 manifests, ``plugin.path``) call
``register``. ``builtin_registry()`` builds a fresh registry each call (no singletons).
"""

from __future__ import annotations

import builtins
import importlib
import logging
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from worker.api import (
    ConfigProvider,
    Converter,
    Predicate,
    RestExtension,
    SinkConnector,
    SourceConnector,
    Transformation,
)
from worker.errors import PluginNotFoundError

log = logging.getLogger(__name__)

UNDEFINED_VERSION = "undefined"


class PluginType(StrEnum):
    """Plugin kinds, valued as Kafka spells them (``PluginType.toString()``)."""

    SOURCE = "source"
    SINK = "sink"
    CONVERTER = "converter"
    HEADER_CONVERTER = "header_converter"
    TRANSFORMATION = "transformation"
    PREDICATE = "predicate"
    CONFIG_PROVIDER = "configprovider"  # Kafka's CONFIGPROVIDER, lower-cased
    REST_EXTENSION = "rest_extension"  # Kafka's REST_EXTENSION, lower-cased

    @property
    def interface_name(self) -> str:
        """The Java interface name used in Kafka's "Failed to find any class..." errors."""
        return _INTERFACE_NAMES[self]

    @property
    def _suffix(self) -> str:
        return "Connector" if self in (PluginType.SOURCE, PluginType.SINK) else \
            self.interface_name


_INTERFACE_NAMES = {
    PluginType.SOURCE: "Connector", PluginType.SINK: "Connector",
    PluginType.CONVERTER: "Converter", PluginType.HEADER_CONVERTER: "HeaderConverter",
    PluginType.TRANSFORMATION: "Transformation", PluginType.PREDICATE: "Predicate",
    PluginType.CONFIG_PROVIDER: "ConfigProvider",
    PluginType.REST_EXTENSION: "ConnectRestExtension",
}

CONNECTOR_TYPES = frozenset((PluginType.SOURCE, PluginType.SINK))
#: The plugin types connector configs name: what Kafka's ``GET /connector-plugins``
#: lists and ``GET /connector-plugins/{p}/config`` describes, and what a lookup or listing
#: without a type covers. Config providers and REST extensions are worker plugins, not
#: among them (as in Kafka).
CONNECTOR_CONFIG_TYPES = frozenset((
    PluginType.SOURCE, PluginType.SINK, PluginType.CONVERTER, PluginType.HEADER_CONVERTER,
    PluginType.TRANSFORMATION, PluginType.PREDICATE))


def is_header_converter(cls: type) -> bool:
    """HeaderConverter is a duck type: the SPI has no base class for it."""
    return callable(getattr(cls, "from_connect_header", None)) and \
        callable(getattr(cls, "to_connect_header", None))


def plugin_types_of(cls: type) -> list[PluginType]:
    """The plugin types a class implements, in PluginType order."""
    if not isinstance(cls, type):
        return []
    checks = (
        (PluginType.SOURCE, lambda c: issubclass(c, SourceConnector)),
        (PluginType.SINK, lambda c: issubclass(c, SinkConnector)),
        (PluginType.CONVERTER, lambda c: issubclass(c, Converter)),
        (PluginType.HEADER_CONVERTER, is_header_converter),
        (PluginType.TRANSFORMATION, lambda c: issubclass(c, Transformation)),
        (PluginType.PREDICATE, lambda c: issubclass(c, Predicate)),
        (PluginType.CONFIG_PROVIDER, lambda c: issubclass(c, ConfigProvider)),
        (PluginType.REST_EXTENSION, lambda c: issubclass(c, RestExtension)),
    )
    return [type_ for type_, check in checks
            if check(cls) and not getattr(cls, "__abstractmethods__", None)]


@dataclass(frozen=True)
class PluginDesc:
    """One installed plugin of one type (a class may be listed once per type it implements)."""

    class_name: str
    type: PluginType
    version: str
    plugin_class: builtins.type  # the field ``type`` shadows the builtin in this scope
    aliases: tuple[str, ...] = ()
    """Names registered for it; one that another plugin shares later stops resolving
    (``PluginRegistry.aliases`` gives the ones that still do)."""


def python_path(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _plugin_version(cls: type) -> str:
    # Kafka instantiates plugins to ask for their version, too.
    try:
        return str(cls().version())
    except Exception:  # noqa: BLE001 - a plugin that cannot be built still gets listed
        return UNDEFINED_VERSION


def _auto_aliases(class_name: str, cls: type, type_: PluginType) -> set[str]:
    """Kafka's simple and pruned names, for the canonical (Java) and the Python class name."""
    aliases = set()
    for full in (class_name, python_path(cls)):
        simple = full.rsplit(".", 1)[-1].rsplit("$", 1)[-1]  # Java's getSimpleName()
        aliases.add(simple)
        pos = simple.rfind(type_._suffix)
        if pos > 0:
            aliases.add(simple[:pos])
    return aliases


class PluginRegistry:
    """Installed plugins by canonical name, with alias and import-path resolution."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._by_name: dict[str, list[PluginDesc]] = {}
        self._by_class: dict[type, str] = {}
        self._alias_targets: dict[str, set[str]] = {}
        self._imported: dict[str, list[PluginDesc]] = {}

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
        name = class_name or python_path(plugin_class)
        names = (_auto_aliases(name, plugin_class, type) | set(aliases)) - {name}
        desc = PluginDesc(name, type, version or _plugin_version(plugin_class), plugin_class,
                          tuple(sorted(names)))
        with self._lock:
            descs = [d for d in self._by_name.get(name, []) if d.type is not type]
            self._by_name[name] = sorted([*descs, desc], key=lambda d: list(PluginType).index(
                d.type))
            self._by_class.setdefault(plugin_class, name)
            for alias in names:
                self._alias_targets.setdefault(alias, set()).add(name)
            # An imported class may now be registered under its canonical name.
            self._imported.clear()
        return desc

    # -- lookup --------------------------------------------------------------------------

    def resolve(self, name: str,
                expected: PluginType | set[PluginType] | frozenset[PluginType] | None = None
                ) -> PluginDesc:
        """The plugin ``name`` refers to, of one of the ``expected`` types (None: any type
        a connector config names, ``CONNECTOR_CONFIG_TYPES``).

        Raises PluginNotFoundError (with Kafka's message) if nothing matches.
        """
        wanted = _as_set(expected)
        name = name.strip()
        descs = self._lookup(name)
        if descs is None:
            descs = self._import(name)
        for desc in descs or ():
            if desc.type in (CONNECTOR_CONFIG_TYPES if wanted is None else wanted):
                return desc
        raise PluginNotFoundError(self._not_found_message(name, wanted))

    def _lookup(self, name: str) -> list[PluginDesc] | None:
        with self._lock:
            if name in self._by_name:
                return self._by_name[name]
            targets = self._alias_targets.get(name)
            if targets is not None and len(targets) == 1:
                return self._by_name[next(iter(targets))]
        return None

    def _import(self, name: str) -> list[PluginDesc] | None:
        """Import ``pkg.mod.Class`` / ``pkg.mod:Class``; None if it names no plugin class.

        A registered class yields its registered descriptors (canonical name included).
        """
        with self._lock:
            if name in self._imported:
                return self._imported[name]
        module_name, _, attr_path = name.partition(":")
        candidates = [(module_name, attr_path)] if attr_path else [
            (".".join(name.split(".")[:i]), ".".join(name.split(".")[i:]))
            for i in range(name.count("."), 0, -1)]
        for module_name, attr_path in candidates:
            if not module_name or not attr_path or not _is_dotted_identifier(module_name) \
                    or not _is_dotted_identifier(attr_path):
                continue
            try:
                module = importlib.import_module(module_name)
            except ModuleNotFoundError as exc:
                if exc.name and (module_name == exc.name
                                 or module_name.startswith(exc.name + ".")):
                    continue  # this prefix is not a module; try a shorter one
                raise PluginNotFoundError(f"Failed to load plugin {name}: {exc}") from exc
            except Exception as exc:  # noqa: BLE001 - a broken plugin module
                raise PluginNotFoundError(f"Failed to load plugin {name}: {exc}") from exc
            obj: Any = module
            for part in attr_path.split("."):
                obj = getattr(obj, part, None)
            types = plugin_types_of(obj)
            if not types:
                return None
            with self._lock:
                registered = self._by_class.get(obj)
                descs = self._by_name[registered] if registered else [
                    PluginDesc(python_path(obj), t, _plugin_version(obj), obj) for t in types]
                self._imported[name] = descs
            return descs
        return None

    def _not_found_message(self, name: str, wanted: set[PluginType] | None) -> str:
        if wanted is None:
            return f"Failed to find any class that implements a plugin and which name " \
                   f"matches {name}"
        interfaces = sorted({t.interface_name for t in wanted})
        message = (f"Failed to find any class that implements {' or '.join(interfaces)} and "
                   f"which name matches {name}")
        if wanted <= CONNECTOR_TYPES:
            available = ", ".join(d.class_name for d in self.plugins(set(CONNECTOR_TYPES)))
            message += f", available connectors are: {available}"
        return message

    def plugins(self, types: set[PluginType] | frozenset[PluginType] | None = None
                ) -> list[PluginDesc]:
        """Registered plugins of ``types`` (None: ``CONNECTOR_CONFIG_TYPES``, Kafka's
        ``/connector-plugins`` listing), sorted by class name then type."""
        wanted = CONNECTOR_CONFIG_TYPES if types is None else types
        with self._lock:
            descs = [d for group in self._by_name.values() for d in group
                     if d.type in wanted]
        return sorted(descs, key=lambda d: (d.class_name, list(PluginType).index(d.type)))

    def aliases(self, desc: PluginDesc) -> list[str]:
        """Every unambiguous alias that resolves to ``desc``'s class name."""
        with self._lock:
            return sorted(alias for alias, targets in self._alias_targets.items()
                          if targets == {desc.class_name})

    def new_instance(self, name: str,
                     expected: PluginType | set[PluginType] | frozenset[PluginType] | None = None
                     ) -> Any:
        """A new instance of the plugin ``name`` resolves to."""
        return self.resolve(name, expected).plugin_class()

    @staticmethod
    def connector_type(desc: PluginDesc) -> str:
        """``"source"`` or ``"sink"``; ValueError for a plugin that is not a connector."""
        if desc.type not in CONNECTOR_TYPES:
            raise ValueError(f"{desc.class_name} is a {desc.type.value}, not a connector")
        return desc.type.value


def _as_set(expected: PluginType | set[PluginType] | frozenset[PluginType] | None
            ) -> set[PluginType] | None:
    if expected is None:
        return None
    if isinstance(expected, PluginType):
        return {expected}
    return set(expected)


def _is_dotted_identifier(text: str) -> bool:
    return all(part.isidentifier() for part in text.split("."))


# --- built-ins --------------------------------------------------------------------------

_KAFKA_TRANSFORMS = "org.apache.kafka.connect.transforms"
_KAFKA_PROVIDERS = "org.apache.kafka.common.config.provider"
_KAFKA_BASIC_AUTH = "org.apache.kafka.connect.rest.basic.auth.extension"


def builtin_registry() -> PluginRegistry:
    """A new registry holding every built-in connector, converter, SMT, predicate, config
    provider and REST extension."""
    from worker.connectors import config_providers, predicates, transforms
    from worker.connectors.basic_auth import BasicAuthSecurityRestExtension
    from worker.connectors.converters import ByteArrayConverter, JsonConverter, StringConverter
    from worker.connectors.file_stream import FileStreamSinkConnector, FileStreamSourceConnector
    from worker.connectors.generator import SequenceGeneratorConnector

    registry = PluginRegistry()
    registry.register(FileStreamSourceConnector, PluginType.SOURCE,
                      "org.apache.kafka.connect.file.FileStreamSourceConnector")
    registry.register(FileStreamSinkConnector, PluginType.SINK,
                      "org.apache.kafka.connect.file.FileStreamSinkConnector")
    registry.register(SequenceGeneratorConnector, PluginType.SOURCE,
                      aliases=("SequenceGenerator",))
    for cls, java_name in ((JsonConverter, "org.apache.kafka.connect.json.JsonConverter"),
                           (StringConverter, "org.apache.kafka.connect.storage.StringConverter"),
                           (ByteArrayConverter,
                            "org.apache.kafka.connect.converters.ByteArrayConverter")):
        registry.register(cls, PluginType.CONVERTER, java_name)
        registry.register(cls, PluginType.HEADER_CONVERTER, java_name)
    registry.register(transforms.RegexRouter, PluginType.TRANSFORMATION,
                      f"{_KAFKA_TRANSFORMS}.RegexRouter")
    registry.register(transforms.Filter, PluginType.TRANSFORMATION,
                      f"{_KAFKA_TRANSFORMS}.Filter")
    for base in ("InsertField", "ExtractField", "HoistField", "ReplaceField"):
        for variant in ("Key", "Value"):
            registry.register(getattr(transforms, base + variant), PluginType.TRANSFORMATION,
                              f"{_KAFKA_TRANSFORMS}.{base}${variant}")
    for name in ("TopicNameMatches", "HasHeaderKey", "RecordIsTombstone"):
        registry.register(getattr(predicates, name), PluginType.PREDICATE,
                          f"{_KAFKA_TRANSFORMS}.predicates.{name}")
    for name in ("FileConfigProvider", "DirectoryConfigProvider", "EnvVarConfigProvider"):
        registry.register(getattr(config_providers, name), PluginType.CONFIG_PROVIDER,
                          f"{_KAFKA_PROVIDERS}.{name}")
    registry.register(BasicAuthSecurityRestExtension, PluginType.REST_EXTENSION,
                      f"{_KAFKA_BASIC_AUTH}.BasicAuthSecurityRestExtension")
    return registry
