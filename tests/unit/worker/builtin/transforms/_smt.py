"""Helpers for the SMT tests: configured transforms and sample records."""

from __future__ import annotations

from typing import Any

from worker.api import Schema, SchemaType, SinkRecord
from worker.api.data import Field


def configured(cls: type, **configs: Any) -> Any:
    """``cls`` configured with ``configs`` (dotted keys via ``**{"a.b": ...}``)."""
    transform = cls()
    transform.configure(configs)
    return transform


def sink(value: Any = None, value_schema: Schema | None = None, key: Any = None,
         key_schema: Schema | None = None, topic: str = "orders",
         timestamp: int | None = 1000) -> SinkRecord:
    return SinkRecord(topic, 3, key_schema, key, value_schema, value, 42, timestamp=timestamp,
                      headers=[("h", b"1")])


def struct_schema(*fields: tuple[str, Schema], **options: Any) -> Schema:
    return Schema(SchemaType.STRUCT, fields=tuple(Field(n, i, s) for i, (n, s) in
                                                  enumerate(fields)), **options)


def fields(schema: Schema) -> list[tuple[str, Schema]]:
    return [(f.name, f.schema) for f in schema.fields]
