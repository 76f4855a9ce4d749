"""``/connectors/{c}/offsets`` (KIP-875): read, alter and reset a connector's offsets.

The counterpart of the offsets methods of Kafka Connect's ``ConnectorsResource``: ``GET``
answers ``{"offsets": [...]}``; ``PATCH`` and ``DELETE`` answer 200 ``{"message": ...}``
and require the connector to be STOPPED (400 otherwise). Handlers are plain functions run
on the REST thread pool (``@blocking``): the herder blocks on storage and Kafka admin calls.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body

from worker.errors import BadRequestError
from worker.herder.offsets import NO_OFFSETS_PROVIDED
from worker.rest.deps import HerderDep, blocking
from worker.rest.offsets_models import AlterOffsetsRequest, ConnectorOffsets, Message

router = APIRouter(prefix="/connectors", tags=["offsets"])

OffsetsBody = Annotated[AlterOffsetsRequest, Body(
    description="The offsets to write; a null offset removes that partition's offset")]


@router.get("/{connector}/offsets", summary="Get the current offsets of a connector")
@blocking
def get_offsets(connector: str, herder: HerderDep) -> ConnectorOffsets:
    """200 with the committed offsets (in any state); 404 if the connector is unknown."""
    return ConnectorOffsets.from_domain(herder.connector_offsets(connector))


@router.patch("/{connector}/offsets", summary="Alter the offsets of a stopped connector")
@blocking
def alter_offsets(connector: str, body: OffsetsBody, herder: HerderDep) -> Message:
    """200 with a message; 400 if the offsets are missing or malformed or the connector is
    not STOPPED; 404 if it is unknown. Partitions not named keep their offsets."""
    if not body.offsets:  # checked before the connector, as Kafka's resource does
        raise BadRequestError(NO_OFFSETS_PROVIDED)
    return Message.from_domain(herder.alter_connector_offsets(connector, body.to_domain()))


@router.delete("/{connector}/offsets", summary="Reset all offsets of a stopped connector")
@blocking
def reset_offsets(connector: str, herder: HerderDep) -> Message:
    """200 with a message, also when there was nothing to reset; 400 if the connector is
    not STOPPED; 404 if it is unknown."""
    return Message.from_domain(herder.reset_connector_offsets(connector))
