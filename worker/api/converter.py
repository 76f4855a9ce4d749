"""Converters turn Connect data into bytes for Kafka and back (key, value, headers)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any

from worker.api.config_def import ConfigDef
from worker.api.connector import DEFAULT_VERSION
from worker.api.data import Schema, SchemaAndValue


class Converter(ABC):
    def version(self) -> str:
        return DEFAULT_VERSION

    def config(self) -> ConfigDef:
        return ConfigDef()

    def configure(self, configs: Mapping[str, Any], is_key: bool) -> None:
        """Configure with the converter's own keys (``key.converter.`` prefix stripped)."""

    @abstractmethod
    def from_connect_data(self, topic: str, schema: Schema | None, value: Any) -> bytes | None:
        """Serialize one key or value."""

    @abstractmethod
    def to_connect_data(self, topic: str, data: bytes | None) -> SchemaAndValue:
        """Deserialize one key or value."""

    def close(self) -> None:
        """Release resources."""
