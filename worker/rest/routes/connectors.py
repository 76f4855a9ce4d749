"""``/connectors``: create, inspect, reconfigure and control connectors and their tasks.

The counterpart of Kafka Connect's ``ConnectorsResource``: same paths, verbs, status codes
and JSON. Every handler is a plain ``def`` so FastAPI runs it in its thread pool; the herder
may block on storage without stalling the event loop. ``?forward=`` drives leader forwarding in
distributed mode (``worker.rest.forward``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Annotated
from urllib.parse import quote

from fastapi import APIRouter, Body, Query, Request, Response

from worker.errors import BadRequestError, NotFoundError
from worker.herder.base import Herder, TaskId
from worker.rest.deps import HerderDep, blocking, query_flag
from worker.rest.models import (
    ConfigMap,
    ConfigPatch,
    ConnectorExpansions,
    ConnectorInfo,
    ConnectorStateInfo,
    CreateConnectorRequest,
    TaskInfo,
    TaskState,
)

log = logging.getLogger("worker.rest")

router = APIRouter(prefix="/connectors", tags=["connectors"])

#: Characters Jersey's ``UriBuilder.path()`` leaves unencoded in a path.
_PATH_SAFE = "/:@!$&'()*+,;="

ConfigBody = Annotated[ConfigMap, Body(description="Connector configuration")]
IncludeTasks = Annotated[str | None, Query(alias="includeTasks",
                                           description="Also restart the tasks")]
OnlyFailed = Annotated[str | None, Query(alias="onlyFailed",
                                        description="Only restart failed instances")]


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


def _expand(herder: Herder, name: str, kinds: list[str]) -> ConnectorExpansions:
    status = info = None
    if "status" in kinds:
        status = ConnectorStateInfo.from_domain(herder.connector_status(name))
    if "info" in kinds:
        info = ConnectorInfo.from_domain(herder.connector_info(name))
    return ConnectorExpansions(status=status, info=info)


@router.get("", summary="List connectors, optionally expanded with status and/or info")
@blocking
def list_connectors(
    herder: HerderDep,
    expand: Annotated[list[str] | None, Query(description="status, info (repeatable)")] = None,
) -> list[str] | dict[str, ConnectorExpansions]:
    """Names; with ``?expand=``, ``{name: {"status": ..., "info": ...}}``."""
    if expand is None:
        return herder.connectors()
    for unknown in sorted(set(expand) - {"status", "info"}):
        log.info("Ignoring unknown expansion type %s", unknown)
    expanded: dict[str, ConnectorExpansions] = {}
    for name in herder.connectors():
        try:
            expanded[name] = _expand(herder, name, expand)
        except NotFoundError:
            # Deleted between the listing and the lookup: leave it out, as Connect does.
            log.debug("Connector %s disappeared while expanding the listing", name)
    return expanded


@router.post("", status_code=201, summary="Create a connector")
@blocking
def create_connector(body: CreateConnectorRequest, request: Request, response: Response,
                     herder: HerderDep) -> ConnectorInfo:
    """201 with the new connector and its ``Location``; 409 if the name is taken."""
    name = (body.name or "").strip()
    config = _with_connector_name(name, body.config)
    created = herder.put_connector_config(name, config, allow_replace=False,
                                          initial_state=body.target_state())
    response.headers["Location"] = _location(request, name)
    return ConnectorInfo.from_domain(created.info)


@router.get("/{connector}", summary="Get a connector's config, tasks and type")
@blocking
def get_connector(connector: str, herder: HerderDep) -> ConnectorInfo:
    """200 with the connector's name, config, task ids and type; 404 if unknown."""
    return ConnectorInfo.from_domain(herder.connector_info(connector))


@router.delete("/{connector}", status_code=204, response_class=Response,
               summary="Delete a connector")
@blocking
def delete_connector(connector: str, herder: HerderDep) -> Response:
    """204 once the connector, its tasks and statuses are gone."""
    herder.delete_connector(connector)
    return Response(status_code=204)


@router.get("/{connector}/config", summary="Get a connector's configuration")
@blocking
def get_connector_config(connector: str, herder: HerderDep) -> dict[str, str]:
    """200 with the stored config (placeholders unresolved)."""
    return herder.connector_config(connector)


@router.put("/{connector}/config", summary="Create or replace a connector's configuration",
            responses={201: {"model": ConnectorInfo, "description": "Connector created"}})
@blocking
def put_connector_config(connector: str, config: ConfigBody, request: Request,
                         response: Response, herder: HerderDep) -> ConnectorInfo:
    """200 when an existing connector was reconfigured, 201 (+ ``Location``) when created."""
    result = herder.put_connector_config(connector, _with_connector_name(connector, config),
                                         allow_replace=True)
    if result.created:
        response.status_code = 201
        response.headers["Location"] = _location(request, connector)
    return ConnectorInfo.from_domain(result.info)


@router.patch("/{connector}/config", summary="Patch a connector's configuration")
@blocking
def patch_connector_config(
    connector: str,
    patch: Annotated[ConfigPatch, Body(description="New values; null removes a key")],
    herder: HerderDep,
) -> ConnectorInfo:
    """200 with the patched connector; ``null`` values remove keys."""
    return ConnectorInfo.from_domain(herder.patch_connector_config(connector, patch))


@router.get("/{connector}/status", summary="Get a connector's and its tasks' status")
@blocking
def get_connector_status(connector: str, herder: HerderDep) -> ConnectorStateInfo:
    """200 with the connector's and its tasks' states; ``trace`` only on failure."""
    return ConnectorStateInfo.from_domain(herder.connector_status(connector))


@router.post("/{connector}/restart", status_code=204, response_class=Response,
             summary="Restart a connector (and, per the flags, its tasks)",
             responses={202: {"model": ConnectorStateInfo,
                              "description": "Restart requested; state right after"}})
@blocking
def restart_connector(connector: str, herder: HerderDep, include_tasks: IncludeTasks = None,
                      only_failed: OnlyFailed = None) -> Response:
    """204 for a plain restart; 202 with the connector state when either flag is set."""
    state = herder.restart_connector(connector,
                                     include_tasks=query_flag(include_tasks, False),
                                     only_failed=query_flag(only_failed, False))
    if state is None:
        return Response(status_code=204)
    return Response(status_code=202, media_type="application/json",
                    content=ConnectorStateInfo.from_domain(state).model_dump_json())


@router.put("/{connector}/pause", status_code=202, response_class=Response,
            summary="Pause a connector and its tasks")
@blocking
def pause_connector(connector: str, herder: HerderDep) -> Response:
    """202, no body: the pause is requested, not awaited."""
    herder.pause_connector(connector)
    return Response(status_code=202)


@router.put("/{connector}/resume", status_code=202, response_class=Response,
            summary="Resume a paused or stopped connector")
@blocking
def resume_connector(connector: str, herder: HerderDep) -> Response:
    """202, no body: the resume is requested, not awaited."""
    herder.resume_connector(connector)
    return Response(status_code=202)


@router.put("/{connector}/stop", status_code=204, response_class=Response,
            summary="Stop a connector and shut its tasks down (KIP-875)")
@blocking
def stop_connector(connector: str, herder: HerderDep) -> Response:
    """204 once the STOPPED target state is recorded."""
    herder.stop_connector(connector)
    return Response(status_code=204)


@router.get("/{connector}/tasks", summary="List a connector's tasks and their configs")
@blocking
def get_task_configs(connector: str, herder: HerderDep) -> list[TaskInfo]:
    """200 with ``[{"id": {"connector", "task"}, "config": {...}}]``."""
    return [TaskInfo.from_domain(task) for task in herder.task_configs(connector)]


@router.post("/{connector}/tasks", status_code=204, response_class=Response,
             summary="Internal: task configs from the worker running the connector",
             include_in_schema=False)
@blocking
def put_task_configs(connector: str, herder: HerderDep,
                     configs: Annotated[list[ConfigMap], Body()]) -> Response:
    """Distributed mode: a follower hands its connector's task configs to the leader."""
    herder.put_task_configs(connector, [dict(c) for c in configs])
    return Response(status_code=204)


@router.get("/{connector}/tasks/{task}/status", summary="Get a task's status")
@blocking
def get_task_status(connector: str, task: int, herder: HerderDep) -> TaskState:
    """200 with the task's state; 404 for an unknown task or a non-integer id."""
    return TaskState.from_domain(herder.task_status(TaskId(connector, task)))


@router.post("/{connector}/tasks/{task}/restart", status_code=204, response_class=Response,
             summary="Restart a task")
@blocking
def restart_task(connector: str, task: int, herder: HerderDep) -> Response:
    """204 once the restart is requested."""
    herder.restart_task(TaskId(connector, task))
    return Response(status_code=204)
