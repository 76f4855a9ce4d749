"""``ConnectRoute``: the route class of every router, for what every handler needs.

Routers use it as ``APIRouter(route_class=ConnectRoute)``. It does two things once, so
that no handler has to:

* runs a plain ``def`` handler on the event loop's default executor. Handlers call the
  herder, which may block on storage; the loop must not. ``RestServer`` sets that executor
  to its ``DaemonThreadPool`` (``worker.rest.executor`` says why not FastAPI's own
  thread pool). An ``async def`` handler is left as it is;
* documents the error statuses every route of a kind can answer, so that
  ``/openapi.json`` lists them without each decorator repeating them: 500 for an
  unexpected failure; for a route with a body, 415 (not JSON) and ``BODY_ERROR_STATUS``
  (malformed or mis-shaped JSON), 413 and 408 (``worker.rest.body_limits``); 404 for a
  parameter that may not convert (``task: int``). A status the route declares itself keeps
  its description, with the shared meanings appended.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Callable, Coroutine, Iterator
from typing import Any, ParamSpec, TypeVar, get_args

from fastapi.routing import APIRoute
from fastapi.utils import create_model_field

from worker.rest.datamodels.base import ErrorResponse
from worker.rest.errors import BODY_ERROR_STATUS

P = ParamSpec("P")
R = TypeVar("R")

# Fragments: one status may collect several (a route's own 400 and BODY_ERROR_STATUS).
UNEXPECTED = "unexpected failure (e.g. a backing store failed or the herder timed out)"
MALFORMED_BODY = "the request body is not valid JSON or does not fit the schema"
NOT_JSON = "the request body is not sent as JSON (Content-Type)"
UNCONVERTIBLE = "a path or query parameter that does not convert to its type"
TOO_LARGE = "the request body is larger than its route's limit (rest.request.body.*)"
TOO_SLOW = "the request body did not arrive within rest.request.body.timeout.ms"


def run_off_loop(handler: Callable[P, R]) -> Callable[P, Coroutine[Any, Any, R]]:
    """``handler`` as a coroutine function that runs it on the loop's default executor.

    ``functools.wraps`` keeps the signature FastAPI reads parameters from.
    """
    @functools.wraps(handler)
    async def run(*args: P.args, **kwargs: P.kwargs) -> R:
        call = functools.partial(handler, *args, **kwargs)
        return await asyncio.get_running_loop().run_in_executor(None, call)
    return run


def _leaf_types(annotation: Any) -> Iterator[Any]:
    args = get_args(annotation)
    if not args:
        yield annotation
        return
    for arg in args:
        yield from _leaf_types(arg)


def _may_not_convert(annotation: Any) -> bool:
    """Whether a request value can fail to become a parameter so typed (anything but text)."""
    return any(leaf not in (str, type(None)) for leaf in _leaf_types(annotation))


class ConnectRoute(APIRoute):
    """An ``APIRoute`` that runs blocking handlers off the event loop and documents the
    error statuses shared by routes of its kind (see the module docstring)."""

    def __init__(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
        if not inspect.iscoroutinefunction(endpoint):
            endpoint = run_off_loop(endpoint)
        super().__init__(path, endpoint, **kwargs)
        self._declare_errors(self._common_errors())

    def _common_errors(self) -> dict[int, list[str]]:
        errors: dict[int, list[str]] = {500: [UNEXPECTED]}
        if self.body_field is not None:
            errors.setdefault(415, []).append(NOT_JSON)
            errors.setdefault(BODY_ERROR_STATUS, []).append(MALFORMED_BODY)
        if self.body_field is not None or "requestBody" in (self.openapi_extra or {}):
            # A body FastAPI parses, or one the route reads itself (then 415 is its own).
            # worker.rest.body_limits, for a body FastAPI parses or the route reads itself.
            errors.setdefault(413, []).append(TOO_LARGE)
            errors.setdefault(408, []).append(TOO_SLOW)
        params = self.dependant.path_params + self.dependant.query_params
        if any(_may_not_convert(param.field_info.annotation) for param in params):
            errors.setdefault(404, []).append(UNCONVERTIBLE)
        return errors

    def _declare_errors(self, errors: dict[int, list[str]]) -> None:
        # After APIRoute.__init__: only then are the body and parameters known. The
        # response fields are what FastAPI builds for ``responses`` models in __init__.
        for status, descriptions in errors.items():
            if status in self.responses:
                # The route's own meaning first, then the shared ones (e.g. a 400 for an
                # invalid config and for a malformed body). A route is built again when
                # its router is included: add each meaning once, and copy, never mutate,
                # the decorator's dict.
                declared = self.responses[status]
                text = declared.get("description", "")
                missing = [d for d in descriptions if d not in text]
                if missing:
                    self.responses[status] = {
                        **declared, "description": "; or ".join([text, *missing])}
                continue
            description = "; or ".join(descriptions)
            self.responses[status] = {"model": ErrorResponse,
                                      "description": description[0].upper() + description[1:]}
            self.response_fields[status] = create_model_field(
                name=f"Response_{status}_{self.unique_id}", type_=ErrorResponse,
                mode="serialization")
        self.responses = dict(sorted(self.responses.items(), key=lambda item: str(item[0])))
