"""The shape of offsets for ``PATCH /connectors/{c}/offsets``, checked before anything runs.

Kafka Connect (KIP-875) takes ``{"offsets": [{"partition": {...}, "offset": {...} | null}]}``.
Sink connectors' partitions are ``{"kafka_topic": str, "kafka_partition": int}`` and their
offsets ``{"kafka_offset": int}``; source connectors' partitions and offsets are the
connector's own JSON objects. A null offset resets that one partition.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from airflow_provider.exceptions import OffsetsShapeError

SINK_PARTITION_KEYS = frozenset({"kafka_topic", "kafka_partition"})


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_sink_entry(where: str, partition: dict, offset: dict | None) -> None:
    if set(partition) != SINK_PARTITION_KEYS:
        raise OffsetsShapeError(f"{where}.partition of a sink connector must have exactly the "
                                f"keys kafka_topic and kafka_partition, got {sorted(partition)}")
    if not isinstance(partition["kafka_topic"], str) or not partition["kafka_topic"]:
        raise OffsetsShapeError(f"{where}.partition.kafka_topic must be a non-empty string")
    if not _is_int(partition["kafka_partition"]) or partition["kafka_partition"] < 0:
        raise OffsetsShapeError(f"{where}.partition.kafka_partition must be a non-negative "
                                f"integer, got {partition['kafka_partition']!r}")
    if offset is None:
        return
    if set(offset) != {"kafka_offset"}:
        raise OffsetsShapeError(f"{where}.offset of a sink connector must have exactly the key "
                                f"kafka_offset, got {sorted(offset)}")
    if not _is_int(offset["kafka_offset"]) or offset["kafka_offset"] < 0:
        raise OffsetsShapeError(f"{where}.offset.kafka_offset must be a non-negative integer, "
                                f"got {offset['kafka_offset']!r}")


def validate_offsets(offsets: Any, connector_type: str | None = None) -> list[dict[str, Any]]:
    """Return ``offsets`` as a list of ``{"partition", "offset"}`` entries, or raise
    :class:`OffsetsShapeError` naming the first bad entry.

    ``offsets`` may be the list itself or a ``GET .../offsets`` body (``{"offsets": [...]}``).
    ``connector_type`` (``"sink"`` / ``"source"``, from the connector's status) enables the
    sink-specific checks.
    """
    if isinstance(offsets, dict) and set(offsets) == {"offsets"}:
        offsets = offsets["offsets"]
    if not isinstance(offsets, Sequence) or isinstance(offsets, str | bytes):
        raise OffsetsShapeError("offsets must be a list of {\"partition\", \"offset\"} objects")
    if not offsets:
        raise OffsetsShapeError("offsets must not be empty (use a reset to clear all offsets)")
    seen: set[str] = set()
    checked: list[dict[str, Any]] = []
    for index, entry in enumerate(offsets):
        where = f"offsets[{index}]"
        if not isinstance(entry, dict) or set(entry) != {"partition", "offset"}:
            keys = sorted(entry) if isinstance(entry, dict) else type(entry).__name__
            raise OffsetsShapeError(
                f"{where} must be an object with exactly the keys partition and offset, "
                f"got {keys}")
        partition, offset = entry["partition"], entry["offset"]
        if not isinstance(partition, dict) or not partition:
            raise OffsetsShapeError(f"{where}.partition must be a non-empty object")
        if offset is not None and not isinstance(offset, dict):
            raise OffsetsShapeError(f"{where}.offset must be an object or null")
        try:
            key = json.dumps(partition, sort_keys=True)
            json.dumps(offset)
        except (TypeError, ValueError) as exc:
            raise OffsetsShapeError(f"{where} is not JSON: {exc}") from None
        if key in seen:
            raise OffsetsShapeError(f"{where}.partition {key} appears more than once")
        seen.add(key)
        if connector_type == "sink":
            _check_sink_entry(where, partition, offset)
        checked.append({"partition": partition, "offset": offset})
    return checked
