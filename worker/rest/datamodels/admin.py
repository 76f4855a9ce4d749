"""Bodies of ``/admin/worker`` and ``/admin/cluster`` (our extensions).

``WorkerResponse`` joins what the herder knows (identity, the dynamic configuration this
worker applied) with what the REST server serves (listeners and their certificates).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field

from worker.rest.datamodels.base import ResponseModel


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


class ClusterResponse(ResponseModel):
    """``GET /admin/cluster``: the leader and every member (standalone: the worker)."""

    leader_url: str | None = Field(description="null while no leader is known (rebalance)")
    members: list[ClusterMemberResponse]
