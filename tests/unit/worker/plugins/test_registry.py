"""Plugin registry: canonical names, Kafka's aliases, import paths and errors."""

from __future__ import annotations

import dataclasses
import sys
import textwrap
from pathlib import Path

import pytest

from worker.builtin.config_providers import (
    DirectoryConfigProvider,
    EnvVarConfigProvider,
    FileConfigProvider,
)
from worker.builtin.connectors.file_stream import FileStreamSinkConnector, FileStreamSourceConnector
from worker.builtin.connectors.generator import SequenceGeneratorConnector
from worker.builtin.converters.json_converter import JsonConverter
from worker.builtin.converters.string_bytes import ByteArrayConverter, StringConverter
from worker.builtin.transforms import (
    extract_field,
    filter,
    hoist_field,
    insert_field,
    predicates,
    regex_router,
    replace_field,
)
from worker.errors import PluginNotFoundError
from worker.plugins.registry import (
    CONNECTOR_CONFIG_TYPES,
    PluginDesc,
    PluginRegistry,
    PluginType,
    builtin_registry,
)

T = "org.apache.kafka.connect.transforms"
JAVA_NAMES = [
    ("org.apache.kafka.connect.file.FileStreamSourceConnector", FileStreamSourceConnector,
     PluginType.SOURCE),
    ("org.apache.kafka.connect.file.FileStreamSinkConnector", FileStreamSinkConnector,
     PluginType.SINK),
    ("org.apache.kafka.connect.json.JsonConverter", JsonConverter, PluginType.CONVERTER),
    ("org.apache.kafka.connect.storage.StringConverter", StringConverter, PluginType.CONVERTER),
    ("org.apache.kafka.connect.converters.ByteArrayConverter", ByteArrayConverter,
     PluginType.CONVERTER),
    (f"{T}.RegexRouter", regex_router.RegexRouter, PluginType.TRANSFORMATION),
    (f"{T}.Filter", filter.Filter, PluginType.TRANSFORMATION),
    (f"{T}.InsertField$Key", insert_field.InsertFieldKey, PluginType.TRANSFORMATION),
    (f"{T}.InsertField$Value", insert_field.InsertFieldValue, PluginType.TRANSFORMATION),
    (f"{T}.ExtractField$Key", extract_field.ExtractFieldKey, PluginType.TRANSFORMATION),
    (f"{T}.ExtractField$Value", extract_field.ExtractFieldValue, PluginType.TRANSFORMATION),
    (f"{T}.HoistField$Key", hoist_field.HoistFieldKey, PluginType.TRANSFORMATION),
    (f"{T}.HoistField$Value", hoist_field.HoistFieldValue, PluginType.TRANSFORMATION),
    (f"{T}.ReplaceField$Key", replace_field.ReplaceFieldKey, PluginType.TRANSFORMATION),
    (f"{T}.ReplaceField$Value", replace_field.ReplaceFieldValue, PluginType.TRANSFORMATION),
    (f"{T}.predicates.TopicNameMatches", predicates.TopicNameMatches, PluginType.PREDICATE),
    (f"{T}.predicates.HasHeaderKey", predicates.HasHeaderKey, PluginType.PREDICATE),
    (f"{T}.predicates.RecordIsTombstone", predicates.RecordIsTombstone, PluginType.PREDICATE),
]
ALIASES = [
    ("FileStreamSource", FileStreamSourceConnector), ("FileStreamSourceConnector",
                                                       FileStreamSourceConnector),
    ("FileStreamSink", FileStreamSinkConnector), ("FileStreamSinkConnector",
                                                   FileStreamSinkConnector),
    ("JsonConverter", JsonConverter), ("Json", JsonConverter),
    ("StringConverter", StringConverter), ("String", StringConverter),
    ("ByteArrayConverter", ByteArrayConverter), ("ByteArray", ByteArrayConverter),
    ("RegexRouter", regex_router.RegexRouter), ("Filter", filter.Filter),
    ("InsertFieldValue", insert_field.InsertFieldValue),
    ("TopicNameMatches", predicates.TopicNameMatches),
    ("HasHeaderKey", predicates.HasHeaderKey),
    ("RecordIsTombstone", predicates.RecordIsTombstone),
    ("SequenceGenerator", SequenceGeneratorConnector),
    ("SequenceGeneratorConnector", SequenceGeneratorConnector),
]


@pytest.fixture
def registry() -> PluginRegistry:
    return builtin_registry()


@pytest.mark.parametrize("name, cls, type_", JAVA_NAMES, ids=[n for n, _, _ in JAVA_NAMES])
def test_java_names_resolve(registry: PluginRegistry, name: str, cls: type,
                            type_: PluginType) -> None:
    desc = registry.resolve(name, type_)
    assert (desc.class_name, desc.plugin_class, desc.type) == (name, cls, type_)


@pytest.mark.parametrize("alias, cls", ALIASES, ids=[a for a, _ in ALIASES])
def test_aliases_resolve(registry: PluginRegistry, alias: str, cls: type) -> None:
    assert registry.resolve(alias).plugin_class is cls


def test_converters_are_header_converters_too(registry: PluginRegistry) -> None:
    desc = registry.resolve("JsonConverter", {PluginType.HEADER_CONVERTER})
    assert (desc.type, desc.plugin_class) == (PluginType.HEADER_CONVERTER, JsonConverter)
    assert registry.resolve("Json", PluginType.CONVERTER).type is PluginType.CONVERTER


@pytest.mark.parametrize("name", ["Value", "Key"])
def test_ambiguous_simple_names_do_not_resolve(registry: PluginRegistry, name: str) -> None:
    # Java's simple name of every InsertField$Value, ExtractField$Value, ... is "Value".
    with pytest.raises(PluginNotFoundError):
        registry.resolve(name)


def test_python_paths_resolve_to_the_registered_plugin(registry: PluginRegistry) -> None:
    dotted = registry.resolve("worker.builtin.connectors.file_stream.FileStreamSourceConnector",
                              PluginType.SOURCE)
    colon = registry.resolve("worker.builtin.converters.string_bytes:StringConverter",
                             PluginType.CONVERTER)
    assert dotted.class_name == "org.apache.kafka.connect.file.FileStreamSourceConnector"
    assert colon.class_name == "org.apache.kafka.connect.storage.StringConverter"


def test_generator_canonical_name_is_its_python_path(registry: PluginRegistry) -> None:
    desc = registry.resolve("SequenceGenerator", PluginType.SOURCE)
    assert desc.class_name == "worker.connectors.generator.SequenceGeneratorConnector"
    assert "SequenceGenerator" in desc.aliases


PLUGIN_MODULE = """
from worker.api import SinkConnector

class MySink(SinkConnector):
    def start(self, props): pass
    def task_class(self): return None
    def task_configs(self, max_tasks): return []
    def stop(self): pass
    def version(self): return "9.9"

NOT_A_PLUGIN = 1
"""


def write_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str,
                 source: str) -> Path:
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(source))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, name, raising=False)
    return path


def test_unregistered_class_imports_lazily_and_is_cached(
        registry: PluginRegistry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_module(tmp_path, monkeypatch, "cp_test_plugin", PLUGIN_MODULE)
    desc = registry.resolve("cp_test_plugin.MySink", {PluginType.SOURCE, PluginType.SINK})
    assert (desc.class_name, desc.type, desc.version) == (
        "cp_test_plugin.MySink", PluginType.SINK, "9.9")
    # With the module gone from disk and sys.modules, only the cache can answer.
    path.unlink()
    del sys.modules["cp_test_plugin"]
    assert registry.resolve("cp_test_plugin.MySink").plugin_class is desc.plugin_class
    # Imported plugins are not installed plugins: they are not listed.
    assert "cp_test_plugin.MySink" not in [d.class_name for d in registry.plugins()]


def test_registering_an_imported_class_makes_its_canonical_name_win(
        registry: PluginRegistry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_module(tmp_path, monkeypatch, "cp_test_plugin3", PLUGIN_MODULE)
    imported = registry.resolve("cp_test_plugin3.MySink")
    assert imported.class_name == "cp_test_plugin3.MySink"
    registry.register(imported.plugin_class, PluginType.SINK, "com.example.MySink")
    assert registry.resolve("cp_test_plugin3.MySink").class_name == "com.example.MySink"
    assert registry.resolve("MySink").class_name == "com.example.MySink"


def test_import_of_the_wrong_kind_is_not_found(
        registry: PluginRegistry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_module(tmp_path, monkeypatch, "cp_test_plugin2", PLUGIN_MODULE)
    with pytest.raises(PluginNotFoundError, match="implements Converter"):
        registry.resolve("cp_test_plugin2.MySink", PluginType.CONVERTER)
    with pytest.raises(PluginNotFoundError, match="cp_test_plugin2.NOT_A_PLUGIN"):
        registry.resolve("cp_test_plugin2.NOT_A_PLUGIN")


def test_broken_modules_are_reported(
        registry: PluginRegistry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_module(tmp_path, monkeypatch, "cp_broken", "raise RuntimeError('boom')\n")
    write_module(tmp_path, monkeypatch, "cp_needs_dep", "import cp_missing_dependency\n")
    with pytest.raises(PluginNotFoundError, match="boom"):
        registry.resolve("cp_broken.Anything")
    with pytest.raises(PluginNotFoundError, match="cp_missing_dependency"):
        registry.resolve("cp_needs_dep.Anything")


def test_unknown_connector_message_matches_kafka(registry: PluginRegistry) -> None:
    with pytest.raises(PluginNotFoundError) as info:
        registry.resolve("com.example.NoSuchConnector", {PluginType.SOURCE, PluginType.SINK})
    message = str(info.value)
    assert message.startswith("Failed to find any class that implements Connector and which "
                              "name matches com.example.NoSuchConnector, available connectors "
                              "are: ")
    assert "org.apache.kafka.connect.file.FileStreamSinkConnector" in message


def test_wrong_type_is_not_found(registry: PluginRegistry) -> None:
    with pytest.raises(PluginNotFoundError, match="implements Connector and which name "
                                                  "matches JsonConverter"):
        registry.resolve("JsonConverter", PluginType.SOURCE)
    with pytest.raises(PluginNotFoundError, match="implements Predicate"):
        registry.resolve("RegexRouter", PluginType.PREDICATE)


def test_plugins_listing(registry: PluginRegistry) -> None:
    names = [d.class_name for d in registry.plugins()]
    assert names == sorted(names)
    # 3 connectors, 9 converters listed once per type (converter, header_converter),
    # SimpleHeaderConverter (a header converter only), 26 SMTs and 3 predicates.
    assert len(registry.plugins()) == 3 + 9 * 2 + 1 + 26 + 3
    connectors = registry.plugins({PluginType.SOURCE, PluginType.SINK})
    assert [(d.class_name, d.type) for d in connectors] == [
        ("org.apache.kafka.connect.file.FileStreamSinkConnector", PluginType.SINK),
        ("org.apache.kafka.connect.file.FileStreamSourceConnector", PluginType.SOURCE),
        ("worker.connectors.generator.SequenceGeneratorConnector", PluginType.SOURCE)]


def test_new_instance_builds_fresh_objects(registry: PluginRegistry) -> None:
    first = registry.new_instance("FileStreamSource", PluginType.SOURCE)
    second = registry.new_instance("FileStreamSource", PluginType.SOURCE)
    assert isinstance(first, FileStreamSourceConnector) and first is not second


def test_connector_type(registry: PluginRegistry) -> None:
    assert registry.connector_type(registry.resolve("FileStreamSource")) == "source"
    assert registry.connector_type(registry.resolve("FileStreamSink")) == "sink"
    with pytest.raises(ValueError):
        registry.connector_type(registry.resolve("JsonConverter"))


def test_each_builtin_registry_is_independent() -> None:
    first, second = builtin_registry(), builtin_registry()
    first.register(SequenceGeneratorConnector, PluginType.SOURCE, "custom.Name")
    assert first.resolve("custom.Name").plugin_class is SequenceGeneratorConnector
    with pytest.raises(PluginNotFoundError):
        second.resolve("custom.Name")


def test_a_colliding_alias_becomes_ambiguous(registry: PluginRegistry) -> None:
    other = type("JsonConverter", (StringConverter,), {})
    registry.register(other, PluginType.CONVERTER, "com.example.JsonConverter")
    with pytest.raises(PluginNotFoundError):
        registry.resolve("JsonConverter")
    assert registry.resolve("org.apache.kafka.connect.json.JsonConverter").plugin_class \
        is JsonConverter
    assert registry.resolve("com.example.JsonConverter").plugin_class is other


def test_register_checks_the_type(registry: PluginRegistry) -> None:
    with pytest.raises(TypeError):
        registry.register(JsonConverter, PluginType.SOURCE)


def test_plugin_type_values_and_frozen_desc(registry: PluginRegistry) -> None:
    # Kafka's PluginType.toString(): the enum name lower-cased (CONFIGPROVIDER there).
    assert [t.value for t in PluginType] == [
        "source", "sink", "converter", "header_converter", "transformation", "predicate",
        "configprovider", "rest_extension"]
    assert PluginType.CONFIG_PROVIDER.interface_name == "ConfigProvider"
    assert PluginType.REST_EXTENSION.interface_name == "ConnectRestExtension"
    desc = registry.resolve("FileStreamSource")
    assert isinstance(desc, PluginDesc)
    with pytest.raises(dataclasses.FrozenInstanceError):
        desc.version = "x"  # type: ignore[misc]


# --- config providers ---------------------------------------------------------------------

P = "org.apache.kafka.common.config.provider"
PROVIDERS = [(f"{P}.FileConfigProvider", FileConfigProvider, ("File", "FileConfigProvider")),
             (f"{P}.DirectoryConfigProvider", DirectoryConfigProvider,
              ("Directory", "DirectoryConfigProvider")),
             (f"{P}.EnvVarConfigProvider", EnvVarConfigProvider,
              ("EnvVar", "EnvVarConfigProvider"))]


@pytest.mark.parametrize("java_name, cls, aliases", PROVIDERS, ids=[p[0] for p in PROVIDERS])
def test_config_providers_resolve_by_java_name_and_kafkas_aliases(
        registry: PluginRegistry, java_name: str, cls: type, aliases: tuple[str, ...]) -> None:
    desc = registry.resolve(java_name, PluginType.CONFIG_PROVIDER)
    assert (desc.class_name, desc.type, desc.plugin_class) == (
        java_name, PluginType.CONFIG_PROVIDER, cls)
    for alias in aliases:
        assert registry.resolve(alias, PluginType.CONFIG_PROVIDER) is desc
    assert set(aliases) <= set(registry.aliases(desc))
    python_name = f"{cls.__module__}.{cls.__qualname__}"
    assert registry.resolve(python_name, PluginType.CONFIG_PROVIDER) is desc


def test_a_custom_config_provider_resolves_by_import_path(
        registry: PluginRegistry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_module(tmp_path, monkeypatch, "cp_test_provider", """
        from worker.api import ConfigData, ConfigProvider

        class VaultConfigProvider(ConfigProvider):
            def get(self, path, keys=None):
                return ConfigData({})
    """)
    desc = registry.resolve("cp_test_provider.VaultConfigProvider", PluginType.CONFIG_PROVIDER)
    assert desc.type is PluginType.CONFIG_PROVIDER
    assert desc.class_name == "cp_test_provider.VaultConfigProvider"
    with pytest.raises(PluginNotFoundError, match="implements Connector"):
        registry.resolve("cp_test_provider.VaultConfigProvider", PluginType.SINK)


def test_config_providers_are_found_only_when_asked_for(registry: PluginRegistry) -> None:
    # Kafka's /connector-plugins lists and describes the plugin types connector configs
    # name; config providers are worker plugins and are not among them.
    assert PluginType.CONFIG_PROVIDER not in CONNECTOR_CONFIG_TYPES
    listed = {d.type for d in registry.plugins()}
    assert listed == set(CONNECTOR_CONFIG_TYPES)
    providers = registry.plugins({PluginType.CONFIG_PROVIDER})
    assert [d.class_name for d in providers] == [
        f"{P}.DirectoryConfigProvider", f"{P}.EnvVarConfigProvider", f"{P}.FileConfigProvider"]
    with pytest.raises(PluginNotFoundError):
        registry.resolve("FileConfigProvider")
    with pytest.raises(PluginNotFoundError, match="implements ConfigProvider and which name "
                                                  "matches JsonConverter"):
        registry.resolve("JsonConverter", PluginType.CONFIG_PROVIDER)


def test_the_file_alias_does_not_collide(registry: PluginRegistry) -> None:
    # "File" prunes FileConfigProvider; the FileStream connectors keep their own aliases.
    assert registry.resolve("FileStreamSink").plugin_class is FileStreamSinkConnector
    assert registry.resolve("File", PluginType.CONFIG_PROVIDER).plugin_class \
        is FileConfigProvider
