"""Bodies of ``/`` and ``/health`` (Connect's ``ServerInfo`` and ``WorkerStatus``)."""

from __future__ import annotations

from pydantic import Field

from worker.rest.datamodels.base import ResponseModel


class ServerInfoResponse(ResponseModel):
    """``GET /``: the worker's version and commit, and its Kafka cluster's id."""

    version: str
    commit: str
    kafka_cluster_id: str | None


class WorkerStatusResponse(ResponseModel):
    """``GET /health`` (KIP-1017): ``{"status", "message"}`` only."""

    status: str = Field(description="healthy (200), starting (503) or unhealthy (500)")
    message: str
