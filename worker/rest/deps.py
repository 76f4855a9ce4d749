"""FastAPI dependencies shared by the routers: the herder, Connect's query flags, the JSON
check of routes that read their body themselves, and whether the caller may read secrets.

Handlers that call the herder are plain functions; the routers' route class
(``worker.rest.routing.ConnectRoute``) runs them off the event loop.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from starlette.exceptions import HTTPException

from worker.api.rest_extension import request_principal
from worker.herder.base import Herder


async def get_herder(request: Request) -> Herder:
    """The herder this app was built with (``create_app`` stores it on ``app.state``).

    ``async`` on purpose: FastAPI runs a plain ``def`` dependency in its thread pool, which
    would cost every request a second thread hop for a mere attribute read.
    """
    herder: Herder = request.app.state.herder
    return herder


#: Inject the herder into a handler: ``def handler(herder: HerderDep) -> ...``.
HerderDep = Annotated[Herder, Depends(get_herder)]


async def reveals_secrets(request: Request) -> bool:
    """Whether the caller may read secret values in clear (``/admin/*`` reads): only an admin
    principal of ``rest.admin.principals`` (``app.state.security``, set by ``create_app``).
    Without admin principals nobody may, so an open API shows no password."""
    security = getattr(request.app.state, "security", None)
    if security is None or not security.admin_principals:
        return False
    return bool(security.admin_principals.allows(request_principal(request.scope)))


#: Inject :func:`reveals_secrets` into a handler.
RevealSecrets = Annotated[bool, Depends(reveals_secrets)]


def query_flag(value: str | None, default: bool) -> bool:
    """Read a boolean query parameter the way JAX-RS does (``Boolean.valueOf``).

    Only ``true`` (any case) is true; any other value is false rather than an error, so
    ``?includeTasks=yes`` behaves exactly as it does against Apache Kafka Connect.
    """
    if value is None:
        return default
    return value.lower() == "true"


def is_json(content_type: str | None) -> bool:
    """Whether a request body so typed is JSON, as FastAPI decides it for the bodies it
    parses (no content type counts as JSON)."""
    if not content_type:
        return True
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or (media.startswith("application/")
                                            and media.endswith("+json"))


def require_json(request: Request) -> None:
    """415, as Jersey answers a resource that consumes JSON, for a body sent as anything
    else; for routes that read their body themselves."""
    if not is_json(request.headers.get("content-type")):
        raise HTTPException(status_code=415)
