"""The new built-in SMTs through the worker's connector config validation (enrich + validate)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

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


# --- cost linear in the number of transforms and predicates (issue #41) ---------------------

def many(n: int) -> dict[str, str]:
    """A config with ``n`` RegexRouter transforms, each gated by a predicate of its own."""
    config = {"name": "n", "connector.class": "C",
              "transforms": ",".join(f"t{i}" for i in range(n)),
              "predicates": ",".join(f"p{i}" for i in range(n))}
    for i in range(n):
        config |= {f"transforms.t{i}.type": f"{T}.RegexRouter",
                   f"transforms.t{i}.regex": "a", f"transforms.t{i}.replacement": "b",
                   f"transforms.t{i}.predicate": f"p{i}",
                   f"predicates.p{i}.type": f"{T}.predicates.TopicNameMatches",
                   f"predicates.p{i}.pattern": "x"}
    return config


def keys_copied(registry: PluginRegistry, monkeypatch: pytest.MonkeyPatch, n: int) -> int:
    """How many config keys building the definitions of ``many(n)`` copied (every
    ConfigDef built from a mapping copies it: merge() does)."""
    copied = 0
    real_init = cc.ConfigDef.__init__

    def counting(self: cc.ConfigDef, keys: Any = None) -> None:
        nonlocal copied
        copied += len(keys or {})
        real_init(self, keys)

    with monkeypatch.context() as patch:
        patch.setattr(cc.ConfigDef, "__init__", counting)
        enriched, errors = cc.enrich(cc.base_definition("source"), many(n), registry)
    assert errors == {}
    assert len(enriched.keys) > 6 * n  # type, predicate, negate, regex, replacement; pattern
    return copied


def test_enrich_copies_keys_in_proportion_to_the_aliases(
        registry: PluginRegistry, monkeypatch: pytest.MonkeyPatch) -> None:
    # Merging each alias's keys into the whole definition copied it once per alias:
    # 10,000 transforms took minutes. Ten times the aliases, about ten times the copies.
    small, large = (keys_copied(registry, monkeypatch, n) for n in (50, 500))
    assert large <= 11 * small


def test_an_alias_listed_twice_counts_once(registry: PluginRegistry) -> None:
    config = {**many(1), "transforms": "t0, t0"}
    enriched, errors = cc.enrich(cc.base_definition("source"), config, registry)
    assert errors == {}
    assert [k for k in enriched.keys if k.startswith("transforms.t0.")] == [
        "transforms.t0.type", "transforms.t0.predicate", "transforms.t0.negate",
        "transforms.t0.regex", "transforms.t0.replacement"]


def test_extra_errors_reads_the_predicate_list_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real = cc.aliases

    def counting(config: Mapping[str, str], key: str) -> list[str]:
        calls.append(key)
        return real(config, key)

    monkeypatch.setattr(cc, "aliases", counting)
    config = {**many(300), "transforms.t7.predicate": "nope"}
    errors = cc.extra_errors(config, "source", "All")
    assert errors == {"transforms.t7.predicate": "Predicate 'nope' is not defined in "
                                                 "'predicates'"}
    assert sorted(calls) == ["predicates", "transforms"]
