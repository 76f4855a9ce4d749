"""One REST request of Kafka Connect's API, and how its answer becomes a value or an error.

An :class:`ApiRequest` says what to send and how to read the answer; :func:`handle_response`
turns a status code and body into the typed answer or the typed error, whose classes all
come from :func:`raise_for_response`. Shared by both hooks, which only differ in how they
send (:mod:`airflow_provider.hooks._transport`).

Names in paths are quoted with :func:`segment` (``a/b c`` → ``a%2Fb%20c``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, NoReturn, TypeVar
from urllib.parse import quote

from airflow_provider.exceptions import (
    AuthenticationError,
    BadRequestError,
    ConnectorAlreadyExistsError,
    ForbiddenError,
    KafkaConnectApiError,
    MalformedResponseError,
    NotFoundError,
    RebalanceInProgressError,
    ServerError,
)

T = TypeVar("T")

#: :attr:`ApiRequest.context` of ``POST /connectors``: its 409 means "already exists".
CREATE = "create"
#: The methods whose requests can be repeated when no answer came back.
IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
#: Error messages longer than this (an HTML error page of a proxy) are cut.
_MAX_MESSAGE_CHARS = 500


def _as_parsed(body: Any) -> Any:
    return body


@dataclass(frozen=True)
class ApiRequest(Generic[T]):
    """One REST call: what to send and how to read the answer.

    ``json`` is the request body (``None``: no body); it is left out of ``repr`` because
    connector configs hold credentials. ``context`` names endpoints whose status codes
    mean something special (:data:`CREATE`). ``answers`` lists error statuses that are
    answers when their body is JSON (``GET /health``'s 500/503 carry the worker status).
    ``result`` turns the parsed body (``None`` when empty) into the typed answer ``T``; by
    default the parsed body itself.
    """

    method: str
    path: str
    params: tuple[tuple[str, str], ...] = ()
    json: Any = field(default=None, repr=False)
    context: str = ""
    answers: frozenset[int] = frozenset()
    result: Callable[[Any], T] = field(default=_as_parsed, repr=False, compare=False)

    @property
    def idempotent(self) -> bool:
        """True when repeating the request after a lost answer cannot change anything."""
        return self.method in IDEMPOTENT_METHODS


def segment(name: str | int) -> str:
    """``name`` quoted as a single URL path segment."""
    return quote(str(name), safe="")


def _parse(body_text: str) -> Any:
    """The JSON value of ``body_text``; the text itself when it is not JSON; ``None`` if
    empty."""
    if not body_text.strip():
        return None
    try:
        return json.loads(body_text)
    except ValueError:
        return body_text


def raise_for_response(request: ApiRequest[Any], status_code: int, body_text: str) -> NoReturn:
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


def handle_response(request: ApiRequest[T], status_code: int, body_text: str) -> T:
    """The return value of ``request`` for an answer, or the typed error it means.

    2xx bodies are parsed JSON (``None`` when empty, as for 202/204) passed through
    ``request.result``; a body it cannot read is a :class:`MalformedResponseError` naming
    the request.
    """
    ok = 200 <= status_code < 300
    if not ok and status_code in request.answers:
        body = _parse(body_text)
        ok = isinstance(body, dict | list)
    if not ok:
        raise_for_response(request, status_code, body_text)
    try:
        return request.result(_parse(body_text))
    except MalformedResponseError as exc:
        raise MalformedResponseError(exc.detail, method=request.method,
                                     path=request.path) from None


