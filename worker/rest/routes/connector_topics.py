"""``/connectors/{connector}/topics``: the topics a connector actively uses (KIP-558).

The counterpart of the two topic endpoints of Kafka Connect's ``ConnectorsResource``:
``GET`` answers ``{"<connector>": {"topics": [...]}}``, ``PUT .../reset`` answers 202 with
no body. Both answer 403 when ``topic.tracking.enable`` (or, for the reset,
``topic.tracking.allow.reset``) is false. As in Kafka, an unknown connector is not a 404:
it simply has no active topics.
"""

from __future__ import annotations

from fastapi import APIRouter, Response

from worker.rest.datamodels.connector_topics import ActiveTopicsResponse
from worker.rest.deps import HerderDep
from worker.rest.openapi import error_responses
from worker.rest.routing import ConnectRoute

router = APIRouter(prefix="/connectors", tags=["connectors"], route_class=ConnectRoute)


@router.get("/{connector}/topics",
            summary="Get the list of topics actively used by the specified connector",
            response_model=dict[str, ActiveTopicsResponse],
            responses=error_responses((403, "Topic tracking is disabled")))
def get_connector_active_topics(connector: str, herder: HerderDep
                                ) -> dict[str, dict[str, list[str]]]:
    """200 with the topics the connector's tasks produced to or consumed from, sorted."""
    return {connector: {"topics": herder.connector_active_topics(connector)}}


@router.put("/{connector}/topics/reset", status_code=202, response_class=Response,
            summary="Reset the list of topics actively used by the specified connector",
            responses=error_responses((403, "Topic tracking or topic tracking reset is "
                                            "disabled")))
def reset_connector_active_topics(connector: str, herder: HerderDep) -> Response:
    """202, no body; topics are recorded again as the connector's tasks use them."""
    herder.reset_connector_active_topics(connector)
    return Response(status_code=202)
