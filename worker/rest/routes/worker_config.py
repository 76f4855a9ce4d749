"""``/admin/dynamic-worker-config``: the worker settings changed at run time (our extension).

The draft KIP-1185's API (docs/dynamic-config.md): ``GET`` the overrides in force (raw),
``POST /validate`` a change without making it, ``PATCH`` a change (merge; null removes an
override), ``DELETE /{name}`` one override. Only keys some part of the worker can apply
at run time are accepted (the REST listeners' TLS settings). In a cluster the leader
writes, so ``PATCH`` and ``DELETE`` are forwarded to it like connector writes.

Bodies are read here, not by FastAPI: this API answers a body that is not a JSON object of
strings or nulls with 400 naming the problem (Kafka's own resources answer 500 there).

**Secrets in answers.** ``GET`` and ``PATCH`` answer the overrides as stored, except that
the value of a secret key (a password, a private key) is ``[hidden]`` — as Kafka shows
``PASSWORD`` values — unless it is only ``${provider:...}`` placeholders (which say where
the secret is, not what it is) or the caller is an admin principal
(``rest.admin.principals``): an admin may write the value anyway, and the Airflow
certificate-rotation operator reads the overrides to put them back if a rotation fails.
Without ``rest.admin.principals`` nobody is an admin principal, so nobody reads a password
in clear: an open API shows none. ``worker.rest.deps.reveals_secrets`` decides, for
``/admin/worker`` too.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request, Response

from worker.config.dynamic import shown
from worker.errors import BadRequestError
from worker.herder.models import WorkerConfigValidation
from worker.rest.datamodels.worker_config import (
    PATCH_BODY_SCHEMA,
    WorkerConfigPatch,
    WorkerConfigValidationResponse,
)
from worker.rest.deps import HerderDep, RevealSecrets, require_json
from worker.rest.openapi import CLUSTER_CONFLICT, error_responses
from worker.rest.routing import ConnectRoute

router = APIRouter(prefix="/admin/dynamic-worker-config", tags=["dynamic worker config"],
                   route_class=ConnectRoute)

BAD_BODY = (400, "A key that cannot be changed at run time, or a body that is not a JSON "
                 "object of strings and nulls")
NOT_JSON = (415, "The request body is not sent as JSON (Content-Type)")
#: How FastAPI would have documented the body, had it parsed it.
BODY_DOC: dict[str, Any] = {"requestBody": {
    "required": True, "description": "Worker property names to new raw values; null removes "
                                     "the override",
    "content": {"application/json": {"schema": PATCH_BODY_SCHEMA,
                                      "example": {"listeners.https.ssl.keystore.location":
                                                  "/etc/connect/tls/worker-2.p12"}}}}}


async def patch_body(request: Request) -> WorkerConfigPatch:
    """The body as a map of keys to strings or None; 400 naming the problem, 415 if not
    sent as JSON. Values are never quoted: they may be secrets."""
    require_json(request)
    raw = await request.body()
    if not raw.strip():
        raise BadRequestError("Request body is missing")
    try:
        body = json.loads(raw)
    except ValueError as exc:  # also bad UTF-8
        raise BadRequestError(f"Malformed JSON in the request body: {exc}") from exc
    if not isinstance(body, dict):
        raise BadRequestError("The request body must be a JSON object of worker property "
                              "names to string values (or null)")
    wrong = sorted(key for key, value in body.items() if not isinstance(value, str | None))
    if wrong:
        raise BadRequestError(f"Values must be strings (or null to remove the override); "
                              f"not so for: {', '.join(wrong)}")
    return body


PatchBody = Annotated[WorkerConfigPatch, Depends(patch_body)]


@router.get("", summary="Get the dynamic worker configuration overrides in force (raw; "
                        "secrets [hidden] but for admin principals)")
def get_overrides(herder: HerderDep, reveal: RevealSecrets) -> dict[str, str]:
    """200 with the overrides stored for the cluster; placeholders are returned unresolved,
    a secret's value as ``[hidden]`` (see the module docstring), static worker properties
    are not included."""
    return shown(herder.worker_config_overrides(), reveal_secrets=reveal)


@router.post("/validate", summary="Validate a change of the dynamic worker configuration",
             response_model=WorkerConfigValidationResponse, openapi_extra=BODY_DOC,
             responses=error_responses(BAD_BODY, NOT_JSON))
def validate_overrides(patch: PatchBody, herder: HerderDep) -> WorkerConfigValidation:
    """200 with the problems the change would have on this worker; changes nothing."""
    return herder.validate_worker_config(patch)


@router.patch("", summary="Change the dynamic worker configuration",
              openapi_extra=BODY_DOC,
              response_description="The overrides in force after the change",
              responses=error_responses(
                  (400, "A key that cannot be changed at run time, a body that is not a "
                        "JSON object of strings and nulls, or a change that failed "
                        "validation (nothing is stored)"),
                  CLUSTER_CONFLICT, NOT_JSON))
def patch_overrides(patch: PatchBody, herder: HerderDep, reveal: RevealSecrets
                    ) -> dict[str, str]:
    """200 with the overrides in force (shown as ``GET`` shows them), once stored and
    applied on the worker that wrote them (the leader in a cluster; the others apply it
    as they read it)."""
    return shown(herder.patch_worker_config(patch), reveal_secrets=reveal)


@router.delete("/{name}", status_code=204, response_class=Response,
               summary="Remove one override: the static value is back in force",
               responses=error_responses(
                   (400, "What remains fails validation (e.g. a keystore location whose "
                         "password override is removed); nothing is changed"),
                   (404, "No override of that name"), CLUSTER_CONFLICT))
def delete_override(name: str, herder: HerderDep) -> Response:
    """204 once the override is removed, stored and applied."""
    herder.delete_worker_config(name)
    return Response(status_code=204)
