"""Bodies of ``/admin/dynamic-worker-config`` (our extension; see docs/dynamic-config.md).

Requests are maps of worker property names to string values, or null to remove an
override. They are parsed by the route itself rather than by FastAPI, because this API
answers a body of the wrong shape with 400 (Connect's own resources answer 500 there);
``PATCH_BODY_SCHEMA`` documents them in ``/openapi.json``.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, TypeAdapter

from worker.rest.datamodels.base import ResponseModel

#: A validate or PATCH body: property name → new raw value, or null (remove the override).
WorkerConfigPatch = dict[str, str | None]

#: The JSON schema of :data:`WorkerConfigPatch` for the OpenAPI document.
PATCH_BODY_SCHEMA: dict[str, Any] = TypeAdapter(WorkerConfigPatch).json_schema()


class WorkerConfigValidationResponse(ResponseModel):
    """``POST /admin/dynamic-worker-config/validate``: the problems found, per key."""

    error_count: int = Field(description="Number of messages in errors; 0: the change is "
                                         "valid on this worker")
    errors: dict[str, list[str]] = Field(
        description="Messages per key, naming the problem (never a value)")
