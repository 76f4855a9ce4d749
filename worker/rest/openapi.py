"""What ``/openapi.json`` says about errors: the statuses each route really answers.

Every route declares, next to its decorator, the error statuses it can return with
:func:`error_responses` (each with ``ErrorResponse``'s ``{"error_code", "message"}``
schema); ``ConnectRoute`` adds those every route shares (``worker.rest.routing``).

FastAPI also documents a 422 on every route that has parameters or a body. This app never
answers 422 (``worker.rest.errors`` maps validation failures to 404, 415 or
``BODY_ERROR_STATUS``), so :func:`remove_validation_errors` takes those out again.
"""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

from worker.rest.datamodels.base import ErrorResponse

#: FastAPI's type of a route's ``responses``.
Responses = dict[int | str, dict[str, Any]]
#: An error a route declares: a status, or a status and what it means for that route.
ErrorDoc = int | tuple[int, str]

# Descriptions shared by many routes.
UNKNOWN_CONNECTOR: ErrorDoc = (404, "Connector not found")
#: Distributed mode: writes go to the leader (restarts to the worker running the instance);
#: Kafka answers 409 when that cannot be done now (``worker.rest.forward``).
CLUSTER_CONFLICT: ErrorDoc = (409, "Distributed mode: a rebalance is under way, or the "
                                   "request could not be forwarded to the worker that must "
                                   "serve it")


def error_responses(*errors: ErrorDoc) -> Responses:
    """A route's ``responses=`` for the error statuses it returns, in status order.

    ``error_responses(404, (409, "Connector exists"))``: each status gets ErrorResponse's
    schema and the given description (else the status's reason phrase).
    """
    docs: Responses = {}
    for error in errors:
        status, description = error if isinstance(error, tuple) else (
            error, HTTPStatus(error).phrase)
        docs[status] = {"model": ErrorResponse, "description": description}
    return dict(sorted(docs.items(), key=lambda item: str(item[0])))


#: What FastAPI adds for its 422: the responses and the two schemas they refer to.
_VALIDATION_STATUS = "422"
_VALIDATION_SCHEMAS = ("HTTPValidationError", "ValidationError")


def remove_validation_errors(document: dict[str, Any]) -> dict[str, Any]:
    """Drop FastAPI's 422 responses and their schemas from an OpenAPI ``document``."""
    for path_item in document.get("paths", {}).values():
        for operation in path_item.values():
            operation.get("responses", {}).pop(_VALIDATION_STATUS, None)
    schemas = document.get("components", {}).get("schemas", {})
    for name in _VALIDATION_SCHEMAS:
        schemas.pop(name, None)
    return document
