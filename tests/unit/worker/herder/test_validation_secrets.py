"""Issue #41: connector validation never shows a piece of a resolved or secret value.

A value resolved from a ``${file:...}`` placeholder (a real FileConfigProvider over a file
of the test's) is split on commas and each element trimmed by what reads list-typed keys
(``transforms``, ``topics``, ``topic.creation.groups``, a Cast ``spec``) or parsed further
(``field:type``): those pieces must not appear in key names, groups, documentation or
messages, whatever their case; values stay as written.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.unit.worker.herder.conftest import MinimalHerder
from worker.config.worker_config import WorkerConfig
from worker.errors import BadRequestError, ConfigValidationError
from worker.herder.models import ConfigInfos
from worker.plugins.registry import builtin_registry
from worker.storage.memory import MemoryConfigBackingStore, MemoryStatusBackingStore

FILE_SINK = "org.apache.kafka.connect.file.FileStreamSinkConnector"
FILE_SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"
CAST = "org.apache.kafka.connect.transforms.Cast$Value"
ALIASES = "AliasOne-5521, AliasTwo-7730"
TOPICS = "TopicOne-1902,TopicTwo-4476"
SPEC = "f1:int8, field2:SpecType-3318"
NEEDLES = ("AliasOne-5521", "AliasTwo-7730", "TopicOne-1902", "TopicTwo-4476",
           "SpecType-3318", "Literal-Pw-6650")


@pytest.fixture
def secrets_file(tmp_path: Path) -> Path:
    path = tmp_path / "values.properties"
    path.write_text(f"aliases={ALIASES}\ntopics={TOPICS}\ndlq={TOPICS.split(',')[0]}\n"
                    f"spec={SPEC}\n", encoding="utf-8")
    return path


@pytest.fixture
def herder() -> MinimalHerder:
    config = WorkerConfig({"config.providers": "file",
                           "config.providers.file.class": "FileConfigProvider"})
    return MinimalHerder(config, builtin_registry(), MemoryConfigBackingStore(),
                  MemoryStatusBackingStore())


def at(path: Path, key: str) -> str:
    return f"${{file:{path}:{key}}}"


def answer_text(infos: ConfigInfos) -> str:
    """Every text of the answer, as the REST layer would serialise it."""
    return json.dumps({
        "name": infos.name, "groups": infos.groups,
        "configs": [{"definition": vars(c.definition), "value": vars(c.value)}
                    for c in infos.configs]})


def assert_no_piece(text: str) -> None:
    lowered = text.lower()
    shown = [needle for needle in NEEDLES if needle.lower() in lowered]
    assert shown == [], text


def values(infos: ConfigInfos) -> dict[str, Mapping[str, Any]]:
    return {c.value.name: vars(c.value) for c in infos.configs}


def test_aliases_from_a_placeholder_do_not_show_in_key_names_or_groups(
        herder: MinimalHerder, secrets_file: Path) -> None:
    config = {"name": "s", "connector.class": FILE_SINK, "file": "/dev/null",
              "topics": at(secrets_file, "topics"),
              "errors.deadletterqueue.topic.name": at(secrets_file, "dlq"),
              "transforms": at(secrets_file, "aliases"),
              "consumer.override.sasl.password": "Literal-Pw-6650"}
    infos = herder.validate_connector_config(config)
    assert_no_piece(answer_text(infos))
    found = values(infos)
    # Each alias's keys are there, their alias hidden; both miss their type.
    hidden_types = [c for c in infos.configs if c.value.name == "transforms.[hidden].type"]
    assert len(hidden_types) == 2
    assert all(c.value.errors for c in hidden_types)
    assert all(c.definition.group == "Transforms: [hidden]" for c in hidden_types)
    assert "Transforms: [hidden]" in infos.groups
    # Values are shown as written: the placeholders.
    assert found["transforms"]["value"] == at(secrets_file, "aliases")
    assert found["topics"]["value"] == at(secrets_file, "topics")
    # The DLQ rule quotes the topics: the whole DLQ value as its placeholder, the rest hidden.
    [dlq_error] = found["topics"]["errors"]
    assert at(secrets_file, "dlq") in dlq_error and "[hidden]" in dlq_error
    # What a failed create says is built from the same, scrubbed answer.
    with pytest.raises(ConfigValidationError) as caught:
        herder.validate_or_raise(config)
    assert_no_piece(str(caught.value))
    assert_no_piece(json.dumps(caught.value.errors))


def test_parts_of_a_list_element_are_hidden_in_the_messages_of_its_key(
        herder: MinimalHerder, secrets_file: Path) -> None:
    config = {"name": "s", "connector.class": FILE_SOURCE, "topic": "t", "file": "/dev/null",
              "transforms": "cast", "transforms.cast.type": CAST,
              "transforms.cast.spec": at(secrets_file, "spec")}
    infos = herder.validate_connector_config(config)
    assert_no_piece(answer_text(infos))
    spec = values(infos)["transforms.cast.spec"]
    assert spec["value"] == at(secrets_file, "spec")
    assert any("Invalid type found in casting spec: [hidden]" in e for e in spec["errors"])


def test_the_same_spec_written_in_clear_is_quoted(herder: MinimalHerder) -> None:
    # Nothing to hide: the caller wrote it.
    config = {"name": "s", "connector.class": FILE_SOURCE, "topic": "t", "file": "/dev/null",
              "transforms": "cast", "transforms.cast.type": CAST,
              "transforms.cast.spec": SPEC}
    errors = values(herder.validate_connector_config(config))["transforms.cast.spec"]["errors"]
    assert any("SpecType-3318" in e for e in errors)


def test_topic_creation_groups_from_a_placeholder(herder: MinimalHerder, secrets_file: Path
                                                  ) -> None:
    config = {"name": "s", "connector.class": FILE_SOURCE, "topic": "t", "file": "/dev/null",
              "topic.creation.groups": at(secrets_file, "aliases")}
    infos = herder.validate_connector_config(config)
    assert_no_piece(answer_text(infos))
    assert "Topic Creation: [hidden]" in infos.groups


def test_an_unknown_class_from_a_placeholder_is_not_quoted(herder: MinimalHerder, tmp_path: Path
                                                           ) -> None:
    path = tmp_path / "c.properties"
    path.write_text("class=com.example.Secret-Class-8812, other\n", encoding="utf-8")
    with pytest.raises(BadRequestError) as caught:
        herder.validate_connector_config({"name": "s",
                                          "connector.class": at(path, "class")})
    assert "secret-class-8812" not in str(caught.value).lower()
    assert caught.value.__cause__ is None


def test_a_placeholder_that_does_not_resolve_is_named_in_full(
        herder: MinimalHerder, secrets_file: Path) -> None:
    # Nothing was resolved, so nothing is hidden: the error names the placeholder and path.
    for key in ("file", "consumer.override.sasl.password"):
        config = {"name": "s", "connector.class": FILE_SINK, "topics": "t",
                  key: at(secrets_file, "no.such.key")}
        errors = values(herder.validate_connector_config(config))[key]["errors"]
        assert errors == [f"cannot resolve {at(secrets_file, 'no.such.key')}: config "
                          f"provider 'file' has no key 'no.such.key' at path {secrets_file}"]
