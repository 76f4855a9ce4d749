"""Kafka Connect's REST API, each endpoint defined once for the sync and the async hook.

Every endpoint of :class:`ConnectRestApi` builds an
:class:`~airflow_provider.hooks._request.ApiRequest` of its typed answer
(:mod:`airflow_provider.hooks.results`) and hands it to the hook's ``_send``: on a
:class:`SyncConnectRestApi` (:class:`~airflow_provider.hooks.kafka_connect.KafkaConnectHook`)
a call returns the answer, on an :class:`AsyncConnectRestApi`
(:class:`~airflow_provider.hooks.kafka_connect_async.KafkaConnectAsyncHook`) a coroutine of
it (``status = await hook.get_connector_status(name)``); the :class:`endpoint` descriptor
tells type checkers which.

Paths follow Kafka Connect 4.x; connector, task, plugin and logger names are quoted as one
path segment (``a/b c`` → ``a%2Fb%20c``). The dynamic worker configuration, worker report
and cluster endpoints are connect-plane's extensions under ``/admin/`` (answered by
connect-plane workers only).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Coroutine, Mapping, Sequence
from types import MethodType
from typing import Any, Concatenate, Generic, ParamSpec, Self, TypeVar, overload

from airflow_provider.exceptions import KafkaConnectConfigError, MalformedResponseError
from airflow_provider.hooks._request import CREATE, ApiRequest, segment
from airflow_provider.hooks.admin_results import (
    ClusterMembers,
    DynamicConfigValidation,
    WorkerConfigOverrides,
    WorkerReport,
)
from airflow_provider.hooks.results import (
    ConfigValidation,
    ConnectorInfo,
    ConnectorOffsets,
    ConnectorStatus,
    Message,
    PluginInfo,
    ServerInfo,
    TaskInfo,
    TaskStatus,
    WorkerHealth,
    config_map,
)

T = TypeVar("T")
P = ParamSpec("P")


def _flag(value: bool) -> str:
    return "true" if value else "false"


# --- answers kept as JSON (checked for their outer shape only) ------------------------------


def _json_object(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise MalformedResponseError("the answer is not a JSON object")
    return body


def _json_list(body: Any) -> list[Any]:
    if not isinstance(body, list):
        raise MalformedResponseError("the answer is not a JSON array")
    return body


def _json_object_or_list(body: Any) -> list[Any] | dict[str, Any]:
    if not isinstance(body, list | dict):
        raise MalformedResponseError("the answer is neither a JSON array nor an object")
    return body


def _at(worker_url: str | None, path: str) -> str:
    """``path`` on the connection's worker, or as an absolute URL on ``worker_url`` (a
    request a worker answers for itself only; the client's credential scope vets it,
    :mod:`airflow_provider.hooks.credential_scope`)."""
    if worker_url is None:
        return path
    if not worker_url.startswith(("http://", "https://")):
        raise KafkaConnectConfigError(f"worker_url {worker_url!r} is not an http(s) URL")
    return f"{worker_url.rstrip('/')}{path}"


def _no_content(body: Any) -> None:
    """Answers that matter by their status only (202/204); a body, if any, is not used."""
    return None


def _optional(parse: Callable[[Any], T]) -> Callable[[Any], T | None]:
    """``parse``, or ``None`` for an empty answer (e.g. a restart's 204)."""
    def parse_optional(body: Any) -> T | None:
        return None if body is None else parse(body)
    return parse_optional


def _config_changes(changes: Mapping[str, Any]) -> dict[str, str | None]:
    """A dynamic-config body: values as strings, ``None`` (remove the override) kept."""
    return {str(key): None if value is None else str(value) for key, value in changes.items()}


def _unwrap_topics(name: str) -> Callable[[Any], list[str]]:
    def unwrap(body: Any) -> list[str]:
        # {"<connector>": {"topics": [...]}}; be lenient about the key's spelling.
        if not isinstance(body, dict) or not body:
            return []
        entry = body.get(name)
        if entry is None and len(body) == 1:
            entry = next(iter(body.values()))
        topics = entry.get("topics", []) if isinstance(entry, dict) else []
        return list(topics)
    return unwrap


class SyncConnectRestApi:
    """What a synchronous hook provides: ``_send`` returns the request's answer."""

    def _send(self, request: ApiRequest[T]) -> T:
        raise NotImplementedError


class AsyncConnectRestApi:
    """What an asynchronous hook provides: ``_send`` is a coroutine of the answer."""

    async def _send(self, request: ApiRequest[T]) -> T:
        raise NotImplementedError


class endpoint(Generic[P, T]):
    """A REST endpoint: ``build`` turns a call's arguments into an :class:`ApiRequest`
    of ``T``, which the hook's ``_send`` sends.

    Python cannot say "returns ``T`` on a sync hook, a coroutine of ``T`` on an async one"
    in one method signature, and each endpoint written twice would drift. This descriptor
    states it once: read from a :class:`SyncConnectRestApi` the endpoint is a method
    ``(*P) -> T``, from an :class:`AsyncConnectRestApi` a method
    ``(*P) -> Coroutine[..., T]`` (the overloads of ``__get__`` tell type checkers which).
    At run time it is a bound method with ``build``'s name, docstring and parameters.
    """

    def __init__(self, build: Callable[Concatenate[Any, P], ApiRequest[T]]) -> None:
        self.build = build
        self.__name__ = build.__name__
        self.__doc__ = build.__doc__
        # What inspect.signature() shows: build's parameters, not its ApiRequest return.
        self.__signature__ = inspect.signature(build).replace(
            return_annotation=inspect.Signature.empty)

    def __call__(self, api: Any, /, *args: P.args, **kwargs: P.kwargs) -> Any:
        """Send the request ``build`` makes; ``api`` is the hook (``self`` of the method)."""
        return api._send(self.build(api, *args, **kwargs))

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> Self: ...

    @overload
    def __get__(self, obj: AsyncConnectRestApi, owner: type | None = None
                ) -> Callable[P, Coroutine[Any, Any, T]]: ...

    @overload
    def __get__(self, obj: SyncConnectRestApi, owner: type | None = None
                ) -> Callable[P, T]: ...

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        return self if obj is None else MethodType(self, obj)


class ConnectRestApi:
    """Kafka Connect's REST endpoints. A hook derives from this and from
    :class:`SyncConnectRestApi` or :class:`AsyncConnectRestApi`; each endpoint returns
    the typed answer named below (a coroutine of it in the async hook).
    """

    # --- worker -------------------------------------------------------------------------

    @endpoint
    def get_server_info(self) -> ApiRequest[ServerInfo]:
        """``GET /``: the worker's ``version``, ``commit`` and ``kafka_cluster_id``."""
        return ApiRequest("GET", "/", result=ServerInfo.from_json)

    @endpoint
    def get_health(self) -> ApiRequest[WorkerHealth]:
        """``GET /health`` (KIP-1017): ``status`` and ``message``.

        A starting (503) or unhealthy (500) worker's JSON answer is returned, not raised.
        """
        return ApiRequest("GET", "/health", answers=frozenset({500, 503}),
                          result=WorkerHealth.from_json)

    # --- connectors ---------------------------------------------------------------------

    @endpoint
    def list_connectors(self, expand: Sequence[str] = ()
                        ) -> ApiRequest[list[Any] | dict[str, Any]]:
        """``GET /connectors``: names; with ``expand`` (``"status"``, ``"info"``) a dict
        ``{name: {"status": ..., "info": ...}}`` (as JSON)."""
        kinds = (expand,) if isinstance(expand, str) else tuple(expand)
        return ApiRequest("GET", "/connectors", params=tuple(("expand", kind) for kind in kinds),
                          result=_json_object_or_list)

    @endpoint
    def get_connector(self, name: str) -> ApiRequest[ConnectorInfo]:
        """``GET /connectors/{c}``: name, config, tasks and type."""
        return ApiRequest("GET", f"/connectors/{segment(name)}", result=ConnectorInfo.from_json)

    @endpoint
    def get_connector_config(self, name: str) -> ApiRequest[dict[str, str]]:
        """``GET /connectors/{c}/config``: the stored config."""
        return ApiRequest("GET", f"/connectors/{segment(name)}/config",
                          result=config_map)

    @endpoint
    def create_connector(self, name: str, config: Mapping[str, Any],
                         initial_state: str | None = None) -> ApiRequest[ConnectorInfo]:
        """``POST /connectors``; :class:`ConnectorAlreadyExistsError` if ``name`` exists.

        ``initial_state`` (KIP-980): ``RUNNING``, ``PAUSED`` or ``STOPPED``.
        """
        body: dict[str, Any] = {"name": name, "config": dict(config)}
        if initial_state is not None:
            body["initial_state"] = initial_state
        return ApiRequest("POST", "/connectors", json=body, context=CREATE,
                          result=ConnectorInfo.from_json)

    @endpoint
    def put_connector_config(self, name: str, config: Mapping[str, Any]
                             ) -> ApiRequest[ConnectorInfo]:
        """``PUT /connectors/{c}/config``: create or replace; returns the connector info."""
        return ApiRequest("PUT", f"/connectors/{segment(name)}/config", json=dict(config),
                          result=ConnectorInfo.from_json)

    @endpoint
    def patch_connector_config(self, name: str, config: Mapping[str, Any]
                               ) -> ApiRequest[ConnectorInfo]:
        """``PATCH /connectors/{c}/config``: merge ``config`` (``None`` values remove
        keys); returns the connector info."""
        return ApiRequest("PATCH", f"/connectors/{segment(name)}/config", json=dict(config),
                          result=ConnectorInfo.from_json)

    @endpoint
    def delete_connector(self, name: str) -> ApiRequest[None]:
        """``DELETE /connectors/{c}``."""
        return ApiRequest("DELETE", f"/connectors/{segment(name)}", result=_no_content)

    @endpoint
    def get_connector_status(self, name: str) -> ApiRequest[ConnectorStatus]:
        """``GET /connectors/{c}/status``: the connector's and its tasks' states."""
        return ApiRequest("GET", f"/connectors/{segment(name)}/status",
                          result=ConnectorStatus.from_json)

    @endpoint
    def get_connector_topics(self, name: str) -> ApiRequest[list[str]]:
        """``GET /connectors/{c}/topics`` (KIP-558): the topic names, unwrapped."""
        return ApiRequest("GET", f"/connectors/{segment(name)}/topics",
                          result=_unwrap_topics(name))

    @endpoint
    def reset_connector_topics(self, name: str) -> ApiRequest[None]:
        """``PUT /connectors/{c}/topics/reset``."""
        return ApiRequest("PUT", f"/connectors/{segment(name)}/topics/reset",
                          result=_no_content)

    @endpoint
    def pause_connector(self, name: str) -> ApiRequest[None]:
        """``PUT /connectors/{c}/pause`` (asynchronous on the worker: 202)."""
        return ApiRequest("PUT", f"/connectors/{segment(name)}/pause",
                          result=_no_content)

    @endpoint
    def resume_connector(self, name: str) -> ApiRequest[None]:
        """``PUT /connectors/{c}/resume`` (asynchronous on the worker: 202)."""
        return ApiRequest("PUT", f"/connectors/{segment(name)}/resume",
                          result=_no_content)

    @endpoint
    def stop_connector(self, name: str) -> ApiRequest[None]:
        """``PUT /connectors/{c}/stop`` (KIP-875)."""
        return ApiRequest("PUT", f"/connectors/{segment(name)}/stop", result=_no_content)

    @endpoint
    def restart_connector(self, name: str, include_tasks: bool = False,
                          only_failed: bool = False) -> ApiRequest[ConnectorStatus | None]:
        """``POST /connectors/{c}/restart``: ``None`` (204), or the connector status (202)
        when either flag is set."""
        params = (("includeTasks", _flag(include_tasks)), ("onlyFailed", _flag(only_failed)))
        return ApiRequest("POST", f"/connectors/{segment(name)}/restart", params=params,
                          result=_optional(ConnectorStatus.from_json))

    # --- tasks --------------------------------------------------------------------------

    @endpoint
    def list_tasks(self, name: str) -> ApiRequest[list[TaskInfo]]:
        """``GET /connectors/{c}/tasks``: each task's id and config."""
        def tasks(body: Any) -> list[TaskInfo]:
            return [TaskInfo.from_json(task) for task in _json_list(body)]
        return ApiRequest("GET", f"/connectors/{segment(name)}/tasks", result=tasks)

    @endpoint
    def get_task_status(self, name: str, task_id: int) -> ApiRequest[TaskStatus]:
        """``GET /connectors/{c}/tasks/{t}/status``."""
        return ApiRequest("GET", f"/connectors/{segment(name)}/tasks/{segment(task_id)}/status",
                          result=TaskStatus.from_json)

    @endpoint
    def restart_task(self, name: str, task_id: int) -> ApiRequest[None]:
        """``POST /connectors/{c}/tasks/{t}/restart``."""
        return ApiRequest("POST", f"/connectors/{segment(name)}/tasks/{segment(task_id)}/restart",
                          result=_no_content)

    # --- offsets (KIP-875) --------------------------------------------------------------

    @endpoint
    def get_offsets(self, name: str) -> ApiRequest[ConnectorOffsets]:
        """``GET /connectors/{c}/offsets``: the committed ``{"partition", "offset"}``s."""
        return ApiRequest("GET", f"/connectors/{segment(name)}/offsets",
                          result=ConnectorOffsets.from_json)

    @endpoint
    def alter_offsets(self, name: str, offsets: Sequence[Mapping[str, Any]]
                      ) -> ApiRequest[Message]:
        """``PATCH /connectors/{c}/offsets`` of a STOPPED connector: Connect's message."""
        body = {"offsets": [dict(entry) for entry in offsets]}
        return ApiRequest("PATCH", f"/connectors/{segment(name)}/offsets", json=body,
                          result=Message.from_json)

    @endpoint
    def reset_offsets(self, name: str) -> ApiRequest[Message]:
        """``DELETE /connectors/{c}/offsets`` of a STOPPED connector: Connect's message."""
        return ApiRequest("DELETE", f"/connectors/{segment(name)}/offsets",
                          result=Message.from_json)

    # --- plugins ------------------------------------------------------------------------

    @endpoint
    def list_connector_plugins(self, connectors_only: bool = True,
                               worker_url: str | None = None) -> ApiRequest[list[PluginInfo]]:
        """``GET /connector-plugins``: the plugins a worker found, ``PluginInfo(class_name,
        type, version)`` each (``connectors_only=False`` adds converters, transformations
        and predicates). Each worker answers for itself: the connection's worker, or the
        one at ``worker_url`` (an absolute ``http(s)://`` URL; same credentials and TLS
        settings, so it must be in the hook's credential scope, else
        :class:`~airflow_provider.exceptions.UntrustedWorkerUrlError`)."""
        def plugins(body: Any) -> list[PluginInfo]:
            return [PluginInfo.from_json(entry) for entry in _json_list(body)]
        return ApiRequest("GET", _at(worker_url, "/connector-plugins"),
                          params=(("connectorsOnly", _flag(connectors_only)),),
                          result=plugins)

    @endpoint
    def get_plugin_config(self, plugin: str) -> ApiRequest[list[Any]]:
        """``GET /connector-plugins/{p}/config``: the plugin's config definitions (as
        JSON)."""
        return ApiRequest("GET", f"/connector-plugins/{segment(plugin)}/config",
                          result=_json_list)

    @endpoint
    def validate_connector_config(self, plugin: str, config: Mapping[str, Any]
                                  ) -> ApiRequest[ConfigValidation]:
        """``PUT /connector-plugins/{p}/config/validate`` (an invalid config is a 200 with
        ``error_count > 0``, not an error)."""
        return ApiRequest("PUT", f"/connector-plugins/{segment(plugin)}/config/validate",
                          json=dict(config), result=ConfigValidation.from_json)

    # --- loggers (KIP-495) --------------------------------------------------------------

    @endpoint
    def list_loggers(self) -> ApiRequest[dict[str, Any]]:
        """``GET /admin/loggers``: ``{logger: {"level", "last_modified"}}`` (as JSON)."""
        return ApiRequest("GET", "/admin/loggers", result=_json_object)

    @endpoint
    def get_logger(self, name: str) -> ApiRequest[dict[str, Any]]:
        """``GET /admin/loggers/{l}``: ``{"level", "last_modified"}`` (as JSON)."""
        return ApiRequest("GET", f"/admin/loggers/{segment(name)}", result=_json_object)

    @endpoint
    def set_logger_level(self, name: str, level: str, scope: str | None = None
                         ) -> ApiRequest[list[Any] | None]:
        """``PUT /admin/loggers/{l}``: the loggers changed (scope ``worker``, the default),
        or ``None`` (scope ``cluster``, KIP-976)."""
        params = (("scope", scope),) if scope is not None else ()
        return ApiRequest("PUT", f"/admin/loggers/{segment(name)}", params=params,
                          json={"level": level}, result=_optional(_json_list))

    # --- dynamic worker configuration (connect-plane's /admin/ extension) ---------------

    @endpoint
    def get_dynamic_worker_config(self) -> ApiRequest[WorkerConfigOverrides]:
        """``GET /admin/dynamic-worker-config``: the overrides in force (not the static
        properties), values raw (``${provider:...}`` placeholders unresolved)."""
        return ApiRequest("GET", "/admin/dynamic-worker-config",
                          result=WorkerConfigOverrides.from_json)

    @endpoint
    def validate_dynamic_worker_config(self, changes: Mapping[str, Any]
                                       ) -> ApiRequest[DynamicConfigValidation]:
        """``POST /admin/dynamic-worker-config/validate``: what a PATCH with ``changes``
        would say, changing nothing (an invalid change is a 200 with ``error_count > 0``;
        a key outside the whitelist a :class:`BadRequestError`)."""
        return ApiRequest("POST", "/admin/dynamic-worker-config/validate",
                          json=_config_changes(changes), result=DynamicConfigValidation.from_json)

    @endpoint
    def patch_dynamic_worker_config(self, changes: Mapping[str, Any]
                                    ) -> ApiRequest[WorkerConfigOverrides]:
        """``PATCH /admin/dynamic-worker-config``: merge ``changes`` (``None`` removes that
        override); returns the overrides in force after the change."""
        return ApiRequest("PATCH", "/admin/dynamic-worker-config",
                          json=_config_changes(changes), result=WorkerConfigOverrides.from_json)

    @endpoint
    def delete_dynamic_worker_config(self, name: str) -> ApiRequest[None]:
        """``DELETE /admin/dynamic-worker-config/{name}``: the static value of ``name`` is
        back in force (:class:`NotFoundError` when there is no such override)."""
        return ApiRequest("DELETE", f"/admin/dynamic-worker-config/{segment(name)}",
                          result=_no_content)

    @endpoint
    def get_worker(self, worker_url: str | None = None) -> ApiRequest[WorkerReport]:
        """``GET /admin/worker``: what one worker applied and serves (each worker answers
        for itself): the connection's worker, or the cluster member at ``worker_url`` (an
        absolute URL such as ``https://w2:8443``; same credentials and TLS settings, so it
        must be in the hook's credential scope, else
        :class:`~airflow_provider.exceptions.UntrustedWorkerUrlError`)."""
        return ApiRequest("GET", _at(worker_url, "/admin/worker"), result=WorkerReport.from_json)

    @endpoint
    def get_cluster(self) -> ApiRequest[ClusterMembers]:
        """``GET /admin/cluster``: the cluster's members and the leader's URL."""
        return ApiRequest("GET", "/admin/cluster", result=ClusterMembers.from_json)
