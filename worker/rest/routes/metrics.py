"""``/metrics``: the worker's metrics in Prometheus text format (our extension).

Kafka Connect's metric groups and names (docs/metrics.md), collected at scrape time by the
collector the composition root registered in the ``CollectorRegistry`` it hands the app
(``app.state.metrics``); the exposition format is ``prometheus_client``'s own. Without a
registry (``rest.metrics.enabled=false``) the endpoint answers 404; on an
``admin.listeners`` listener it is a 404 like every non-admin path
(``worker.rest.app.AdminListenerMiddleware``). REST extensions (authentication) apply as
to every other endpoint.
"""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from prometheus_client import CONTENT_TYPE_PLAIN_0_0_4, generate_latest
from prometheus_client.registry import CollectorRegistry

from worker.errors import NotFoundError
from worker.rest.openapi import error_responses
from worker.rest.routing import ConnectRoute

router = APIRouter(tags=["metrics"], route_class=ConnectRoute)

#: ``app.state`` attribute holding the registry ``/metrics`` exposes (None: disabled).
METRICS_REGISTRY = "metrics"
DISABLED = "Metrics are not served by this worker (rest.metrics.enabled=false)"
#: The text format every Prometheus server reads (0.26's default is the 1.0.0 format,
#: which only Prometheus 3 reads); the names are plain ASCII either way.
CONTENT_TYPE = CONTENT_TYPE_PLAIN_0_0_4


@router.get("/metrics", summary="The worker's metrics (Kafka Connect's metric groups and "
                                "names) in Prometheus text format",
            response_class=Response,
            responses={200: {"description": "Prometheus text exposition format 0.0.4",
                             "content": {CONTENT_TYPE: {"schema": {"type": "string"}}}},
                       **error_responses((404, DISABLED))})
def metrics(request: Request) -> Response:
    """200 with every metric family of this worker (never forwarded)."""
    registry: CollectorRegistry | None = getattr(request.app.state, METRICS_REGISTRY, None)
    if registry is None:
        raise NotFoundError(DISABLED)
    return Response(generate_latest(registry), media_type=CONTENT_TYPE)
