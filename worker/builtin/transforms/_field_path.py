"""KIP-821 field paths for the field SMTs: ``field.syntax.version``.

``V1`` (the default) names a top-level field: the configured text is the field name, dots
included. ``V2`` reads it as a dotted path into nested structs or maps; a name containing
dots is wrapped in backticks, and a backtick that closes a name (one followed by a dot or
ending the path) is kept literally when preceded by a backslash::

    a.b            -> ("a", "b")
    `a.b`.c        -> ("a.b", "c")
    `a\\`.b`.c     -> ("a`.b", "c")

Several paths are combined into a trie (``build_trie``); ``StructUpdater`` and
``update_map`` rewrite the values (and schemas) at its leaves and copy everything else.
Where one configured path is a prefix of another, the shorter one wins.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple

from worker.api import ConfigDef, ConfigException, Importance, Schema, SchemaType, Struct, Type
from worker.api.data import Field
from worker.builtin.transforms._util import (
    field_value,
    one_of_ignoring_case,
    require_map,
    require_struct,
)

FIELD_SYNTAX_VERSION_CONFIG = "field.syntax.version"
V1, V2 = "V1", "V2"
FIELD_SYNTAX_VERSION_DOC = (
    "Defines the version of the syntax to access fields. If set to `V1`, then the field paths "
    "are limited to access the elements at the root level of the struct or map. If set to "
    "`V2`, the syntax will support accessing nested elements. To access nested elements, "
    "dotted notation is used. If dots are already included in the field name, then backtick "
    "pairs can be used to wrap field names containing dots. E.g. to access the subfield `baz` "
    "from a field named \"foo.bar\" in a struct/map the following format can be used to "
    "access its elements: \"`foo.bar`.baz\".")
_NESTED_PURPOSE = "nested field access"

Path = tuple[str, ...]


def with_field_syntax_version(config_def: ConfigDef) -> ConfigDef:
    """``config_def`` with the ``field.syntax.version`` key added."""
    return config_def.define(FIELD_SYNTAX_VERSION_CONFIG, Type.STRING, V1, Importance.HIGH,
                             FIELD_SYNTAX_VERSION_DOC, validator=one_of_ignoring_case(V1, V2))


def field_syntax_version(parsed: Mapping[str, Any]) -> str:
    return str(parsed[FIELD_SYNTAX_VERSION_CONFIG]).upper()


def parse_path(text: str, version: str, config_name: str) -> Path:
    """The steps of a configured field path; ConfigException naming ``config_name`` when a
    backtick is not closed."""
    if version != V2:
        return (text,)
    steps: list[str] = []
    i, n = 0, len(text)
    while i < n:
        if text[i] != "`":
            dot = text.find(".", i)
            end = n if dot < 0 else dot
            steps.append(text[i:end])
            i = end + 1
            continue
        opening, start, search = i, i + 1, i + 1
        name = ""
        while True:
            close = text.find("`", search)
            if close < 0:
                raise _incomplete_backticks(text, opening, config_name)
            escaped = text[close - 1] == "\\"
            if close == n - 1:  # the path ends with this backtick
                if escaped:
                    raise _incomplete_backticks(text, opening, config_name)
                steps.append(name + text[start:close])
                i = n
                break
            if text[close + 1] != ".":  # part of the name; look for the closing one
                search = close + 1
                continue
            if escaped:  # "\`." stays in the name as "`."
                name += text[start:close - 1] + "`"
                start = search = close + 1
                continue
            steps.append(name + text[start:close])
            i = close + 2
            break
    if text.endswith("."):
        steps.append("")
    return tuple(steps) or ("",)


def _incomplete_backticks(text: str, position: int, config_name: str) -> ConfigException:
    return ConfigException(config_name, text,
                           f"Incomplete backtick pair in path: [{text}], consider adding a "
                           f"backslash before backtick at position {position} to escape it")


# --- tries of paths ---------------------------------------------------------------------

class Leaf(NamedTuple):
    """The end of a configured path, with what the transform keeps for it."""

    payload: Any


Trie = dict[str, Any]  # name -> Leaf | Trie


def build_trie(entries: Iterable[tuple[Path, Any]]) -> Trie:
    """A trie of paths (in the given order) with a payload at each path's end."""
    root: Trie = {}
    for steps, payload in entries:
        node = root
        for step in steps[:-1]:
            child = node.get(step)
            if isinstance(child, Leaf):  # a shorter path already covers this one
                break
            node = node.setdefault(step, {})
        else:
            node[steps[-1]] = Leaf(payload)
    return root


def update_map(value: Mapping[str, Any], trie: Trie,
               leaf: Callable[[Any, Any], Any]) -> dict[str, Any]:
    """A copy of ``value`` where each path's value ``v`` becomes ``leaf(v, payload)`` (also
    when absent, as Kafka puts null); nested maps on the way are copied, a path through a
    missing or null entry is skipped."""
    updated = dict(value)
    for name, node in trie.items():
        if isinstance(node, Leaf):
            updated[name] = leaf(value.get(name), node.payload)
        else:
            child = value.get(name)
            if child is not None:
                updated[name] = update_map(require_map(child, _NESTED_PURPOSE), node, leaf)
    return updated


class StructUpdater:
    """Rewrites the fields at a trie's leaves in struct schemas and values.

    ``leaf_schema(field_schema, payload)`` gives a leaf field's new schema (None: schemas are
    kept) and ``leaf_value(field_schema, value, payload)`` its new value. Values of the other
    fields are copied, nulls replaced by defaults when ``replace_null_with_default``.
    """

    def __init__(self, trie: Trie, leaf_value: Callable[[Schema, Any, Any], Any],
                 leaf_schema: Callable[[Schema, Any], Schema] | None,
                 replace_null_with_default: bool) -> None:
        self._trie = trie
        self._leaf_value = leaf_value
        self._leaf_schema = leaf_schema
        self._replace_null = replace_null_with_default

    def schema(self, schema: Schema) -> Schema:
        """``schema`` with the leaves' schemas replaced; name, version, doc, parameters and
        optionality kept, a default value converted."""
        return schema if self._leaf_schema is None else self._schema(schema, self._trie)

    def _schema(self, schema: Schema, trie: Trie) -> Schema:
        assert self._leaf_schema is not None
        fields = []
        for field in schema.fields:
            node = trie.get(field.name)
            field_schema = field.schema
            if isinstance(node, Leaf):
                field_schema = self._leaf_schema(field_schema, node.payload)
            elif node is not None and field_schema.type is SchemaType.STRUCT:
                field_schema = self._schema(field_schema, node)
            fields.append(Field(field.name, field.index, field_schema))
        updated = dataclasses.replace(schema, fields=tuple(fields), default=None)
        if schema.default is not None:
            default = self._struct(require_struct(schema.default, _NESTED_PURPOSE), updated,
                                   trie)
            updated = dataclasses.replace(updated, default=default)
        return updated

    def value(self, struct: Struct, updated_schema: Schema) -> Struct:
        return self._struct(struct, updated_schema, self._trie)

    def _struct(self, struct: Struct, updated_schema: Schema, trie: Trie) -> Struct:
        values: dict[str, Any] = {}
        for field in struct.schema.fields:
            node = trie.get(field.name)
            value = field_value(struct, field, self._replace_null)
            if isinstance(node, Leaf):
                value = self._leaf_value(field.schema, value, node.payload)
            elif node is not None and value is not None and \
                    field.schema.type is SchemaType.STRUCT:
                nested = updated_schema.field(field.name)
                assert nested is not None
                value = self._struct(require_struct(value, _NESTED_PURPOSE), nested.schema, node)
            values[field.name] = value
        return Struct(updated_schema, values)

