"""``/connectors/{c}/offsets`` (KIP-875): read, alter and reset a connector's offsets.

The counterpart of the offsets methods of Kafka Connect's ``ConnectorsResource``: ``GET``
answers ``{"offsets": [...]}``; ``PATCH`` and ``DELETE`` answer 200 ``{"message": ...}``
and require the connector to be STOPPED (400 otherwise). Handlers are plain functions the
route class runs off the event loop: the herder blocks on storage and Kafka admin calls.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body

from worker.errors import BadRequestError
from worker.herder.models import ConnectorOffsets, Message
from worker.herder.offset_requests import NO_OFFSETS_PROVIDED
from worker.rest.datamodels.connector_offsets import (
    ConnectorOffsetsResponse,
    MessageResponse,
    OffsetsBody,
)
from worker.rest.deps import HerderDep
from worker.rest.openapi import UNKNOWN_CONNECTOR, error_responses
from worker.rest.routing import ConnectRoute

router = APIRouter(prefix="/connectors", tags=["offsets"], route_class=ConnectRoute)

AlterBody = Annotated[OffsetsBody, Body(
    description="The offsets to write; a null offset removes that partition's offset")]
NOT_STOPPED = (400, "The connector is not STOPPED, or it refused the offsets")
#: Also in standalone mode: the herder re-checks the connector's config before it writes.
WRITE_CONFLICT = (409, "The connector was reconfigured meanwhile; in distributed mode also a "
                       "rebalance, or a request that could not reach the leader")


@router.get("/{connector}/offsets", summary="Get the current offsets of a connector",
            response_model=ConnectorOffsetsResponse,
            responses=error_responses(UNKNOWN_CONNECTOR))
def get_offsets(connector: str, herder: HerderDep) -> ConnectorOffsets:
    """200 with the committed offsets (in any state); 404 if the connector is unknown."""
    return herder.connector_offsets(connector)


@router.patch("/{connector}/offsets", summary="Alter the offsets of a stopped connector",
              response_model=MessageResponse,
              responses=error_responses(
                  (400, "No or malformed offsets, the connector is not STOPPED, or it "
                        "refused the offsets"), UNKNOWN_CONNECTOR, WRITE_CONFLICT))
def alter_offsets(connector: str, body: AlterBody, herder: HerderDep) -> Message:
    """200 with a message; 400 if the offsets are missing or malformed or the connector is
    not STOPPED; 404 if it is unknown. Partitions not named keep their offsets."""
    if not body.offsets:  # checked before the connector, as Kafka's resource does
        raise BadRequestError(NO_OFFSETS_PROVIDED)
    return herder.alter_connector_offsets(connector, body.to_domain())


@router.delete("/{connector}/offsets", summary="Reset all offsets of a stopped connector",
               response_model=MessageResponse,
               responses=error_responses(NOT_STOPPED, UNKNOWN_CONNECTOR, WRITE_CONFLICT))
def reset_offsets(connector: str, herder: HerderDep) -> Message:
    """200 with a message, also when there was nothing to reset; 400 if the connector is
    not STOPPED; 404 if it is unknown."""
    return herder.reset_connector_offsets(connector)
