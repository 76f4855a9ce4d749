"""Bodies of ``/admin/worker`` and ``/admin/cluster`` (our extensions).

``WorkerResponse`` joins what the herder knows (identity, the dynamic configuration this
worker applied) with what the REST server serves (listeners and their certificates).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field

from worker.rest.datamodels.base import ResponseModel
from worker.rest.datamodels.connectors import ConnectorTaskIdResponse


def _iso_utc(value: Any) -> Any:
    """A datetime as ISO-8601 in UTC (``...Z``); a string is taken as it is."""
    if isinstance(value, datetime):
        aware = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
        return aware.astimezone(UTC).isoformat().replace("+00:00", "Z")
    return value


IsoTime = Annotated[str, BeforeValidator(_iso_utc)]


class LastValidationResponse(ResponseModel):
    """The outcome of the last validation of a configuration this worker tried to apply."""

    status: Literal["ok", "failed", "none"]
    message: str | None = Field(description="Why it failed; null unless failed")
    timestamp: int | None = Field(description="When (ms since the epoch); null if never")


class DynamicConfigResponse(ResponseModel):
    """What this worker applied of the dynamic worker configuration."""

    version: int = Field(description="Distributed: config-topic offset of the worker-config "
                                     "record applied (-1: none); standalone: revision of the "
                                     "stored overrides (0: none)")
    overrides: dict[str, str] = Field(
        description="The overrides applied (raw values; a secret's value is [hidden] "
                    "unless it is only placeholders or the caller is an admin principal)")
    last_validation: LastValidationResponse


class CertificateResponse(ResponseModel):
    """The leaf certificate a listener serves."""

    sha256: str = Field(description="SHA-256 of the DER certificate, 64 lowercase hex chars")
    subject: str = Field(description="RFC 4514")
    issuer: str = Field(description="RFC 4514")
    serial: str = Field(description="Serial number in hex")
    not_before: IsoTime = Field(description="ISO-8601, UTC")
    not_after: IsoTime = Field(description="ISO-8601, UTC")


class ListenerResponse(ResponseModel):
    """One REST listener of this worker."""

    url: str
    protocol: str = Field(description="http or https")
    admin: bool = Field(description="Whether it is an admin.listeners listener")
    certificate: CertificateResponse | None = Field(
        description="The certificate served (https); null for http")


class WorkerResponse(ResponseModel):
    """``GET /admin/worker``: this worker only."""

    worker_id: str = Field(description="host:port, as in statuses")
    url: str = Field(description="The URL this worker advertises")
    dynamic_config: DynamicConfigResponse
    listeners: list[ListenerResponse]


class ClusterMemberResponse(ResponseModel):
    worker_id: str
    url: str


class HeldWorkResponse(ResponseModel):
    """Work the leader holds for a worker that left (``scheduled.rebalance.max.delay.ms``)."""

    worker_id: str = Field(description="host:port of the worker the work is held for")
    url: str = Field(description="That worker's URL as it last advertised it")
    connectors: list[str] = Field(description="Connectors held, sorted")
    tasks: list[ConnectorTaskIdResponse] = Field(description="Tasks held, sorted")
    until: IsoTime = Field(description="ISO-8601, UTC: when the work goes to the other "
                                       "workers unless that worker rejoined")


class ClusterResponse(ResponseModel):
    """``GET /admin/cluster``: the leader, every member (standalone: the worker) and the
    work held for workers that left."""

    leader_url: str | None = Field(description="null while no leader is known (rebalance)")
    members: list[ClusterMemberResponse]
    held: list[HeldWorkResponse] = Field(
        description="Distributed mode: connectors and tasks the leader holds for workers "
                    "that left the group, as of the last assignment; a worker that rejoins "
                    "gets its work back at once. Empty when nothing is held (standalone: "
                    "always)")
