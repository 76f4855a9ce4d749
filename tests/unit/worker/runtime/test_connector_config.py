"""worker.runtime.connector_config: base definitions, enrich() and the cross-key rules."""

from __future__ import annotations

import pytest

from worker.api.config_def import Type
from worker.plugins.registry import PluginRegistry, builtin_registry
from worker.runtime import connector_config as cc

T = "org.apache.kafka.connect.transforms"


@pytest.fixture(scope="module")
def registry() -> PluginRegistry:
    return builtin_registry()


class TestBaseDefinition:
    def test_source_has_common_keys_and_its_own(self) -> None:
        names = cc.base_definition("source").names()

        assert names[:3] == ["name", "connector.class", "tasks.max"]
        assert "topics" not in names and "topics.regex" not in names

    def test_sink_adds_topics_keys(self) -> None:
        names = cc.base_definition("sink").names()

        assert {"topics", "topics.regex"} <= set(names)
        assert names[:3] == ["name", "connector.class", "tasks.max"]

    def test_common_keys_are_in_common_group(self) -> None:
        keys = cc.base_definition("sink").keys

        for name in ("name", "connector.class", "tasks.max", "topics"):
            assert keys[name].group == cc.COMMON_GROUP == "Common"
        assert keys["name"].required and keys["connector.class"].required
        assert keys["tasks.max"].default == 1

    def test_common_rules(self) -> None:
        results = cc.base_definition("source").validate(
            {"name": " ", "connector.class": "X", "tasks.max": "0",
             "errors.tolerance": "some"})

        failing = {k for k, v in results.items() if v.errors}
        assert failing == {"name", "tasks.max", "errors.tolerance"}

    def test_sink_topics_regex_must_compile(self) -> None:
        results = cc.base_definition("sink").validate(
            {"name": "n", "connector.class": "X", "topics.regex": "(open"})

        assert results["topics.regex"].errors


@pytest.mark.parametrize(("raw", "expected"), [
    ("a,b", ["a", "b"]), (" a , b ,", ["a", "b"]), ("", []), (None, []), (" , ", []),
])
def test_aliases(raw: str | None, expected: list[str]) -> None:
    config = {} if raw is None else {"transforms": raw}
    assert cc.aliases(config, "transforms") == expected


class TestEnrich:
    def test_transform_keys_include_its_own_config(self, registry: PluginRegistry) -> None:
        base = cc.base_definition("source")
        config = {"transforms": "route",
                  "transforms.route.type": f"{T}.RegexRouter"}

        enriched, errors = cc.enrich(base, config, registry)

        assert errors == {}
        keys = enriched.keys
        added = [n for n in enriched.names() if n.startswith("transforms.route.")]
        assert added == ["transforms.route.type", "transforms.route.predicate",
                         "transforms.route.negate", "transforms.route.regex",
                         "transforms.route.replacement"]
        assert keys["transforms.route.type"].required
        assert keys["transforms.route.type"].type is Type.CLASS
        assert keys["transforms.route.negate"].default is False
        assert keys["transforms.route.regex"].required
        assert keys["transforms.route.regex"].documentation.startswith("Regular expression")
        # The base definition is not changed.
        assert "transforms.route.type" not in base.names()

    def test_transform_own_key_keeps_type_default_and_validator(
            self, registry: PluginRegistry) -> None:
        enriched, _ = cc.enrich(cc.base_definition("source"), {
            "transforms": "rf", "transforms.rf.type": f"{T}.ReplaceField$Value"}, registry)

        key = enriched.keys["transforms.rf.replace.null.with.default"]
        assert key.type is Type.BOOLEAN and key.default is True
        results = enriched.validate({"name": "n", "connector.class": "C",
                                     "transforms": "rf",
                                     "transforms.rf.type": f"{T}.ReplaceField$Value",
                                     "transforms.rf.replace.null.with.default": "perhaps"})
        assert results["transforms.rf.replace.null.with.default"].errors

    def test_predicate_keys(self, registry: PluginRegistry) -> None:
        enriched, errors = cc.enrich(cc.base_definition("source"), {
            "predicates": "isTemp",
            "predicates.isTemp.type": "TopicNameMatches"}, registry)

        assert errors == {}
        added = [n for n in enriched.names() if n.startswith("predicates.")]
        assert added == ["predicates.isTemp.type", "predicates.isTemp.pattern"]
        assert enriched.keys["predicates.isTemp.pattern"].required

    def test_missing_type_is_left_to_validation(self, registry: PluginRegistry) -> None:
        enriched, errors = cc.enrich(cc.base_definition("source"), {"transforms": "t"},
                                     registry)

        assert errors == {}
        results = enriched.validate({"name": "n", "connector.class": "C", "transforms": "t"})
        assert any("Missing required" in e for e in results["transforms.t.type"].errors)

    def test_enriched_validation_finds_missing_transform_keys(
            self, registry: PluginRegistry) -> None:
        config = {"name": "n", "connector.class": "C", "transforms": "route",
                  "transforms.route.type": "RegexRouter", "transforms.route.regex": "x"}
        enriched, _ = cc.enrich(cc.base_definition("source"), config, registry)

        results = enriched.validate(config)

        assert results["transforms.route.replacement"].errors
        assert not results["transforms.route.regex"].errors

    def test_unknown_transform_type_reported(self, registry: PluginRegistry) -> None:
        enriched, errors = cc.enrich(cc.base_definition("source"), {
            "transforms": "ok,bad",
            "transforms.ok.type": "Filter",
            "transforms.bad.type": "com.example.NoSuchTransform",
        }, registry)

        assert list(errors) == ["transforms.bad.type"]
        assert "Transformation" in errors["transforms.bad.type"]
        assert "com.example.NoSuchTransform" in errors["transforms.bad.type"]
        assert "transforms.bad.type" in enriched.names()  # still described

    def test_plugin_of_wrong_kind_is_reported(self, registry: PluginRegistry) -> None:
        _, errors = cc.enrich(cc.base_definition("source"), {
            "predicates": "p", "predicates.p.type": f"{T}.Filter"}, registry)

        assert "Predicate" in errors["predicates.p.type"]

    def test_group_per_alias_as_in_kafka(self, registry: PluginRegistry) -> None:
        enriched, _ = cc.enrich(cc.base_definition("source"), {
            "transforms": "route", "transforms.route.type": "RegexRouter"}, registry)

        assert enriched.keys["transforms.route.regex"].group == "Transforms: route"


class TestExtraErrors:
    def test_sink_needs_topics_or_regex(self) -> None:
        errors = cc.extra_errors({}, "sink", "All")

        assert list(errors) == ["topics"]
        assert "topics.regex" in errors["topics"]

    def test_sink_blank_topics_count_as_none(self) -> None:
        assert "topics" in cc.extra_errors({"topics": " , ", "topics.regex": " "}, "sink",
                                           "All")

    def test_sink_topics_and_regex_are_exclusive(self) -> None:
        errors = cc.extra_errors({"topics": "a", "topics.regex": "a.*"}, "sink", "All")

        assert "not both" in errors["topics"]

    def test_sink_regex_constructs_librdkafka_refuses(self) -> None:
        errors = cc.extra_errors({"topics.regex": "(?:a|b)-x"}, "sink", "All")

        assert "use plain groups" in errors["topics.regex"]
        assert cc.extra_errors({"topics.regex": "(a|b)-x"}, "sink", "All") == {}

    @pytest.mark.parametrize("config", [{"topics": "a,b"}, {"topics.regex": "a.*"}])
    def test_sink_with_one_of_them_is_fine(self, config: dict[str, str]) -> None:
        assert cc.extra_errors(config, "sink", "All") == {}

    def test_source_has_no_topics_rule(self) -> None:
        assert cc.extra_errors({}, "source", "All") == {}

    @pytest.mark.parametrize("config", [
        {"exactly.once.support": "requested"}, {"transaction.boundary": "poll"},
        {"offsets.storage.topic": " "}])
    def test_source_defaults_of_exactly_once_keys_are_fine(self, config: dict[str, str]
                                                           ) -> None:
        assert cc.extra_errors(config, "source", "All") == {}

    def test_source_exactly_once_requests_are_refused_on_their_keys(self) -> None:
        errors = cc.extra_errors({"exactly.once.support": "Required",
                                  "transaction.boundary": "interval",
                                  "offsets.storage.topic": "my-offsets"}, "source", "All")

        assert errors["exactly.once.support"].startswith(
            "This worker does not have exactly-once source support enabled")
        assert "at least once" in errors["transaction.boundary"]
        assert "not supported" in errors["offsets.storage.topic"]

    def test_exactly_once_keys_are_source_keys(self) -> None:
        source = cc.base_definition("source").keys
        assert source["exactly.once.support"].default == "requested"
        assert source["transaction.boundary"].default == "poll"
        assert "exactly.once.support" not in cc.base_definition("sink").keys

    def test_undefined_predicate_alias(self) -> None:
        errors = cc.extra_errors({"transforms": "f", "transforms.f.predicate": "missing",
                                  "predicates": "other"}, "source", "All")

        assert list(errors) == ["transforms.f.predicate"]
        assert "missing" in errors["transforms.f.predicate"]

    def test_defined_predicate_alias(self) -> None:
        assert cc.extra_errors({"transforms": "f", "transforms.f.predicate": "p",
                                "predicates": " p "}, "source", "All") == {}

    def test_predicate_of_unlisted_transform_is_not_checked(self) -> None:
        assert cc.extra_errors({"transforms.f.predicate": "missing"}, "source", "All") == {}

    def test_override_policy_none_rejects_every_override(self) -> None:
        config = {"producer.override.linger.ms": "5", "consumer.override.max.poll.records": "1",
                  "admin.override.retries": "3", "producer.linger.ms": "not an override"}

        errors = cc.extra_errors(config, "source", "None")

        assert set(errors) == {"producer.override.linger.ms",
                               "consumer.override.max.poll.records", "admin.override.retries"}
        assert all("'None' policy" in m for m in errors.values())
        assert "producer.override.linger.ms" in errors["producer.override.linger.ms"]

    def test_override_policy_all_allows_overrides(self) -> None:
        assert cc.extra_errors({"producer.override.linger.ms": "5"}, "source", "All") == {}

    def test_errors_combine(self) -> None:
        errors = cc.extra_errors({"transforms": "f", "transforms.f.predicate": "nope",
                                  "consumer.override.x": "1"}, "sink", "None")

        assert set(errors) == {"topics", "transforms.f.predicate", "consumer.override.x"}

    def test_override_policy_principal_allows_sasl_settings(self) -> None:
        config = {"producer.override.sasl.jaas.config": "x",
                  "consumer.override.sasl.mechanism": "PLAIN",
                  "admin.override.security.protocol": "SASL_SSL",
                  "producer.override.linger.ms": "5"}

        assert set(cc.extra_errors(config, "source", "Principal")) == \
            {"producer.override.linger.ms"}

    def test_negate_without_predicate(self) -> None:
        errors = cc.extra_errors({"transforms": "f", "transforms.f.type": "Filter",
                                  "transforms.f.negate": "true"}, "source", "All")

        assert "transforms.f.negate" in errors
