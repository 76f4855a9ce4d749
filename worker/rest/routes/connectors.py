"""``/connectors``: create, inspect, reconfigure and control connectors and their tasks.

The counterpart of Kafka Connect's ``ConnectorsResource``: same paths, verbs, status codes
and JSON. Handlers are plain functions that return the herder's objects; the route class runs
them off the event loop (the herder may block on storage) and the declared response model
shapes the JSON. ``?forward=`` drives leader forwarding in distributed mode
(``worker.rest.forward``), which is why every write may answer 409 there.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Body, Query, Request, Response

from worker.errors import BadRequestError, NotFoundError
from worker.herder.base import Herder, TaskId
from worker.herder.models import ConnectorInfo, ConnectorStateInfo, TaskInfo, TaskState
from worker.rest import internal_requests
from worker.rest.datamodels.base import SCALAR_SCHEMA, ConfigPatch, ConnectorConfigMap
from worker.rest.datamodels.connectors import (
    ConnectorExpansionsResponse,
    ConnectorInfoResponse,
    ConnectorStateInfoResponse,
    CreateConnectorBody,
    TaskInfoResponse,
    TaskStateResponse,
)
from worker.rest.deps import HerderDep, query_flag
from worker.rest.openapi import CLUSTER_CONFLICT, UNKNOWN_CONNECTOR, error_responses
from worker.rest.routing import ConnectRoute

log = logging.getLogger("worker.rest")

router = APIRouter(prefix="/connectors", tags=["connectors"], route_class=ConnectRoute)

UNKNOWN_TASK = (404, "Unknown connector or task, or a task id that is not an integer")
#: Characters Jersey's ``UriBuilder.path()`` leaves unencoded in a path.
_PATH_SAFE = "/:@!$&'()*+,;="

ConfigBody = Annotated[ConnectorConfigMap, Body(description="Connector configuration")]
IncludeTasks = Annotated[str | None, Query(alias="includeTasks",
                                           description="Also restart the tasks")]
OnlyFailed = Annotated[str | None, Query(alias="onlyFailed",
                                        description="Only restart failed instances")]
#: Any ``expand`` makes the answer a map, as in Kafka; values other than status and info
#: (``?expand=false`` too) are ignored and logged.
Expand = Annotated[list[str] | None, Query(
    description="Repeatable: status and/or info. Present at all, it makes the answer a map "
                "of connector names to the expansions asked for; other values are ignored")]
#: What ``?expand=`` adds for one connector: ``{"status": ..., "info": ...}`` as asked.
Expansion = dict[str, ConnectorStateInfo | ConnectorInfo]


def _with_connector_name(name: str, config: Mapping[str, str]) -> dict[str, str]:
    """Connect's ``checkAndPutConnectorConfigName``: ``config.name`` must match ``name``."""
    included = config.get("name")
    if included is not None and included != name:
        raise BadRequestError(f"Connector name configuration ({included}) doesn't match "
                              f"connector name in the URL ({name})")
    return {**config, "name": name}


def _location(request: Request, name: str) -> str:
    # JAX-RS resolves Response.created("/connectors/x") against the base URI: absolute.
    return f"{str(request.base_url).rstrip('/')}/connectors/{quote(name, safe=_PATH_SAFE)}"


def _expand(herder: Herder, name: str, kinds: list[str]) -> Expansion:
    expansions: Expansion = {}
    if "status" in kinds:
        expansions["status"] = herder.connector_status(name)
    if "info" in kinds:
        expansions["info"] = herder.connector_info(name)
    return expansions


@router.get("", summary="List connectors, optionally expanded with status and/or info",
            response_model=list[str] | dict[str, ConnectorExpansionsResponse])
def list_connectors(herder: HerderDep, expand: Expand = None
                    ) -> list[str] | dict[str, Expansion]:
    """Names; with ``?expand=``, ``{name: {"status": ..., "info": ...}}``."""
    if expand is None:
        return herder.connectors()
    for unknown in sorted(set(expand) - {"status", "info"}):
        log.info("Ignoring unknown expansion type %s", unknown)
    expanded: dict[str, Expansion] = {}
    for name in herder.connectors():
        try:
            expanded[name] = _expand(herder, name, expand)
        except NotFoundError:
            # Deleted between the listing and the lookup: leave it out, as Connect does.
            log.debug("Connector %s disappeared while expanding the listing", name)
    return expanded


@router.post("", status_code=201, summary="Create a connector",
             response_model=ConnectorInfoResponse,
             responses=error_responses(
                 (400, "Invalid configuration, or a name in it that is not the connector's"),
                 (409, "The connector already exists; in distributed mode also a "
                       "rebalance, or a request that could not reach the leader")))
def create_connector(body: CreateConnectorBody, request: Request, response: Response,
                     herder: HerderDep) -> ConnectorInfo:
    """201 with the new connector and its ``Location``; 409 if the name is taken."""
    name = (body.name or "").strip()
    config = _with_connector_name(name, body.config)
    created = herder.put_connector_config(name, config, allow_replace=False,
                                          initial_state=body.target_state())
    response.headers["Location"] = _location(request, name)
    return created.info


@router.get("/{connector}", summary="Get a connector's config, tasks and type",
            response_model=ConnectorInfoResponse,
            responses=error_responses(UNKNOWN_CONNECTOR))
def get_connector(connector: str, herder: HerderDep) -> ConnectorInfo:
    """200 with the connector's name, config, task ids and type; 404 if unknown."""
    return herder.connector_info(connector)


@router.delete("/{connector}", status_code=204, response_class=Response,
               summary="Delete a connector",
               responses=error_responses(UNKNOWN_CONNECTOR, CLUSTER_CONFLICT))
def delete_connector(connector: str, herder: HerderDep) -> Response:
    """204 once the connector, its tasks and statuses are gone."""
    herder.delete_connector(connector)
    return Response(status_code=204)


@router.get("/{connector}/config", summary="Get a connector's configuration",
            responses=error_responses(UNKNOWN_CONNECTOR))
def get_connector_config(connector: str, herder: HerderDep) -> dict[str, str]:
    """200 with the stored config (placeholders unresolved)."""
    return herder.connector_config(connector)


@router.put("/{connector}/config", summary="Create or replace a connector's configuration",
            response_model=ConnectorInfoResponse,
            responses={201: {"model": ConnectorInfoResponse, "description": "Connector created"},
                       **error_responses(
                           (400, "Invalid configuration, or a name in it that is not the path's"),
                           CLUSTER_CONFLICT)})
def put_connector_config(connector: str, config: ConfigBody, request: Request,
                         response: Response, herder: HerderDep) -> ConnectorInfo:
    """200 when an existing connector was reconfigured, 201 (+ ``Location``) when created."""
    result = herder.put_connector_config(connector, _with_connector_name(connector, config),
                                         allow_replace=True)
    if result.created:
        response.status_code = 201
        response.headers["Location"] = _location(request, connector)
    return result.info


@router.patch("/{connector}/config", summary="Patch a connector's configuration",
              response_model=ConnectorInfoResponse,
              responses=error_responses((400, "The patched configuration is invalid"),
                                        UNKNOWN_CONNECTOR, CLUSTER_CONFLICT))
def patch_connector_config(
    connector: str,
    patch: Annotated[ConfigPatch, Body(description="New values; null removes a key")],
    herder: HerderDep,
) -> ConnectorInfo:
    """200 with the patched connector; ``null`` values remove keys."""
    return herder.patch_connector_config(connector, patch)


@router.get("/{connector}/status", summary="Get a connector's and its tasks' status",
            response_model=ConnectorStateInfoResponse,
            responses=error_responses(UNKNOWN_CONNECTOR))
def get_connector_status(connector: str, herder: HerderDep) -> ConnectorStateInfo:
    """200 with the connector's and its tasks' states; ``trace`` only on failure."""
    return herder.connector_status(connector)


@router.post("/{connector}/restart", status_code=202,
             summary="Restart a connector (and, per the flags, its tasks)",
             response_model=ConnectorStateInfoResponse,
             response_description="Restart requested (a flag was set); the state right after",
             responses={204: {"description": "Restart requested (no flag set); no body"},
                        **error_responses(UNKNOWN_CONNECTOR, CLUSTER_CONFLICT)})
def restart_connector(connector: str, herder: HerderDep, include_tasks: IncludeTasks = None,
                      only_failed: OnlyFailed = None) -> ConnectorStateInfo | Response:
    """204 for a plain restart; 202 with the connector state when either flag is set."""
    state = herder.restart_connector(connector,
                                     include_tasks=query_flag(include_tasks, False),
                                     only_failed=query_flag(only_failed, False))
    if state is None:
        return Response(status_code=204)
    return state


@router.put("/{connector}/pause", status_code=202, response_class=Response,
            summary="Pause a connector and its tasks",
            responses=error_responses(UNKNOWN_CONNECTOR, CLUSTER_CONFLICT))
def pause_connector(connector: str, herder: HerderDep) -> Response:
    """202, no body: the pause is requested, not awaited."""
    herder.pause_connector(connector)
    return Response(status_code=202)


@router.put("/{connector}/resume", status_code=202, response_class=Response,
            summary="Resume a paused or stopped connector",
            responses=error_responses(UNKNOWN_CONNECTOR, CLUSTER_CONFLICT))
def resume_connector(connector: str, herder: HerderDep) -> Response:
    """202, no body: the resume is requested, not awaited."""
    herder.resume_connector(connector)
    return Response(status_code=202)


@router.put("/{connector}/stop", status_code=204, response_class=Response,
            summary="Stop a connector and shut its tasks down (KIP-875)",
            responses=error_responses(UNKNOWN_CONNECTOR, CLUSTER_CONFLICT))
def stop_connector(connector: str, herder: HerderDep) -> Response:
    """204 once the STOPPED target state is recorded."""
    herder.stop_connector(connector)
    return Response(status_code=204)


@router.get("/{connector}/tasks", summary="List a connector's tasks and their configs",
            response_model=list[TaskInfoResponse],
            responses=error_responses(UNKNOWN_CONNECTOR))
def get_task_configs(connector: str, herder: HerderDep) -> list[TaskInfo]:
    """200 with ``[{"id": {"connector", "task"}, "config": {...}}]``."""
    return herder.task_configs(connector)


#: How FastAPI would have documented the body, had it parsed it (the route reads it itself,
#: after the signature: worker.rest.internal_requests).
TASK_CONFIGS_BODY: dict[str, Any] = {"requestBody": {
    "required": True, "description": "The connector's task configs, in task order",
    "content": {"application/json": {"schema": {
        "type": "array", "items": {"type": "object", "additionalProperties": SCALAR_SCHEMA}}}}}}


@router.post("/{connector}/tasks", status_code=204, response_class=Response,
             summary="Internal: task configs from the worker running the connector",
             openapi_extra=TASK_CONFIGS_BODY,
             responses=error_responses(
                 (400, "Standalone mode, where task configs cannot be set from outside; "
                       "a missing or malformed request signature, or an algorithm not "
                       "permitted (KIP-507); a body that is not a list of configs"),
                 (403, "The request signature does not match the session key"),
                 CLUSTER_CONFLICT,
                 (415, "The request body is not sent as JSON (Content-Type)"),
                 (503, "No session key read from the config topic yet")))
async def put_task_configs(connector: str, herder: HerderDep, request: Request) -> Response:
    """Distributed mode: a follower hands its connector's task configs to the leader,
    signed with the session key (KIP-507): checked before the body is parsed."""
    configs = await internal_requests.task_configs(request, herder)
    await asyncio.get_running_loop().run_in_executor(None, herder.put_task_configs,
                                                     connector, configs)
    return Response(status_code=204)


@router.get("/{connector}/tasks/{task}/status", summary="Get a task's status",
            response_model=TaskStateResponse,
            responses=error_responses(UNKNOWN_TASK))
def get_task_status(connector: str, task: int, herder: HerderDep) -> TaskState:
    """200 with the task's state; 404 for an unknown task or a non-integer id."""
    return herder.task_status(TaskId(connector, task))


@router.post("/{connector}/tasks/{task}/restart", status_code=204, response_class=Response,
             summary="Restart a task",
             responses=error_responses(UNKNOWN_TASK, CLUSTER_CONFLICT))
def restart_task(connector: str, task: int, herder: HerderDep) -> Response:
    """204 once the restart is requested."""
    herder.restart_task(TaskId(connector, task))
    return Response(status_code=204)
