"""The new built-in SMTs through the worker's connector config validation (enrich + validate)."""

from __future__ import annotations

import pytest

from worker.plugins.registry import PluginRegistry, builtin_registry
from worker.runtime import connector_config as cc

T = "org.apache.kafka.connect.transforms"

VALID = [
    ("Cast$Key", {"spec": "int32"}),
    ("Cast$Value", {"spec": "a:int64,b:string", "field.syntax.version": "V2"}),
    ("Flatten$Key", {}),
    ("Flatten$Value", {"delimiter": "_"}),
    ("MaskField$Key", {"fields": "a"}),
    ("MaskField$Value", {"fields": "a,b", "replacement": "***"}),
    ("SetSchemaMetadata$Key", {"schema.name": "n"}),
    ("SetSchemaMetadata$Value", {"schema.version": "3"}),
    ("TimestampConverter$Key", {"target.type": "unix", "unix.precision": "seconds"}),
    ("TimestampConverter$Value", {"target.type": "string", "format": "yyyy-MM-dd", "field": "t"}),
    ("TimestampRouter", {"timestamp.format": "yyyy-MM"}),
    ("ValueToKey", {"fields": "id"}),
]
INVALID = [
    ("Cast$Value", {"spec": "a:bytes"}, "spec"),
    ("Cast$Value", {"spec": "a:int8", "field.syntax.version": "V9"}, "field.syntax.version"),
    ("MaskField$Value", {"fields": ""}, "fields"),
    ("MaskField$Value", {"fields": "a", "replacement": ""}, "replacement"),
    ("SetSchemaMetadata$Value", {"schema.version": "x"}, "schema.version"),
    ("TimestampConverter$Value", {"target.type": "Instant"}, "target.type"),
    ("TimestampConverter$Value", {"target.type": "string", "format": "ww"}, "format"),
    ("TimestampConverter$Value", {"target.type": "unix", "unix.precision": "days"},
     "unix.precision"),
    ("TimestampRouter", {"timestamp.format": "yyyy-bb"}, "timestamp.format"),
    ("ValueToKey", {}, "fields"),
]


@pytest.fixture(scope="module")
def registry() -> PluginRegistry:
    return builtin_registry()


def errors(registry: PluginRegistry, type_name: str, own: dict[str, str]) -> dict[str, list[str]]:
    config = {"name": "n", "connector.class": "C", "transforms": "t",
              "transforms.t.type": f"{T}.{type_name}",
              **{f"transforms.t.{k}": v for k, v in own.items()}}
    enriched, enrich_errors = cc.enrich(cc.base_definition("source"), config, registry)
    assert enrich_errors == {}
    return {k: v.errors for k, v in enriched.validate(config).items() if v.errors}


@pytest.mark.parametrize("type_name, own", VALID)
def test_valid_configs(registry: PluginRegistry, type_name: str, own: dict[str, str]) -> None:
    assert errors(registry, type_name, own) == {}


@pytest.mark.parametrize("type_name, own, key", INVALID)
def test_invalid_configs(registry: PluginRegistry, type_name: str, own: dict[str, str],
                         key: str) -> None:
    assert list(errors(registry, type_name, own)) == [f"transforms.t.{key}"]


def test_every_new_transform_is_covered() -> None:
    names = {n for n, _ in VALID}
    assert names == {f"{b}${v}" for b in ("Cast", "Flatten", "MaskField", "SetSchemaMetadata",
                                          "TimestampConverter") for v in ("Key", "Value")} | \
        {"TimestampRouter", "ValueToKey"}
