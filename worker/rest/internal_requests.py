"""Internal requests between workers (KIP-507): the signature a request carries.

``InternalSignature`` is a dependency of the internal routes (``POST
/connectors/{c}/tasks``): the request's ``X-Connect-Authorization`` and
``X-Connect-Request-Signature-Algorithm`` headers over its exact body bytes, for the
herder to check (``Herder.verify_internal_request``). An unknown algorithm or a
signature that is not base64 answers 400 here, as Kafka's resource does.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from worker.herder.request_signing import (
    SIGNATURE_ALGORITHM_HEADER,
    SIGNATURE_HEADER,
    InternalRequestSignature,
)


async def internal_signature(request: Request) -> InternalRequestSignature | None:
    """``async``: the body is read on the loop (FastAPI has it cached by then)."""
    return InternalRequestSignature.from_headers(
        await request.body(), request.headers.get(SIGNATURE_ALGORITHM_HEADER),
        request.headers.get(SIGNATURE_HEADER))


#: Inject the request's signature (None: unsigned) into an internal route's handler.
InternalSignature = Annotated[InternalRequestSignature | None, Depends(internal_signature)]
