"""Bodies of the KIP-875 offsets endpoints, named after Kafka Connect's entities.

``{"offsets": [{"partition": {...}, "offset": {...}}]}`` is both the answer of
``GET /connectors/{c}/offsets`` (``ConnectorOffsetsResponse``) and the body of ``PATCH``
(``OffsetsBody``); ``{"message": ...}`` (``MessageResponse``) answers ``PATCH`` and
``DELETE``.

The request models forbid unknown fields and accept only JSON objects (or null) for
``partition`` and ``offset``, as Jackson does for Kafka's entities; a body of the wrong shape
is therefore rejected before the herder sees it (with Kafka's status for such bodies, see
``worker.rest.errors``). What the values inside may be is the herder's business, which is
also why ``partition`` may be null or absent here: the herder answers that with Kafka's 400.
"""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict

from worker.herder.models import ConnectorOffset
from worker.rest.datamodels.base import BodyModel, ResponseModel


def _document_partition_required(schema: dict[str, Any]) -> None:
    # Null or absent partitions get Kafka's 400 from the herder; the document says a valid
    # request has one.
    schema["required"] = ["partition"]
    schema["properties"]["partition"] = {"type": "object", "title": "Partition"}


def _document_offsets_required(schema: dict[str, Any]) -> None:
    # Absent or empty offsets get Kafka's 400 from the handler (see ``OffsetsBody``).
    schema["required"] = ["offsets"]
    offsets = schema["properties"]["offsets"]
    item = next(s for s in offsets.get("anyOf", [offsets]) if s.get("type") == "array")
    schema["properties"]["offsets"] = {**item, "minItems": 1, "title": "Offsets"}


class ConnectorOffsetBody(BodyModel):
    """One ``{"partition", "offset"}`` pair of a request; a null offset resets it."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=_document_partition_required)

    partition: dict[str, Any] | None = None
    offset: dict[str, Any] | None = None


class OffsetsBody(BodyModel):
    """Body of ``PATCH /connectors/{c}/offsets``. ``offsets`` may be absent or empty here;
    the handler answers that with Kafka's 400."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=_document_offsets_required)

    offsets: list[ConnectorOffsetBody] | None = None

    def to_domain(self) -> list[ConnectorOffset]:
        """The herder's offsets: requests are the one direction ``from_attributes`` does
        not cover."""
        return [ConnectorOffset(e.partition, e.offset) for e in self.offsets or []]


class ConnectorOffsetResponse(ResponseModel):
    """One committed offset: the connector's partition and offset objects."""

    partition: dict[str, Any]
    offset: dict[str, Any] | None


class ConnectorOffsetsResponse(ResponseModel):
    """``GET /connectors/{c}/offsets``."""

    offsets: list[ConnectorOffsetResponse]


class MessageResponse(ResponseModel):
    """``{"message": ...}``: the outcome of an alter or reset."""

    message: str
