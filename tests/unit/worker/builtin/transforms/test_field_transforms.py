"""SMTs and predicates, with Kafka's config names and semantics."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from worker.api import (
    ConfigException,
    DataException,
    Schema,
    SchemaType,
    SinkRecord,
    SourceRecord,
    Struct,
)
from worker.api.data import INT32_SCHEMA, STRING_SCHEMA, Field
from worker.api.logical import OPTIONAL_TIMESTAMP_SCHEMA, TIMESTAMP_SCHEMA
from worker.builtin.transforms.extract_field import ExtractFieldKey, ExtractFieldValue
from worker.builtin.transforms.filter import Filter
from worker.builtin.transforms.hoist_field import HoistFieldKey, HoistFieldValue
from worker.builtin.transforms.insert_field import InsertFieldKey, InsertFieldValue
from worker.builtin.transforms.predicates import HasHeaderKey, RecordIsTombstone, TopicNameMatches
from worker.builtin.transforms.regex_router import RegexRouter
from worker.builtin.transforms.replace_field import ReplaceFieldValue

OPT_STRING = Schema(SchemaType.STRING, optional=True)
OPT_INT32 = Schema(SchemaType.INT32, optional=True)
OPT_INT64 = Schema(SchemaType.INT64, optional=True)
PERSON = Schema(SchemaType.STRUCT, name="Person", version=2,
                fields=(Field("id", 0, INT32_SCHEMA), Field("name", 1, OPT_STRING)))


def configured(cls: type, **configs: str) -> Any:
    transform = cls()
    transform.configure(configs)
    return transform


def sink(value: Any = None, value_schema: Schema | None = None, key: Any = None,
         key_schema: Schema | None = None, topic: str = "orders") -> SinkRecord:
    return SinkRecord(topic, 3, key_schema, key, value_schema, value, 42, timestamp=1000,
                      headers=[("h", b"1")])


def source(value: Any = None, topic: str = "orders") -> SourceRecord:
    return SourceRecord({"p": 1}, {"o": 1}, topic, 0, None, None, None, value, 1000)


def fields(schema: Schema) -> list[tuple[str, Schema]]:
    return [(f.name, f.schema) for f in schema.fields]


# --- RegexRouter ------------------------------------------------------------------------

@pytest.mark.parametrize("regex, replacement, topic, expected", [
    (r"(.*)-(.*)", "$2_$1", "orders-eu", "eu_orders"),
    (r"(?<env>\w+)\.(.*)", "${env}-$2", "prod.orders", "prod-orders"),
    (r"(.*)", r"\$$1", "t", "$t"),
    (r"a|ab", "X", "ab", "Xb"),  # Java re-finds the first match: "a", not "ab"
    (r"(a)", "$10", "a", "a0"),  # "$10" is group 1 then "0": there is no group 10
])
def test_regex_router_renames_matching_topics(regex: str, replacement: str, topic: str,
                                              expected: str) -> None:
    router = configured(RegexRouter, regex=regex, replacement=replacement)
    record = sink("v", topic=topic)
    routed = router.apply(record)
    assert routed.topic == expected
    assert routed.original_topic == topic  # sink offsets stay with the consumed topic
    assert routed.value == "v" and routed.headers == record.headers


def test_regex_router_needs_a_whole_match() -> None:
    router = configured(RegexRouter, regex="orders", replacement="x")
    record = sink(topic="orders-eu")
    assert router.apply(record) is record


@pytest.mark.parametrize("configs, key", [
    ({"regex": "(", "replacement": "x"}, "regex"),
    ({"regex": "(a)", "replacement": "$2"}, "replacement"),
    ({"regex": "(a)", "replacement": "${nope}"}, "replacement"),
    ({"regex": "(a)", "replacement": "x\\"}, "replacement"),
    ({"replacement": "x"}, "regex"),
])
def test_regex_router_rejects_bad_config(configs: dict[str, str], key: str) -> None:
    with pytest.raises(ConfigException) as info:
        configured(RegexRouter, **configs)
    assert info.value.name == key


# --- InsertField ------------------------------------------------------------------------

ALL_INSERTS = {"topic.field": "t", "partition.field": "p", "offset.field": "o",
               "timestamp.field": "ts", "static.field": "s", "static.value": "v"}


def test_insert_field_schemaless() -> None:
    original = {"a": 1}
    result = configured(InsertFieldValue, **ALL_INSERTS).apply(sink(original))
    assert result.value == {"a": 1, "t": "orders", "p": 3, "o": 42, "ts": 1000, "s": "v"}
    assert original == {"a": 1}  # the input is not modified


def test_insert_field_with_struct() -> None:
    transform = configured(InsertFieldValue, **{**ALL_INSERTS, "topic.field": "t!"})
    result = transform.apply(sink(Struct(PERSON, {"id": 1, "name": "a"}), PERSON))
    schema = result.value_schema
    assert schema.name == "Person" and schema.version == 2
    assert fields(schema) == [
        ("id", INT32_SCHEMA), ("name", OPT_STRING), ("t", STRING_SCHEMA), ("p", OPT_INT32),
        ("o", OPT_INT64), ("ts", OPTIONAL_TIMESTAMP_SCHEMA), ("s", OPT_STRING)]
    assert result.value.schema is schema
    assert result.value.values == {
        "id": 1, "name": "a", "t": "orders", "p": 3, "o": 42,
        "ts": dt.datetime(1970, 1, 1, 0, 0, 1, tzinfo=dt.UTC), "s": "v"}


def test_insert_field_required_timestamp_schema() -> None:
    transform = configured(InsertFieldValue, **{"timestamp.field": "ts!"})
    result = transform.apply(sink(Struct(PERSON, {"id": 1}), PERSON))
    assert result.value_schema.field("ts").schema == TIMESTAMP_SCHEMA


def test_insert_field_key_operates_on_the_key() -> None:
    result = configured(InsertFieldKey, **{"topic.field": "t"}).apply(sink("v", key={"k": 1}))
    assert result.key == {"k": 1, "t": "orders"}
    assert result.value == "v"


def test_insert_field_passes_tombstones_and_rejects_other_values() -> None:
    transform = configured(InsertFieldValue, **{"topic.field": "t"})
    tombstone = sink(None)
    assert transform.apply(tombstone) is tombstone
    with pytest.raises(DataException, match=r"Only Map objects supported in absence of schema "
                                            r"for \[field insertion\], found: str"):
        transform.apply(sink("text"))
    with pytest.raises(DataException, match=r"Only Struct objects supported"):
        transform.apply(sink({"a": 1}, PERSON))


def test_insert_offset_needs_a_sink_record() -> None:
    transform = configured(InsertFieldValue, **{"offset.field": "o"})
    with pytest.raises(DataException, match="Only SinkRecord supported"):
        transform.apply(source({"a": 1}))


def test_insert_field_skips_missing_partition() -> None:
    record = SourceRecord(None, None, "t", None, None, None, None, {"a": 1})
    result = configured(InsertFieldValue, **{"partition.field": "p"}).apply(record)
    assert result.value == {"a": 1}


@pytest.mark.parametrize("configs, key", [
    ({}, "topic.field"),
    ({"static.field": "s"}, "static.value"),
])
def test_insert_field_rejects_bad_config(configs: dict[str, str], key: str) -> None:
    with pytest.raises(ConfigException) as info:
        configured(InsertFieldValue, **configs)
    assert info.value.name == key


# --- ExtractField / HoistField ----------------------------------------------------------

def test_extract_field_schemaless_and_null() -> None:
    transform = configured(ExtractFieldValue, field="a")
    assert transform.apply(sink({"a": 5, "b": 6})).value == 5
    assert transform.apply(sink({"b": 6})).value is None
    assert transform.apply(sink(None)).value is None
    with pytest.raises(DataException, match="field extraction"):
        transform.apply(sink([1]))


def test_extract_field_with_struct() -> None:
    transform = configured(ExtractFieldKey, field="name")
    result = transform.apply(sink("v", key=Struct(PERSON, {"id": 1, "name": "ann"}),
                                  key_schema=PERSON))
    assert (result.key, result.key_schema) == ("ann", OPT_STRING)
    with pytest.raises(DataException, match="Unknown field: nope"):
        configured(ExtractFieldKey, field="nope").apply(
            sink("v", key=Struct(PERSON, {"id": 1}), key_schema=PERSON))


def test_extract_field_nested_paths_with_field_syntax_v2() -> None:
    """Kafka's KIP-821 examples: V2 reads a dotted path; V1 reads the name as it is."""
    record = sink({"magic": {"foo": 42}, "magic.foo": "top"})
    assert configured(ExtractFieldValue, field="magic.foo").apply(record).value == "top"
    v2 = configured(ExtractFieldValue, **{"field": "magic.foo", "field.syntax.version": "V2"})
    assert v2.apply(record).value == 42
    assert v2.apply(sink({"magic": 5})).value is None  # a step into a non-map: no value
    quoted = configured(ExtractFieldValue,
                        **{"field": "`magic.foo`", "field.syntax.version": "v2"})
    assert quoted.apply(record).value == "top"

    inner = Schema(SchemaType.STRUCT, fields=(Field("foo", 0, INT32_SCHEMA),))
    outer = Schema(SchemaType.STRUCT, fields=(Field("magic", 0, inner),))
    value = Struct(outer, {"magic": Struct(inner, {"foo": 42})})
    result = v2.apply(sink(value, outer))
    assert (result.value, result.value_schema) == (42, INT32_SCHEMA)
    with pytest.raises(DataException, match="Unknown field: magic.bar"):
        configured(ExtractFieldValue, **{"field": "magic.bar", "field.syntax.version": "V2"}
                   ).apply(sink(value, outer))
    with pytest.raises(ConfigException) as info:
        configured(ExtractFieldValue, **{"field": "a", "field.syntax.version": "V3"})
    assert info.value.name == "field.syntax.version"


def test_extract_field_replaces_null_with_the_default_unless_asked_not_to() -> None:
    with_default = Schema(SchemaType.INT32, optional=True, default=5)
    schema = Schema(SchemaType.STRUCT, fields=(Field("n", 0, with_default),))
    record = sink(Struct(schema, {"n": None}), schema)
    assert configured(ExtractFieldValue, field="n").apply(record).value == 5
    keep_null = configured(ExtractFieldValue,
                           **{"field": "n", "replace.null.with.default": "false"})
    assert keep_null.apply(record).value is None


def test_hoist_field() -> None:
    assert configured(HoistFieldValue, field="line").apply(sink("x")).value == {"line": "x"}
    result = configured(HoistFieldKey, field="id").apply(sink("v", key=7, key_schema=INT32_SCHEMA))
    assert fields(result.key_schema) == [("id", INT32_SCHEMA)]
    assert result.key == Struct(result.key_schema, {"id": 7})


def test_field_is_required() -> None:
    with pytest.raises(ConfigException) as info:
        configured(ExtractFieldValue)
    assert info.value.name == "field"


# --- ReplaceField -----------------------------------------------------------------------

def test_replace_field_schemaless() -> None:
    transform = configured(ReplaceFieldValue, exclude="c", renames="a:x,b:y")
    assert transform.apply(sink({"a": 1, "b": 2, "c": 3})).value == {"x": 1, "y": 2}
    include = configured(ReplaceFieldValue, include="a,c", exclude="c")
    assert include.apply(sink({"a": 1, "b": 2, "c": 3})).value == {"a": 1}
    tombstone = sink(None)
    assert transform.apply(tombstone) is tombstone


def test_replace_field_with_struct() -> None:
    transform = configured(ReplaceFieldValue, exclude="id", renames="name:full_name")
    result = transform.apply(sink(Struct(PERSON, {"id": 1, "name": "ann"}), PERSON))
    assert fields(result.value_schema) == [("full_name", OPT_STRING)]
    assert result.value.values == {"full_name": "ann"}
    assert result.value_schema.name == "Person"


def test_replace_field_rejects_bad_renames() -> None:
    with pytest.raises(ConfigException, match="Invalid rename mapping: a") as info:
        configured(ReplaceFieldValue, renames="a")
    assert info.value.name == "renames"


# --- Filter and predicates --------------------------------------------------------------

def test_filter_drops_every_record() -> None:
    assert Filter().apply(sink("v")) is None


def test_topic_name_matches_needs_a_whole_match() -> None:
    predicate = configured(TopicNameMatches, pattern="orders-.*")
    assert predicate.test(sink(topic="orders-eu")) is True
    assert predicate.test(sink(topic="old-orders-eu")) is False
    with pytest.raises(ConfigException):
        configured(TopicNameMatches, pattern="(")


def test_has_header_key() -> None:
    assert configured(HasHeaderKey, name="h").test(sink("v")) is True
    assert configured(HasHeaderKey, name="other").test(sink("v")) is False


def test_record_is_tombstone() -> None:
    assert RecordIsTombstone().test(sink(None)) is True
    assert RecordIsTombstone().test(sink("v")) is False
