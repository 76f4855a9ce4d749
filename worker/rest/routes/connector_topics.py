"""``/connectors/{connector}/topics``: the topics a connector actively uses (KIP-558).

The counterpart of the two topic endpoints of Kafka Connect's ``ConnectorsResource``:
``GET`` answers ``{"<connector>": {"topics": [...]}}``, ``PUT .../reset`` answers 202 with
no body. Both answer 403 when ``topic.tracking.enable`` (or, for the reset,
``topic.tracking.allow.reset``) is false. As in Kafka, an unknown connector is not a 404:
it simply has no active topics.
"""

from __future__ import annotations

from fastapi import APIRouter, Response

from worker.rest.admin_models import ActiveTopicsInfo
from worker.rest.deps import HerderDep, blocking
from worker.rest.models import ErrorMessage

router = APIRouter(prefix="/connectors", tags=["connectors"])


@router.get("/{connector}/topics",
            summary="Get the list of topics actively used by the specified connector",
            responses={403: {"model": ErrorMessage, "description": "Topic tracking is disabled"}})
@blocking
def get_connector_active_topics(connector: str, herder: HerderDep
                                ) -> dict[str, ActiveTopicsInfo]:
    """200 with the topics the connector's tasks produced to or consumed from, sorted."""
    topics = herder.connector_active_topics(connector)
    return {connector: ActiveTopicsInfo(topics=topics)}


@router.put("/{connector}/topics/reset", status_code=202, response_class=Response,
            summary="Reset the list of topics actively used by the specified connector",
            responses={403: {"model": ErrorMessage,
                             "description": "Topic tracking or topic tracking reset is "
                                            "disabled"}})
@blocking
def reset_connector_active_topics(connector: str, herder: HerderDep) -> Response:
    """202, no body; topics are recorded again as the connector's tasks use them."""
    herder.reset_connector_active_topics(connector)
    return Response(status_code=202)
