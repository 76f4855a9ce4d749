"""Bodies of the KIP-875 offsets endpoints, named after Kafka Connect's entities.

``ConnectorOffsets`` (``{"offsets": [{"partition": {...}, "offset": {...}}]}``) is both the
answer of ``GET /connectors/{c}/offsets`` and the body of ``PATCH``; ``Message``
(``{"message": ...}``) answers ``PATCH`` and ``DELETE``.

The request models forbid unknown fields and accept only JSON objects (or null) for
``partition`` and ``offset``, as Jackson does for Kafka's entities; a body of the wrong shape
is therefore rejected before the herder sees it (with Kafka's status for such bodies, see
``worker.rest.errors``). What the values inside may be is the herder's business.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from worker.herder import models as domain


class ConnectorOffsetEntry(BaseModel):
    """One ``{"partition", "offset"}`` pair of a request; a null offset resets it."""

    model_config = ConfigDict(extra="forbid")

    partition: dict[str, Any] | None = None
    offset: dict[str, Any] | None = None


class AlterOffsetsRequest(BaseModel):
    """Body of ``PATCH /connectors/{c}/offsets``. ``offsets`` may be absent or empty here;
    the handler answers that with Kafka's 400."""

    model_config = ConfigDict(extra="forbid")

    offsets: list[ConnectorOffsetEntry] | None = None

    def to_domain(self) -> list[domain.ConnectorOffset]:
        return [domain.ConnectorOffset(e.partition, e.offset) for e in self.offsets or []]


class _Response(BaseModel):
    model_config = ConfigDict(frozen=True)


class ConnectorOffset(_Response):
    """One committed offset: the connector's partition and offset objects."""

    partition: dict[str, Any]
    offset: dict[str, Any] | None


class ConnectorOffsets(_Response):
    """``GET /connectors/{c}/offsets``."""

    offsets: list[ConnectorOffset]

    @classmethod
    def from_domain(cls, offsets: domain.ConnectorOffsets) -> ConnectorOffsets:
        return cls(offsets=[ConnectorOffset(partition=dict(o.partition),
                                            offset=None if o.offset is None else dict(o.offset))
                            for o in offsets.offsets])


class Message(_Response):
    """``{"message": ...}``: the outcome of an alter or reset."""

    message: str

    @classmethod
    def from_domain(cls, message: domain.Message) -> Message:
        return cls(message=message.message)
