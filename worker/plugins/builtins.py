"""The built-in plugins: canonical names (Kafka's Java names where Kafka has the plugin),
types and the Python classes behind them.

The ``connect-plane`` distribution declares exactly these in its entry points
(``pyproject.toml``, one group per type), so discovery finds them as it finds any installed
plugin: in the worker's environment (``classpath``), from manifests. A unit test holds the two
lists equal. ``builtin_registry()`` registers them directly, for code that needs the
built-ins without discovery (unit tests, worker properties' config providers).
"""

from __future__ import annotations

import builtins
import importlib
from dataclasses import dataclass

from worker.plugins.types import PluginType

_T = "org.apache.kafka.connect.transforms"
_PROVIDERS = "org.apache.kafka.common.config.provider"
_BASIC_AUTH = "org.apache.kafka.connect.rest.basic.auth.extension"


@dataclass(frozen=True)
class BuiltinPlugin:
    name: str
    type: PluginType
    target: str  # module:Class

    def load(self) -> builtins.type:  # the field ``type`` shadows the builtin here
        module, _, attr = self.target.partition(":")
        cls: builtins.type = getattr(importlib.import_module(module), attr)
        return cls


def _both_converters(name: str, target: str) -> list[BuiltinPlugin]:
    return [BuiltinPlugin(name, PluginType.CONVERTER, target),
            BuiltinPlugin(name, PluginType.HEADER_CONVERTER, target)]


BUILTINS: tuple[BuiltinPlugin, ...] = (
    BuiltinPlugin("org.apache.kafka.connect.file.FileStreamSourceConnector", PluginType.SOURCE,
                  "worker.connectors.file_stream:FileStreamSourceConnector"),
    BuiltinPlugin("org.apache.kafka.connect.file.FileStreamSinkConnector", PluginType.SINK,
                  "worker.connectors.file_stream:FileStreamSinkConnector"),
    BuiltinPlugin("worker.connectors.generator.SequenceGeneratorConnector", PluginType.SOURCE,
                  "worker.connectors.generator:SequenceGeneratorConnector"),
    *_both_converters("org.apache.kafka.connect.json.JsonConverter",
                      "worker.connectors.converters:JsonConverter"),
    *_both_converters("org.apache.kafka.connect.storage.StringConverter",
                      "worker.connectors.converters:StringConverter"),
    *_both_converters("org.apache.kafka.connect.converters.ByteArrayConverter",
                      "worker.connectors.converters:ByteArrayConverter"),
    # A header converter only (Kafka's is no Converter either): the default header.converter.
    BuiltinPlugin("org.apache.kafka.connect.storage.SimpleHeaderConverter",
                  PluginType.HEADER_CONVERTER,
                  "worker.connectors.header_converter:SimpleHeaderConverter"),
    *(plugin for name in ("Long", "Integer", "Short", "Float", "Double", "Boolean")
      for plugin in _both_converters(f"org.apache.kafka.connect.converters.{name}Converter",
                                     f"worker.connectors.number_converters:{name}Converter")),
    BuiltinPlugin(f"{_T}.RegexRouter", PluginType.TRANSFORMATION,
                  "worker.connectors.transforms:RegexRouter"),
    BuiltinPlugin(f"{_T}.Filter", PluginType.TRANSFORMATION,
                  "worker.connectors.transforms:Filter"),
    *(BuiltinPlugin(f"{_T}.{base}${variant}", PluginType.TRANSFORMATION,
                    f"worker.connectors.transforms:{base}{variant}")
      for base in ("InsertField", "ExtractField", "HoistField", "ReplaceField")
      for variant in ("Key", "Value")),
    *(BuiltinPlugin(f"{_T}.{base}${variant}", PluginType.TRANSFORMATION,
                    f"worker.connectors.{module}:{base}{variant}")
      for base, module in (("Cast", "transforms_cast"), ("Flatten", "transforms_flatten"),
                           ("MaskField", "transforms_mask"),
                           ("SetSchemaMetadata", "transforms_schema"),
                           ("TimestampConverter", "transforms_timestamp"))
      for variant in ("Key", "Value")),
    BuiltinPlugin(f"{_T}.TimestampRouter", PluginType.TRANSFORMATION,
                  "worker.connectors.transforms_timestamp:TimestampRouter"),
    BuiltinPlugin(f"{_T}.ValueToKey", PluginType.TRANSFORMATION,
                  "worker.connectors.transforms_schema:ValueToKey"),
    *(BuiltinPlugin(f"{_T}.{name}", PluginType.TRANSFORMATION,
                    f"worker.connectors.transforms_headers:{name.replace('$', '')}")
      for name in ("DropHeaders", "HeaderFrom$Key", "HeaderFrom$Value", "InsertHeader")),
    *(BuiltinPlugin(f"{_T}.predicates.{name}", PluginType.PREDICATE,
                    f"worker.connectors.predicates:{name}")
      for name in ("TopicNameMatches", "HasHeaderKey", "RecordIsTombstone")),
    *(BuiltinPlugin(f"{_PROVIDERS}.{name}", PluginType.CONFIG_PROVIDER,
                    f"worker.connectors.config_providers:{name}")
      for name in ("FileConfigProvider", "DirectoryConfigProvider", "EnvVarConfigProvider")),
    BuiltinPlugin(f"{_BASIC_AUTH}.BasicAuthSecurityRestExtension", PluginType.REST_EXTENSION,
                  "worker.connectors.basic_auth:BasicAuthSecurityRestExtension"),
)

#: The packages of the worker's environment that module scanning imports: the built-ins.
#: The rest of the environment (Airflow, Spark, ...) is found through manifests only —
#: importing every module of it would take minutes and run code nobody asked for.
CLASSPATH_SCAN_PACKAGES: tuple[str, ...] = ("worker.connectors",)
