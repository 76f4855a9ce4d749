"""FastAPI dependencies shared by the routers: the herder, and Connect's query flags.

Handlers that call the herder are plain functions; the routers' route class
(``worker.rest.routing.ConnectRoute``) runs them off the event loop.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

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


def query_flag(value: str | None, default: bool) -> bool:
    """Read a boolean query parameter the way JAX-RS does (``Boolean.valueOf``).

    Only ``true`` (any case) is true; any other value is false rather than an error, so
    ``?includeTasks=yes`` behaves exactly as it does against Apache Kafka Connect.
    """
    if value is None:
        return default
    return value.lower() == "true"
