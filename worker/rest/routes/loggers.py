"""``/admin/loggers``: read and change this worker's log levels (KIP-495, KIP-976).

The counterpart of Kafka Connect's ``LoggingResource``. Logger names are Python logger
names, which mirror module paths (``worker.runtime.source_task``); the root logger is
``root``. ``PUT`` takes ``{"level": "DEBUG"}`` and ``?scope=worker|cluster``
(case-insensitive; anything else is logged and treated as ``worker``, as Kafka does):
scope ``worker`` answers 200 with the loggers whose level changed, scope ``cluster`` 204.
A missing ``level`` is a 400; an unknown level is a 404 (Kafka's ``NotFoundException``).
"""

from __future__ import annotations

import logging
from typing import Annotated

from fastapi import APIRouter, Body, Query, Response

from worker.errors import BadRequestError
from worker.herder.models import LoggerLevel, LoggerScope
from worker.rest.datamodels.loggers import LevelBody, LoggerLevelResponse
from worker.rest.deps import HerderDep
from worker.rest.openapi import error_responses
from worker.rest.routing import ConnectRoute

log = logging.getLogger("worker.rest")

router = APIRouter(prefix="/admin/loggers", tags=["loggers"], route_class=ConnectRoute)


def _scope(value: str | None) -> LoggerScope:
    if value is None:
        return LoggerScope.WORKER
    try:
        return LoggerScope(value.lower())
    except ValueError:
        log.warning("Received invalid scope '%s' in request to adjust logging level; will "
                    "default to %s", value, LoggerScope.WORKER.value)
        return LoggerScope.WORKER


@router.get("", summary="List the current loggers that have their levels explicitly set "
                        "and their log levels",
            response_model=dict[str, LoggerLevelResponse])
def list_loggers(herder: HerderDep) -> dict[str, LoggerLevel]:
    """The root logger and every logger with an explicit level, sorted by name."""
    return herder.loggers()


@router.get("/{logger}", summary="Get the log level for the specified logger",
            response_model=LoggerLevelResponse,
            responses=error_responses((404, "Logger not found")))
def get_logger(logger: str, herder: HerderDep) -> LoggerLevel:
    """The logger's effective level; 404 for a logger that does not exist."""
    return herder.logger_level(logger)


@router.put(
    "/{logger}", summary="Set the log level for the specified logger",
    response_model=list[str],
    response_description="Worker logger level set; the loggers whose level changed",
    responses={204: {"description": "Cluster logger level set; no body"},
               **error_responses((400, "Log level was not specified"),
                                 (404, "Invalid log level"))})
def set_level(
    logger: str,
    body: Annotated[LevelBody, Body(description='{"level": "DEBUG"}',
                                      examples=[{"level": "DEBUG"}])],
    herder: HerderDep,
    scope: Annotated[str | None, Query(description="worker (default) or cluster")] = None,
) -> Response | list[str]:
    """Set the logger and its descendants to ``level``."""
    level = body.get("level")
    if level is None:
        raise BadRequestError("Desired 'level' parameter was not specified in request.")
    changed = herder.set_logger_level(logger, level, _scope(scope))
    if changed is None:
        return Response(status_code=204)
    return changed
