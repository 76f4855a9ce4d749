"""The transformation chain of a connector (``transforms``, with optional predicates)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from worker.api.transforms import Predicate, Transformation
from worker.plugins.registry import PluginRegistry, PluginType
from worker.runtime.connector_config import aliases
from worker.util.props import strip_prefix


class TransformationChain:
    """Applies each transformation in order; a None result drops the record."""

    def __init__(self, stages: list[tuple[Transformation, Predicate | None, bool]]) -> None:
        self._stages = stages

    @classmethod
    def from_config(cls, config: Mapping[str, str], registry: PluginRegistry
                    ) -> TransformationChain:
        predicates: dict[str, Predicate] = {}
        for alias in aliases(config, "predicates"):
            prefix = f"predicates.{alias}."
            predicate = registry.new_instance(config[prefix + "type"], PluginType.PREDICATE)
            predicate.configure(strip_prefix(config, prefix))
            predicates[alias] = predicate
        stages: list[tuple[Transformation, Predicate | None, bool]] = []
        for alias in aliases(config, "transforms"):
            prefix = f"transforms.{alias}."
            transform = registry.new_instance(config[prefix + "type"],
                                              PluginType.TRANSFORMATION)
            own = strip_prefix(config, prefix)
            predicate_alias = own.pop("predicate", None)
            negate = own.pop("negate", "false").strip().lower() == "true"
            own.pop("type", None)
            transform.configure(own)
            stages.append((transform, predicates.get(predicate_alias or ""), negate))
        return cls(stages)

    def __bool__(self) -> bool:
        return bool(self._stages)

    def __len__(self) -> int:
        return len(self._stages)

    def transform_class(self, index: int) -> type:
        """The class of the ``index``-th transformation (for error reports)."""
        return type(self._stages[index][0])

    def apply_stage(self, index: int, record: Any) -> Any:
        """Apply the ``index``-th transformation alone (with its predicate), as the error
        handler does stage by stage when a record failed (``worker.runtime.errors.handling``)."""
        transform, predicate, negate = self._stages[index]
        if predicate is not None and predicate.test(record) == negate:
            return record
        return transform.apply(record)

    def apply(self, record: Any) -> Any:
        for transform, predicate, negate in self._stages:
            if predicate is not None and predicate.test(record) == negate:
                continue
            record = transform.apply(record)
            if record is None:
                return None
        return record

    def close(self) -> None:
        for transform, predicate, _ in self._stages:
            transform.close()
            if predicate is not None:
                predicate.close()

