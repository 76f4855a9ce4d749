"""``/`` and ``/health``: the worker's identity and health (Connect's ``RootResource``)."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from worker.herder import health
from worker.rest.admin_models import WorkerStatus
from worker.rest.deps import HerderDep, blocking
from worker.rest.models import ServerInfo

router = APIRouter(tags=["root"])

#: KIP-1017 status → HTTP status.
HEALTH_STATUS_CODES = {health.HEALTHY: 200, health.STARTING: 503, health.UNHEALTHY: 500}


@router.get("/", summary="Get details about this Connect worker and its Kafka cluster")
@blocking
def server_info(herder: HerderDep) -> ServerInfo:
    """``GET /``."""
    return ServerInfo.from_domain(herder.server_info())


@router.get("/health", summary="Health check endpoint to verify worker readiness and "
                               "liveness",
            response_model=WorkerStatus,
            responses={503: {"model": WorkerStatus, "description": "Worker is still starting"},
                       500: {"model": WorkerStatus, "description": "Worker is unhealthy"}})
@blocking
def health_check(herder: HerderDep) -> JSONResponse:
    """200 ``healthy``; 503 ``starting``; 500 ``unhealthy`` if the herder is stuck (10 s)."""
    status = herder.health()
    return JSONResponse(WorkerStatus.from_domain(status).dump(),
                        status_code=HEALTH_STATUS_CODES.get(status.status, 500))
