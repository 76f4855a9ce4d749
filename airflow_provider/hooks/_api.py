"""Kafka Connect's REST API, each endpoint defined once for the sync and the async hook.

:class:`ConnectRestApi` builds an :class:`ApiRequest` per call and hands it to the hook's
``_send``: :class:`~airflow_provider.hooks.kafka_connect.KafkaConnectHook` returns the
result, :class:`~airflow_provider.hooks.kafka_connect_async.KafkaConnectAsyncHook` returns
a coroutine (``await hook.get_connector_status(name)``). Both hooks turn every HTTP answer
into a value or a typed error with :func:`handle_response`, whose errors all come from
:func:`raise_for_response`.

Paths follow Kafka Connect 4.x; connector, task, plugin and logger names are quoted as one
path segment (``a/b c`` → ``a%2Fb%20c``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn
from urllib.parse import quote

from airflow_provider.exceptions import (
    AuthenticationError,
    BadRequestError,
    ConnectorAlreadyExistsError,
    ForbiddenError,
    KafkaConnectApiError,
    NotFoundError,
    RebalanceInProgressError,
    ServerError,
)

#: :attr:`ApiRequest.context` of ``POST /connectors``: its 409 means "already exists".
CREATE = "create"
#: The methods whose requests can be repeated when no answer came back.
IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
#: Error messages longer than this (an HTML error page of a proxy) are cut.
_MAX_MESSAGE_CHARS = 500


@dataclass(frozen=True)
class ApiRequest:
    """One REST call: what to send and how to read the answer.

    ``json`` is the request body (``None``: no body); it is left out of ``repr`` because
    connector configs hold credentials. ``context`` names endpoints whose status codes
    mean something special (:data:`CREATE`). ``answers`` lists error statuses that are
    answers when their body is JSON (``GET /health``'s 500/503 carry the worker status).
    ``result`` turns the parsed body into the return value.
    """

    method: str
    path: str
    params: tuple[tuple[str, str], ...] = ()
    json: Any = field(default=None, repr=False)
    context: str = ""
    answers: frozenset[int] = frozenset()
    result: Callable[[Any], Any] | None = field(default=None, repr=False, compare=False)

    @property
    def idempotent(self) -> bool:
        """True when repeating the request after a lost answer cannot change anything."""
        return self.method in IDEMPOTENT_METHODS


def segment(name: str | int) -> str:
    """``name`` quoted as a single URL path segment."""
    return quote(str(name), safe="")


def _flag(value: bool) -> str:
    return "true" if value else "false"


def _parse(body_text: str) -> Any:
    """The JSON value of ``body_text``; the text itself when it is not JSON; ``None`` if
    empty."""
    if not body_text.strip():
        return None
    try:
        return json.loads(body_text)
    except ValueError:
        return body_text


def raise_for_response(request: ApiRequest, status_code: int, body_text: str) -> NoReturn:
    """Raise the :class:`KafkaConnectApiError` subclass for an error answer.

    The class comes from the status code (and, for 409, from the endpoint); ``message``
    and ``error_code`` from Connect's ``{"error_code", "message"}`` body when there is one,
    else from the body text.
    """
    body = _parse(body_text)
    error_code: int | None = None
    message = ""
    if isinstance(body, dict) and ("message" in body or "error_code" in body):
        message = str(body.get("message") or "")
        code = body.get("error_code")
        error_code = code if isinstance(code, int) and not isinstance(code, bool) else None
    elif body is not None:
        message = body_text.strip()
    if len(message) > _MAX_MESSAGE_CHARS:
        message = message[:_MAX_MESSAGE_CHARS] + "..."
    message = message or f"HTTP {status_code}"

    if status_code == 400:
        cls: type[KafkaConnectApiError] = BadRequestError
    elif status_code == 401:
        cls = AuthenticationError
    elif status_code == 403:
        cls = ForbiddenError
    elif status_code == 404:
        cls = NotFoundError
    elif status_code == 409:
        cls = ConnectorAlreadyExistsError if request.context == CREATE \
            else RebalanceInProgressError
    elif status_code >= 500:
        cls = ServerError
    else:  # 405, 415, 3xx, ...: an answer we do not expect from Kafka Connect
        cls = KafkaConnectApiError
    raise cls(status_code, message, method=request.method, path=request.path,
              error_code=error_code, body=body)


def handle_response(request: ApiRequest, status_code: int, body_text: str) -> Any:
    """The return value of ``request`` for an answer, or the typed error it means.

    2xx bodies are parsed JSON (``None`` when empty, as for 202/204) passed through
    ``request.result``.
    """
    ok = 200 <= status_code < 300
    if not ok and status_code in request.answers:
        body = _parse(body_text)
        ok = isinstance(body, dict | list)
    if not ok:
        raise_for_response(request, status_code, body_text)
    value = _parse(body_text)
    return request.result(value) if request.result is not None else value


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


class ConnectRestApi:
    """Kafka Connect's REST endpoints; subclasses provide ``_send``.

    Every method returns what ``_send`` returns: the parsed JSON body (``None`` for an
    empty 202/204 answer) in the sync hook, a coroutine of it in the async hook.
    """

    def _send(self, request: ApiRequest) -> Any:
        raise NotImplementedError

    # --- worker -------------------------------------------------------------------------

    def get_server_info(self) -> Any:
        """``GET /``: ``{"version", "commit", "kafka_cluster_id"}``."""
        return self._send(ApiRequest("GET", "/"))

    def get_health(self) -> Any:
        """``GET /health`` (KIP-1017): ``{"status", "message"}``.

        A starting (503) or unhealthy (500) worker's JSON answer is returned, not raised.
        """
        return self._send(ApiRequest("GET", "/health", answers=frozenset({500, 503})))

    # --- connectors ---------------------------------------------------------------------

    def list_connectors(self, expand: Sequence[str] = ()) -> Any:
        """``GET /connectors``: names; with ``expand`` (``"status"``, ``"info"``) a dict
        ``{name: {"status": ..., "info": ...}}``."""
        kinds = (expand,) if isinstance(expand, str) else tuple(expand)
        return self._send(ApiRequest("GET", "/connectors",
                                     params=tuple(("expand", kind) for kind in kinds)))

    def get_connector(self, name: str) -> Any:
        """``GET /connectors/{c}``: ``{"name", "config", "tasks", "type"}``."""
        return self._send(ApiRequest("GET", f"/connectors/{segment(name)}"))

    def get_connector_config(self, name: str) -> Any:
        """``GET /connectors/{c}/config``: the stored config."""
        return self._send(ApiRequest("GET", f"/connectors/{segment(name)}/config"))

    def create_connector(self, name: str, config: Mapping[str, Any],
                         initial_state: str | None = None) -> Any:
        """``POST /connectors``; :class:`ConnectorAlreadyExistsError` if ``name`` exists.

        ``initial_state`` (KIP-980): ``RUNNING``, ``PAUSED`` or ``STOPPED``.
        """
        body: dict[str, Any] = {"name": name, "config": dict(config)}
        if initial_state is not None:
            body["initial_state"] = initial_state
        return self._send(ApiRequest("POST", "/connectors", json=body, context=CREATE))

    def put_connector_config(self, name: str, config: Mapping[str, Any]) -> Any:
        """``PUT /connectors/{c}/config``: create or replace; returns the connector info."""
        return self._send(ApiRequest("PUT", f"/connectors/{segment(name)}/config",
                                     json=dict(config)))

    def patch_connector_config(self, name: str, config: Mapping[str, Any]) -> Any:
        """``PATCH /connectors/{c}/config``: merge ``config`` (``None`` values remove
        keys)."""
        return self._send(ApiRequest("PATCH", f"/connectors/{segment(name)}/config",
                                     json=dict(config)))

    def delete_connector(self, name: str) -> Any:
        """``DELETE /connectors/{c}``."""
        return self._send(ApiRequest("DELETE", f"/connectors/{segment(name)}"))

    def get_connector_status(self, name: str) -> Any:
        """``GET /connectors/{c}/status``: ``{"name", "connector", "tasks", "type"}``."""
        return self._send(ApiRequest("GET", f"/connectors/{segment(name)}/status"))

    def get_connector_topics(self, name: str) -> Any:
        """``GET /connectors/{c}/topics`` (KIP-558): the topic names, unwrapped."""
        return self._send(ApiRequest("GET", f"/connectors/{segment(name)}/topics",
                                     result=_unwrap_topics(name)))

    def reset_connector_topics(self, name: str) -> Any:
        """``PUT /connectors/{c}/topics/reset``."""
        return self._send(ApiRequest("PUT", f"/connectors/{segment(name)}/topics/reset"))

    def pause_connector(self, name: str) -> Any:
        """``PUT /connectors/{c}/pause`` (asynchronous on the worker: 202)."""
        return self._send(ApiRequest("PUT", f"/connectors/{segment(name)}/pause"))

    def resume_connector(self, name: str) -> Any:
        """``PUT /connectors/{c}/resume`` (asynchronous on the worker: 202)."""
        return self._send(ApiRequest("PUT", f"/connectors/{segment(name)}/resume"))

    def stop_connector(self, name: str) -> Any:
        """``PUT /connectors/{c}/stop`` (KIP-875)."""
        return self._send(ApiRequest("PUT", f"/connectors/{segment(name)}/stop"))

    def restart_connector(self, name: str, include_tasks: bool = False,
                          only_failed: bool = False) -> Any:
        """``POST /connectors/{c}/restart``: ``None`` (204), or the connector status (202)
        when either flag is set."""
        params = (("includeTasks", _flag(include_tasks)), ("onlyFailed", _flag(only_failed)))
        return self._send(ApiRequest("POST", f"/connectors/{segment(name)}/restart",
                                     params=params))

    # --- tasks --------------------------------------------------------------------------

    def list_tasks(self, name: str) -> Any:
        """``GET /connectors/{c}/tasks``: ``[{"id": {"connector", "task"}, "config"}]``."""
        return self._send(ApiRequest("GET", f"/connectors/{segment(name)}/tasks"))

    def get_task_status(self, name: str, task_id: int) -> Any:
        """``GET /connectors/{c}/tasks/{t}/status``."""
        return self._send(ApiRequest(
            "GET", f"/connectors/{segment(name)}/tasks/{segment(task_id)}/status"))

    def restart_task(self, name: str, task_id: int) -> Any:
        """``POST /connectors/{c}/tasks/{t}/restart``."""
        return self._send(ApiRequest(
            "POST", f"/connectors/{segment(name)}/tasks/{segment(task_id)}/restart"))

    # --- offsets (KIP-875) --------------------------------------------------------------

    def get_offsets(self, name: str) -> Any:
        """``GET /connectors/{c}/offsets``: ``{"offsets": [{"partition", "offset"}]}``."""
        return self._send(ApiRequest("GET", f"/connectors/{segment(name)}/offsets"))

    def alter_offsets(self, name: str, offsets: Sequence[Mapping[str, Any]]) -> Any:
        """``PATCH /connectors/{c}/offsets`` of a STOPPED connector: ``{"message"}``."""
        body = {"offsets": [dict(entry) for entry in offsets]}
        return self._send(ApiRequest("PATCH", f"/connectors/{segment(name)}/offsets",
                                     json=body))

    def reset_offsets(self, name: str) -> Any:
        """``DELETE /connectors/{c}/offsets`` of a STOPPED connector: ``{"message"}``."""
        return self._send(ApiRequest("DELETE", f"/connectors/{segment(name)}/offsets"))

    # --- plugins ------------------------------------------------------------------------

    def list_connector_plugins(self, connectors_only: bool = True) -> Any:
        """``GET /connector-plugins``: ``[{"class", "type", "version"}]``."""
        return self._send(ApiRequest("GET", "/connector-plugins",
                                     params=(("connectorsOnly", _flag(connectors_only)),)))

    def get_plugin_config(self, plugin: str) -> Any:
        """``GET /connector-plugins/{p}/config``: the plugin's config definitions."""
        return self._send(ApiRequest("GET", f"/connector-plugins/{segment(plugin)}/config"))

    def validate_connector_config(self, plugin: str, config: Mapping[str, Any]) -> Any:
        """``PUT /connector-plugins/{p}/config/validate``: ``{"error_count", "configs"...}``
        (an invalid config is a 200 with ``error_count > 0``, not an error)."""
        return self._send(ApiRequest(
            "PUT", f"/connector-plugins/{segment(plugin)}/config/validate", json=dict(config)))

    # --- loggers (KIP-495) --------------------------------------------------------------

    def list_loggers(self) -> Any:
        """``GET /admin/loggers``: ``{logger: {"level", "last_modified"}}``."""
        return self._send(ApiRequest("GET", "/admin/loggers"))

    def get_logger(self, name: str) -> Any:
        """``GET /admin/loggers/{l}``: ``{"level", "last_modified"}``."""
        return self._send(ApiRequest("GET", f"/admin/loggers/{segment(name)}"))

    def set_logger_level(self, name: str, level: str, scope: str | None = None) -> Any:
        """``PUT /admin/loggers/{l}``: the loggers changed (scope ``worker``, the default),
        or ``None`` (scope ``cluster``, KIP-976)."""
        params = (("scope", scope),) if scope is not None else ()
        return self._send(ApiRequest("PUT", f"/admin/loggers/{segment(name)}", params=params,
                                     json={"level": level}))
