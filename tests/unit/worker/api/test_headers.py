"""Typed headers (``worker.api.headers``) and how records hold them."""

from __future__ import annotations

import datetime as dt
import decimal

import pytest

from worker.api import (
    ConnectHeaders,
    DataException,
    Header,
    Schema,
    SchemaAndValue,
    SchemaType,
    SinkRecord,
    SourceRecord,
    Struct,
)
from worker.api.data import STRING_SCHEMA, struct_schema

INT8 = Schema(SchemaType.INT8)
INT32 = Schema(SchemaType.INT32)
OPTIONAL_INT32 = Schema(SchemaType.INT32, optional=True)


def keys_of(headers: ConnectHeaders) -> list[str]:
    return [h.key for h in headers]


class TestHeader:
    def test_is_immutable_and_compares_by_key_schema_and_value(self) -> None:
        header = Header("a", INT32, 1)
        with pytest.raises(AttributeError, match="immutable"):
            header.value = 2  # type: ignore[misc]
        assert header == Header("a", INT32, 1)
        assert header != Header("a", None, 1)
        assert header != Header("a", INT32, 2)
        assert header != Header("b", INT32, 1)
        assert hash(header) == hash(Header("a", None, {"unhashable": []}).rename("a"))

    def test_unpacks_as_the_old_key_value_pair(self) -> None:
        key, value = Header("trace", STRING_SCHEMA, "abc")
        assert (key, value) == ("trace", "abc")
        assert dict(ConnectHeaders([("a", 1), ("a", 2), ("b", 3)])) == {"a": 2, "b": 3}

    def test_with_value_and_rename_make_new_headers(self) -> None:
        header = Header("a", INT32, 1)
        assert header.with_value(STRING_SCHEMA, "x") == Header("a", STRING_SCHEMA, "x")
        assert header.rename("b") == Header("b", INT32, 1)
        assert header == Header("a", INT32, 1)

    def test_a_key_is_required(self) -> None:
        with pytest.raises(TypeError, match="Header key cannot be null"):
            Header(None, None, 1)  # type: ignore[arg-type]


class TestConnectHeaders:
    def test_an_ordered_multi_map(self) -> None:
        headers = ConnectHeaders().add("a", 1).add_string("b", "x").add("a", 2, INT32)
        assert keys_of(headers) == ["a", "b", "a"]
        assert len(headers) == 3 and headers
        assert headers.last_with_name("a") == Header("a", INT32, 2)
        assert headers.last_with_name("missing") is None
        assert headers.all_with_name("a") == [Header("a", None, 1), Header("a", INT32, 2)]
        assert headers[1] == Header("b", STRING_SCHEMA, "x")
        assert not ConnectHeaders()

    def test_remove_retain_latest_apply_and_clear(self) -> None:
        def build() -> ConnectHeaders:
            return ConnectHeaders([("a", 1), ("b", 2), ("a", 3), ("b", 4), ("c", 5)])
        assert [tuple(h) for h in build().remove("a")] == [("b", 2), ("b", 4), ("c", 5)]
        assert [tuple(h) for h in build().retain_latest()] == [("a", 3), ("b", 4), ("c", 5)]
        assert [tuple(h) for h in build().retain_latest("a")] == [
            ("b", 2), ("a", 3), ("b", 4), ("c", 5)]
        doubled = build().apply(lambda h: h.with_value(None, h.value * 10), key="b")
        assert [tuple(h) for h in doubled] == [("a", 1), ("b", 20), ("a", 3), ("b", 40),
                                               ("c", 5)]
        odd = build().apply(lambda h: h if h.value % 2 else None)
        assert [tuple(h) for h in odd] == [("a", 1), ("a", 3), ("c", 5)]
        assert len(build().clear()) == 0

    def test_duplicate_is_independent_and_equality_is_by_content(self) -> None:
        original = ConnectHeaders().add_int("a", 1)
        copy = original.duplicate()
        assert copy == original and copy is not original
        copy.add_int("b", 2)
        assert keys_of(original) == ["a"] and copy != original
        assert ConnectHeaders() == ConnectHeaders([])
        assert ConnectHeaders([("a", 1)]) != ConnectHeaders([("a", 2)])
        with pytest.raises(TypeError):
            hash(original)

    def test_typed_helpers_give_kafkas_schemas(self) -> None:
        headers = (ConnectHeaders().add_boolean("bool", True).add_byte("i8", 1)
                   .add_short("i16", 300).add_int("i32", 1 << 20).add_long("i64", 1 << 40)
                   .add_float("f32", 1.5).add_double("f64", 2.5).add_bytes("raw", b"\x00")
                   .add_string("null", None))
        types = {h.key: (h.schema.type, h.schema.optional) for h in headers if h.schema}
        assert types == {
            "bool": (SchemaType.BOOLEAN, False), "i8": (SchemaType.INT8, False),
            "i16": (SchemaType.INT16, False), "i32": (SchemaType.INT32, False),
            "i64": (SchemaType.INT64, False), "f32": (SchemaType.FLOAT32, False),
            "f64": (SchemaType.FLOAT64, False), "raw": (SchemaType.BYTES, False),
            "null": (SchemaType.STRING, True)}

    def test_logical_helpers(self) -> None:
        headers = (ConnectHeaders().add_decimal("d", decimal.Decimal("1.50"))
                   .add_date("date", dt.date(2024, 5, 1)).add_time("time", dt.time(12, 30))
                   .add_timestamp("ts", dt.datetime(2024, 5, 1, tzinfo=dt.UTC)))
        decimal_schema = headers.last_with_name("d").schema
        assert decimal_schema.name == "org.apache.kafka.connect.data.Decimal"
        assert decimal_schema.parameters == {"scale": "2"}
        assert [h.schema.name.rsplit(".", 1)[1] for h in list(headers)[1:]] == [
            "Date", "Time", "Timestamp"]
        with pytest.raises(DataException, match="not compatible"):
            ConnectHeaders().add_date("date", dt.time(1))

    def test_structured_helpers_check_the_schema_type(self) -> None:
        array = Schema(SchemaType.ARRAY, value_schema=INT32)
        point = struct_schema({"x": INT32})
        headers = (ConnectHeaders().add_list("l", [1, 2], array)
                   .add_map("m", {"a": 1}, Schema(SchemaType.MAP, key_schema=STRING_SCHEMA,
                                                  value_schema=INT32))
                   .add_struct("s", Struct(point, {"x": 1})).add_list("none", None, array))
        assert headers.last_with_name("s").schema is point
        assert headers.last_with_name("none") == Header("none", None, None)
        with pytest.raises(DataException, match="Expecting ARRAY but instead found MAP"):
            ConnectHeaders().add_list("l", [1], Schema(SchemaType.MAP))

    def test_add_with_a_schema_checks_the_value(self) -> None:
        with pytest.raises(DataException, match="null value requires an optional schema"):
            ConnectHeaders().add("a", None, INT32)
        ConnectHeaders().add("a", None, OPTIONAL_INT32)
        with pytest.raises(DataException, match="not compatible with the schema"):
            ConnectHeaders().add("a", "1", INT32)
        with pytest.raises(DataException, match="not compatible"):
            ConnectHeaders().add_byte("a", 128)  # beyond Java's byte
        with pytest.raises(DataException, match="not compatible"):
            ConnectHeaders().add_boolean("a", 1)  # type: ignore[arg-type]
        with pytest.raises(DataException, match="not compatible"):
            ConnectHeaders().add_string("a", 5)  # type: ignore[arg-type]
        headers = ConnectHeaders().add_schema_and_value("a", SchemaAndValue(INT8, 5))
        assert headers.add_schema_and_value("b", None).last_with_name("b") == \
            Header("b", None, None)
        assert headers[0] == Header("a", INT8, 5)

    def test_rejects_what_is_not_a_header(self) -> None:
        with pytest.raises(TypeError, match="Header or a"):
            ConnectHeaders(["abc"])  # type: ignore[list-item]
        with pytest.raises(TypeError, match="null header"):
            ConnectHeaders([None])  # type: ignore[list-item]


class TestRecordHeaders:
    def test_the_old_pairs_still_work(self) -> None:
        record = SourceRecord(None, None, "t", value=1, headers=[("trace", b"x"), ("n", 3)])
        assert isinstance(record.headers, ConnectHeaders)
        assert [(k, v) for k, v in record.headers] == [("trace", b"x"), ("n", 3)]
        assert record.headers[0] == Header("trace", None, b"x")

    def test_a_record_without_headers_creates_none_until_read(self) -> None:
        record = SinkRecord("t", 0, None, None, None, "v", 5)
        assert not record.has_headers()
        assert record._headers is None
        copy = record.new_record(value="w")
        assert copy._headers is None  # a transformation's copy does not create them either
        assert record.headers == ConnectHeaders()
        record.headers.add_int("a", 1)  # mutable, as Kafka's
        assert record.has_headers() and keys_of(record.headers) == ["a"]

    def test_a_copy_has_its_own_headers(self) -> None:
        record = SourceRecord(None, None, "t", headers=[("a", 1)])
        copy = record.new_record(topic="u")
        copy.headers.add("b", 2)
        assert keys_of(record.headers) == ["a"] and keys_of(copy.headers) == ["a", "b"]
        replaced = record.new_record(headers=ConnectHeaders([("z", 0)]))
        assert keys_of(replaced.headers) == ["z"]

    def test_a_given_connect_headers_is_kept(self) -> None:
        headers = ConnectHeaders([("a", 1)])
        record = SinkRecord("t", 0, None, None, None, None, 0, headers=headers)
        assert record.headers is headers
        record.headers = [("b", 2)]
        assert keys_of(record.headers) == ["b"]
        record.headers = None
        assert not record.has_headers()

    def test_equality_treats_no_headers_as_empty_headers(self) -> None:
        plain = SinkRecord("t", 0, None, None, None, "v", 1)
        empty = SinkRecord("t", 0, None, None, None, "v", 1, headers=ConnectHeaders())
        assert plain == empty
        with_header = SinkRecord("t", 0, None, None, None, "v", 1, headers=[("a", 1)])
        assert with_header != plain
        assert with_header == SinkRecord("t", 0, None, None, None, "v", 1,
                                         headers=[Header("a", None, 1)])
        assert "ConnectHeader(key='a'" in repr(with_header)
