"""Plugin kinds, their manifest (entry-point) groups, and what makes a class a plugin.

Kept apart from the registry so that discovery, manifests and the ``connect-plugin-path``
tool share one definition without importing the registry's machinery.
"""

from __future__ import annotations

from enum import StrEnum

from worker.api import (
    ConfigProvider,
    Converter,
    Predicate,
    RestExtension,
    SinkConnector,
    SourceConnector,
    Transformation,
)

UNDEFINED_VERSION = "undefined"
#: The location name of the worker's own environment (Kafka's "classpath").
CLASSPATH = "classpath"


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
    def simple_name(self) -> str:
        """Kafka's ``PluginType.simpleName()``: the SPI class's simple name."""
        return _SIMPLE_NAMES[self]

    @property
    def suffix(self) -> str:
        """The suffix Kafka prunes from a class name to derive an alias."""
        return "Connector" if self in (PluginType.SOURCE, PluginType.SINK) else \
            self.interface_name

    @property
    def group(self) -> str:
        """The entry-point group that declares plugins of this type (the manifest)."""
        return ENTRY_POINT_GROUPS[self]


_INTERFACE_NAMES = {
    PluginType.SOURCE: "Connector", PluginType.SINK: "Connector",
    PluginType.CONVERTER: "Converter", PluginType.HEADER_CONVERTER: "HeaderConverter",
    PluginType.TRANSFORMATION: "Transformation", PluginType.PREDICATE: "Predicate",
    PluginType.CONFIG_PROVIDER: "ConfigProvider",
    PluginType.REST_EXTENSION: "ConnectRestExtension",
}
_SIMPLE_NAMES = {**_INTERFACE_NAMES, PluginType.SOURCE: "SourceConnector",
                 PluginType.SINK: "SinkConnector"}

#: One entry-point group per plugin type: the Python counterpart of Kafka's
#: ``META-INF/services/<SPI class>`` ServiceLoader manifests (KIP-898). The list is open:
#: a new plugin type gets a new group.
ENTRY_POINT_GROUPS: dict[PluginType, str] = {
    PluginType.SOURCE: "connect_plane.source_connector",
    PluginType.SINK: "connect_plane.sink_connector",
    PluginType.CONVERTER: "connect_plane.converter",
    PluginType.HEADER_CONVERTER: "connect_plane.header_converter",
    PluginType.TRANSFORMATION: "connect_plane.transformation",
    PluginType.PREDICATE: "connect_plane.predicate",
    PluginType.CONFIG_PROVIDER: "connect_plane.config_provider",
    PluginType.REST_EXTENSION: "connect_plane.rest_extension",
}
TYPES_BY_GROUP: dict[str, PluginType] = {group: t for t, group in ENTRY_POINT_GROUPS.items()}

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


def plugin_types_of(cls: object) -> list[PluginType]:
    """The plugin types a class implements, in PluginType order (none for an abstract
    class or anything that is not a class)."""
    if not isinstance(cls, type) or getattr(cls, "__abstractmethods__", None):
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
    return [type_ for type_, check in checks if check(cls)]


def python_path(cls: type) -> str:
    """``module.QualName``: a class's canonical name when no manifest gives another."""
    return f"{cls.__module__}.{cls.__qualname__}"


def simple_name(class_name: str) -> str:
    """Java's ``getSimpleName()`` of a Java or Python class name (``InsertField$Value`` →
    ``Value``, ``pkg.mod.Outer.Inner`` → ``Inner``)."""
    return class_name.rsplit(".", 1)[-1].rsplit("$", 1)[-1]


def kafka_aliases(class_name: str, type_: PluginType) -> list[str]:
    """Kafka's two aliases of a plugin: its simple name, and that name pruned of the
    type's suffix (``PluginUtils.simpleName``/``prunedName``), in that order, deduplicated."""
    simple = simple_name(class_name)
    pos = simple.rfind(type_.suffix)
    pruned = simple[:pos] if pos > 0 else simple
    return [simple] if pruned == simple else [simple, pruned]
