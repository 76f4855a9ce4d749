"""``/``: the worker's version, commit and Kafka cluster id (Connect's ``RootResource``)."""

from __future__ import annotations

from fastapi import APIRouter

from worker.rest.deps import HerderDep
from worker.rest.models import ServerInfo

router = APIRouter(tags=["root"])


@router.get("/", summary="Get details about this Connect worker and its Kafka cluster")
def server_info(herder: HerderDep) -> ServerInfo:
    """``GET /``."""
    return ServerInfo.from_domain(herder.server_info())
