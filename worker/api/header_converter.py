"""Kafka's ``org.apache.kafka.connect.storage.SimpleHeaderConverter``, the default
``header.converter``.

A header value is written as its string form (``Values.convertToString``:
``worker.api.values_format``) in UTF-8, with no schema: ``42`` → ``b"42"``, ``True``
→ ``b"true"``, ``{"a": 1}`` → ``b'{"a":1}'``, bytes → Base64; None stays a null header. On the
sink side the UTF-8 text is parsed back with Kafka's type inference
(``Values.parseString``: ``worker.api.values``), so ``b"42"`` reads as INT8 42 and
``b"hello"`` as the STRING ``"hello"``. Bytes that are not UTF-8 come back as BYTES.

Headers and the bytes a record carries in Kafka are what Kafka Connect's own
SimpleHeaderConverter writes and reads, so Java and Python workers and clients agree.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from worker.api import ConfigDef, ConnectHeaders, DataException, Schema, SchemaAndValue
from worker.api.connector import DEFAULT_VERSION
from worker.api.data import BYTES_SCHEMA
from worker.api.headers import HeaderConverter
from worker.api.values import convert_to_string, parse_string

log = logging.getLogger(__name__)

__all__ = ["SimpleHeaderConverter", "encode_headers", "decode_headers"]

_NULL = SchemaAndValue(None, None)


class SimpleHeaderConverter:
    """Headers as UTF-8 strings; schemas inferred when read (Kafka's SimpleHeaderConverter)."""

    def version(self) -> str:
        return DEFAULT_VERSION

    def config(self) -> ConfigDef:
        return ConfigDef()

    def configure(self, configs: Mapping[str, Any], is_key: bool = False) -> None:
        """Nothing to configure (Kafka's has no settings either)."""

    def from_connect_header(self, topic: str, header_key: str, schema: Schema | None,
                            value: Any) -> bytes | None:
        if value is None:
            return None
        text = convert_to_string(schema, value)
        assert text is not None
        return text.encode("utf-8")

    def to_connect_header(self, topic: str, header_key: str, value: bytes | None
                          ) -> SchemaAndValue:
        if value is None:
            return _NULL
        try:
            text = bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            # Java decodes with replacement characters and parses that; the raw bytes keep
            # more of the header (Kafka falls back to them for any parse failure, too).
            log.warning("Header '%s' on topic '%s' is not UTF-8; using the byte array",
                        header_key, topic)
            return SchemaAndValue(BYTES_SCHEMA, bytes(value))
        try:
            return parse_string(text)
        except Exception:  # noqa: BLE001 - any parse failure: the bytes, as Kafka does
            log.warning("Failed to deserialize value for header '%s' on topic '%s', so "
                        "using byte array", header_key, topic, exc_info=True)
            return SchemaAndValue(BYTES_SCHEMA, bytes(value))

    def close(self) -> None:
        """Nothing to release."""


_DEFAULT = SimpleHeaderConverter()


def encode_headers(headers: Iterable[Any], converter: HeaderConverter | None = None,
                   topic: str = "") -> list[tuple[str, bytes | None]]:
    """A record's headers as librdkafka's ``(key, bytes)`` list, each value written by the
    header ``converter`` (None: SimpleHeaderConverter, the worker's default).

    ``headers`` holds Header objects (a ConnectHeaders) or ``(key, value)`` pairs.
    DataException if the converter fails, naming the header.
    """
    convert = (converter or _DEFAULT).from_connect_header
    out: list[tuple[str, bytes | None]] = []
    for header in headers:
        schema = getattr(header, "schema", None)
        key, value = header
        try:
            out.append((key, convert(topic, key, schema, value)))
        except Exception as exc:
            raise DataException(f"Failed to convert header '{key}' on topic '{topic}': "
                                f"{exc}") from exc
    return out


def decode_headers(headers: Iterable[tuple[str, bytes | None]],
                   converter: HeaderConverter | None, topic: str) -> ConnectHeaders:
    """Consumed ``(key, bytes)`` headers as ConnectHeaders, each read by the header
    ``converter`` (None: SimpleHeaderConverter)."""
    convert = (converter or _DEFAULT).to_connect_header
    out = ConnectHeaders()
    for key, value in headers:
        out.add_schema_and_value(key, convert(topic, key, value))
    return out
