"""``/`` and ``/health``: the worker's identity and health (Connect's ``RootResource``)."""

from __future__ import annotations

from fastapi import APIRouter, Response

from worker.herder import health
from worker.herder.models import HealthStatus, ServerInfo
from worker.rest.datamodels.base import ErrorResponse
from worker.rest.datamodels.root import ServerInfoResponse, WorkerStatusResponse
from worker.rest.deps import HerderDep
from worker.rest.routing import ConnectRoute

router = APIRouter(tags=["root"], route_class=ConnectRoute)

#: KIP-1017 status → HTTP status.
HEALTH_STATUS_CODES = {health.HEALTHY: 200, health.STARTING: 503, health.UNHEALTHY: 500}


@router.get("/", summary="Get details about this Connect worker and its Kafka cluster",
            response_model=ServerInfoResponse)
def server_info(herder: HerderDep) -> ServerInfo:
    """``GET /``."""
    return herder.server_info()


@router.get("/health", summary="Health check endpoint to verify worker readiness and "
                               "liveness",
            response_model=WorkerStatusResponse,
            responses={
                503: {"model": WorkerStatusResponse, "description": "Worker is still starting"},
                # Like Kafka's: an unhealthy worker's status, or an error the check raised.
                500: {"model": WorkerStatusResponse | ErrorResponse,
                      "description": "Worker is unhealthy, or the check failed"}})
def health_check(herder: HerderDep, response: Response) -> HealthStatus:
    """200 ``healthy``; 503 ``starting``; 500 ``unhealthy`` if the herder is stuck (10 s)."""
    status = herder.health()
    response.status_code = HEALTH_STATUS_CODES.get(status.status, 500)
    return status
