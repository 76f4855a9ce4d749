"""Kafka's ``org.apache.kafka.connect.transforms.RegexRouter``: renames a record's topic
with a Java regular expression and replacement.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from worker.api import (
    NO_DEFAULT,
    ConfigDef,
    Importance,
    Transformation,
    Type,
)
from worker.api.transforms import R
from worker.builtin._regex import JavaReplacement, java_regex, valid_java_regex

_TOPIC_CACHE_SIZE = 1024

REGEX_ROUTER_CONFIG_DEF = (
    ConfigDef()
    .define("regex", Type.STRING, NO_DEFAULT, Importance.HIGH,
            "Regular expression to use for matching.", validator=valid_java_regex)
    .define("replacement", Type.STRING, NO_DEFAULT, Importance.HIGH, "Replacement string.")
)


class RegexRouter(Transformation):
    """Renames the topic when the whole topic name matches ``regex`` (Java regex and
    replacement syntax: ``$1``, ``${name}``, ``(?<name>...)``)."""

    def config(self) -> ConfigDef:
        return REGEX_ROUTER_CONFIG_DEF

    def configure(self, configs: Mapping[str, Any]) -> None:
        parsed = REGEX_ROUTER_CONFIG_DEF.parse(configs)
        self._regex = java_regex(parsed["regex"], "regex")
        self._replacement = JavaReplacement(parsed["replacement"], self._regex, "replacement")
        self._topics: dict[str, str | None] = {}  # topic -> new topic; None = unchanged

    def apply(self, record: R) -> R | None:
        topic = record.topic
        try:
            routed = self._topics[topic]
        except KeyError:
            routed = self._route(topic)
            if len(self._topics) >= _TOPIC_CACHE_SIZE:
                self._topics.clear()
            self._topics[topic] = routed
        return record if routed is None else record.new_record(topic=routed)  # type: ignore

    def _route(self, topic: str) -> str | None:
        if self._regex.fullmatch(topic) is None:
            return None
        # Java's replaceFirst re-finds the first match, which need not span the whole name.
        match = self._regex.search(topic)
        assert match is not None
        return topic[:match.start()] + self._replacement.expand(match) + topic[match.end():]
