"""Internal requests between workers (KIP-507): signature first, body second, parse last.

An internal request (``POST /connectors/{c}/tasks``) is let through authentication, as in
Kafka, so anyone who reaches the listener can send one. Its handling is ordered so that an
unsigned or forged request costs the worker no more than its bounded body
(``worker.rest.body_limits``):

1. no signature headers: the herder decides before a byte of the body is read (where
   signing is on, 400 "Internal request missing required signature");
2. the body is read, at most ``rest.request.body.internal.max.bytes``;
3. the signature (``X-Connect-Authorization`` with ``X-Connect-Request-Signature-Algorithm``)
   is verified over those exact bytes (400 for an unknown algorithm or a signature that is
   not base64, 403 for a wrong one, 503 without a session key, as Kafka answers);
4. only then is the body parsed, off the event loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, TypeVar

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from pydantic import TypeAdapter, ValidationError

from worker.herder.base import Herder
from worker.herder.request_signing import (
    SIGNATURE_ALGORITHM_HEADER,
    SIGNATURE_HEADER,
    InternalRequestSignature,
)
from worker.rest.body_limits import read_body
from worker.rest.datamodels.base import ConfigMap
from worker.rest.deps import require_json

T = TypeVar("T")

_TASK_CONFIGS = TypeAdapter(list[ConfigMap])


async def _off_loop(call: Callable[..., T], *args: Any) -> T:
    return await asyncio.get_running_loop().run_in_executor(None, call, *args)


async def verified_body(request: Request, herder: Herder) -> bytes:
    """The body of an internal request whose signature the herder accepted (steps 1-3);
    415 first for a body not sent as JSON, as Jersey checks the media type first."""
    require_json(request)
    algorithm = request.headers.get(SIGNATURE_ALGORITHM_HEADER)
    signature = request.headers.get(SIGNATURE_HEADER)
    if algorithm is None or signature is None:
        await _off_loop(herder.verify_internal_request, None)
        return await read_body(request)
    body = await read_body(request)
    signed = InternalRequestSignature.from_headers(body, algorithm, signature)
    await _off_loop(herder.verify_internal_request, signed)
    return body


def _parse_task_configs(body: bytes) -> list[dict[str, str]]:
    try:
        return [dict(config) for config in _TASK_CONFIGS.validate_json(body)]
    except ValidationError as exc:
        # Reported as FastAPI reports a body it parsed (worker.rest.errors): where and
        # what, never the input.
        raise RequestValidationError(
            [{**error, "loc": ("body", *error["loc"])} for error in exc.errors()]) from None


async def task_configs(request: Request, herder: Herder) -> list[dict[str, str]]:
    """The task configs of a verified ``POST /connectors/{c}/tasks`` (steps 1-4)."""
    body = await verified_body(request, herder)
    return await _off_loop(_parse_task_configs, body)
