"""worker.api.data: struct_schema (mapping and keyword forms), Struct field access."""

from __future__ import annotations

import pytest

from worker.api.data import (
    BOOLEAN_SCHEMA,
    INT32_SCHEMA,
    INT64_SCHEMA,
    OPTIONAL_STRING_SCHEMA,
    STRING_SCHEMA,
    Field,
    Schema,
    SchemaType,
    Struct,
    struct_schema,
)


def field_names(schema: Schema) -> list[str]:
    return [f.name for f in schema.fields]


class TestStructSchemaMapping:
    def test_fields_called_name_and_optional(self) -> None:
        schema = struct_schema({"name": STRING_SCHEMA, "optional": BOOLEAN_SCHEMA},
                               name="com.example.Flag", optional=True)

        assert schema.type is SchemaType.STRUCT
        assert schema.name == "com.example.Flag"
        assert schema.optional is True
        assert schema.fields == (Field("name", 0, STRING_SCHEMA),
                                 Field("optional", 1, BOOLEAN_SCHEMA))

    def test_mapping_order_is_field_order(self) -> None:
        schema = struct_schema({"z": INT32_SCHEMA, "a": STRING_SCHEMA, "m": INT64_SCHEMA})

        assert field_names(schema) == ["z", "a", "m"]
        assert [f.index for f in schema.fields] == [0, 1, 2]
        assert schema.field("a") == Field("a", 1, STRING_SCHEMA)

    def test_field_names_need_not_be_identifiers(self) -> None:
        schema = struct_schema({"first-name": STRING_SCHEMA, "class": INT32_SCHEMA})

        assert field_names(schema) == ["first-name", "class"]

    def test_mapping_without_name_is_anonymous_and_required(self) -> None:
        schema = struct_schema({"id": INT32_SCHEMA})

        assert schema.name is None
        assert schema.optional is False

    def test_empty_mapping_gives_struct_without_fields(self) -> None:
        assert struct_schema({}, name="Empty").fields == ()

    def test_mapping_and_keyword_fields_together_are_refused(self) -> None:
        with pytest.raises(TypeError, match="either as a mapping or as keyword"):
            struct_schema({"a": INT32_SCHEMA}, b=INT32_SCHEMA)

    def test_non_schema_field_is_refused_with_its_name(self) -> None:
        with pytest.raises(TypeError, match="'age'"):
            struct_schema({"age": int})  # type: ignore[dict-item]


class TestStructSchemaKeywordForm:
    """The original signature keeps working (backward compatibility)."""

    def test_positional_name_with_keyword_fields(self) -> None:
        schema = struct_schema("com.example.Point", x=INT32_SCHEMA, y=INT32_SCHEMA)

        assert schema.name == "com.example.Point"
        assert schema.optional is False
        assert schema.fields == (Field("x", 0, INT32_SCHEMA), Field("y", 1, INT32_SCHEMA))

    def test_positional_name_and_optional(self) -> None:
        schema = struct_schema("p", True, id=INT32_SCHEMA)

        assert (schema.name, schema.optional) == ("p", True)
        assert field_names(schema) == ["id"]

    def test_keyword_name_and_optional(self) -> None:
        schema = struct_schema(name="p", optional=True, id=INT32_SCHEMA)

        assert (schema.name, schema.optional) == ("p", True)
        assert field_names(schema) == ["id"]

    def test_field_called_fields_is_a_field(self) -> None:
        # The first parameter is positional-only, so "fields=" names a field.
        schema = struct_schema("p", fields=INT32_SCHEMA)

        assert schema.fields == (Field("fields", 0, INT32_SCHEMA),)

    def test_no_arguments_gives_anonymous_empty_struct(self) -> None:
        assert struct_schema() == Schema(SchemaType.STRUCT)

    def test_name_given_twice_is_refused(self) -> None:
        with pytest.raises(TypeError, match="name"):
            struct_schema("a", name="b")

    def test_keyword_field_must_be_schema(self) -> None:
        with pytest.raises(TypeError, match="'id'"):
            struct_schema("p", id="int32")  # type: ignore[arg-type]

    def test_both_forms_build_equal_schemas(self) -> None:
        assert struct_schema("p", a=INT32_SCHEMA, b=OPTIONAL_STRING_SCHEMA) == \
            struct_schema({"a": INT32_SCHEMA, "b": OPTIONAL_STRING_SCHEMA}, name="p")


class TestStruct:
    def test_put_and_get_field_called_name(self) -> None:
        schema = struct_schema({"id": INT32_SCHEMA, "name": OPTIONAL_STRING_SCHEMA}, name="U")
        value = Struct(schema).put("id", 7).put("name", "ada")

        assert value.get("id") == 7
        assert value.get("name") == "ada"

    def test_put_unknown_field_raises(self) -> None:
        value = Struct(struct_schema({"id": INT32_SCHEMA}))

        with pytest.raises(KeyError, match="nope"):
            value.put("nope", 1)
        assert value.values == {}

    def test_get_unset_field_is_none(self) -> None:
        assert Struct(struct_schema({"id": INT32_SCHEMA})).get("id") is None
