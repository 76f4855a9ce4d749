"""Single Message Transformations and the predicates that gate them."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, TypeVar

from worker.api.config_def import ConfigDef
from worker.api.connector import DEFAULT_VERSION
from worker.api.records import ConnectRecord

R = TypeVar("R", bound=ConnectRecord)


class Transformation(ABC):
    def version(self) -> str:
        return DEFAULT_VERSION

    def config(self) -> ConfigDef:
        return ConfigDef()

    def configure(self, configs: Mapping[str, Any]) -> None:
        """Configure with the transform's own keys (``transforms.<alias>.`` stripped)."""

    @abstractmethod
    def apply(self, record: R) -> R | None:
        """Return the transformed record, or None to drop it."""

    def close(self) -> None:
        """Release resources."""


class Predicate(ABC):
    def version(self) -> str:
        return DEFAULT_VERSION

    def config(self) -> ConfigDef:
        return ConfigDef()

    def configure(self, configs: Mapping[str, Any]) -> None:
        """Configure with the predicate's own keys (``predicates.<alias>.`` stripped)."""

    @abstractmethod
    def test(self, record: ConnectRecord) -> bool: ...

    def close(self) -> None:
        """Release resources."""
