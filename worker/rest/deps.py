"""FastAPI dependencies shared by the routers: the herder, and Connect's query flags."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Coroutine
from typing import Annotated, Any, ParamSpec, TypeVar

from fastapi import Depends, Request

from worker.herder.base import Herder


async def get_herder(request: Request) -> Herder:
    """The herder this app was built with (``create_app`` stores it on ``app.state``).

    ``async`` on purpose: FastAPI runs a plain ``def`` dependency in its thread pool, which
    would cost every request a second thread hop for a mere attribute read.
    """
    herder: Herder = request.app.state.herder
    return herder


P = ParamSpec("P")
R = TypeVar("R")


def blocking(handler: Callable[P, R]) -> Callable[P, Coroutine[Any, Any, R]]:
    """Run a handler that calls the herder (which may block) on the REST thread pool.

    Handlers stay plain functions; FastAPI sees an ``async`` endpoint with the same
    signature and awaits it on the event loop, which never blocks. The hop goes through the
    loop's default executor, which ``RestServer`` sets to its ``DaemonThreadPool``.
    """
    @functools.wraps(handler)
    async def run(*args: P.args, **kwargs: P.kwargs) -> R:
        call = functools.partial(handler, *args, **kwargs)
        return await asyncio.get_running_loop().run_in_executor(None, call)
    return run


#: Inject the herder into a handler: ``def handler(herder: HerderDep) -> ...``.
HerderDep = Annotated[Herder, Depends(get_herder)]


def query_flag(value: str | None, default: bool) -> bool:
    """Read a boolean query parameter the way JAX-RS does (``Boolean.valueOf``).

    Only ``true`` (any case) is true; any other value is false rather than an error, so
    ``?includeTasks=yes`` behaves exactly as it does against Apache Kafka Connect.
    """
    if value is None:
        return default
    return value.lower() == "true"
