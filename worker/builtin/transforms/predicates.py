"""Kafka's SMT predicates: TopicNameMatches, HasHeaderKey and RecordIsTombstone."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from worker.api import NO_DEFAULT, ConfigDef, Importance, Predicate, Type
from worker.api.config_def import non_empty_string
from worker.api.records import ConnectRecord
from worker.builtin._regex import java_regex, valid_java_regex


def _non_empty_java_regex(name: str, value: Any) -> None:
    non_empty_string()(name, value)
    valid_java_regex(name, value)


TOPIC_NAME_MATCHES_CONFIG_DEF = ConfigDef().define(
    "pattern", Type.STRING, NO_DEFAULT, Importance.MEDIUM,
    "A Java regular expression for matching against the name of a record's topic.",
    validator=_non_empty_java_regex)

HAS_HEADER_KEY_CONFIG_DEF = ConfigDef().define(
    "name", Type.STRING, NO_DEFAULT, Importance.MEDIUM, "The header name.",
    validator=non_empty_string())


class TopicNameMatches(Predicate):
    """True for records whose whole topic name matches ``pattern``."""

    def config(self) -> ConfigDef:
        return TOPIC_NAME_MATCHES_CONFIG_DEF

    def configure(self, configs: Mapping[str, Any]) -> None:
        self._pattern = java_regex(TOPIC_NAME_MATCHES_CONFIG_DEF.parse(configs)["pattern"],
                                   "pattern")

    def test(self, record: ConnectRecord) -> bool:
        return record.topic is not None and self._pattern.fullmatch(record.topic) is not None


class HasHeaderKey(Predicate):
    """True for records with at least one header named ``name``."""

    def config(self) -> ConfigDef:
        return HAS_HEADER_KEY_CONFIG_DEF

    def configure(self, configs: Mapping[str, Any]) -> None:
        self._name = HAS_HEADER_KEY_CONFIG_DEF.parse(configs)["name"]

    def test(self, record: ConnectRecord) -> bool:
        name = self._name
        return any(key == name for key, _ in record.headers)


class RecordIsTombstone(Predicate):
    """True for records whose value is None."""

    def test(self, record: ConnectRecord) -> bool:
        return record.value is None
