"""``/admin/worker`` and ``/admin/cluster``: which worker serves what (our extensions).

``GET /admin/worker`` answers for the worker asked only: its id and advertised URL, the
dynamic configuration it applied (version, overrides, last validation) from the herder,
and its listeners with the certificate each serves, from the REST server. The composition
root hands the route layer that second part as a callable on ``app.state``
(``SERVED_LISTENERS``), since REST routes know the herder, not the server that runs them.
``GET /admin/cluster`` lists the members as this worker knows them.

The overrides in ``/admin/worker`` are shown as ``GET /admin/dynamic-worker-config`` shows
them: a secret's value ``[hidden]`` unless it is only placeholders or the caller is an
admin principal (``worker.rest.deps.reveals_secrets``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from fastapi import APIRouter, Request

from worker.config.dynamic import shown
from worker.herder.models import ClusterInfo
from worker.rest.datamodels.admin import ClusterResponse, WorkerResponse
from worker.rest.deps import HerderDep, RevealSecrets
from worker.rest.routing import ConnectRoute

router = APIRouter(prefix="/admin", tags=["admin"], route_class=ConnectRoute)

#: ``app.state`` attribute: a callable returning this worker's listeners, each with the
#: attributes (or keys) of ``ListenerResponse``: url, protocol, admin, certificate.
SERVED_LISTENERS = "served_listeners"

ServedListeners = Callable[[], Sequence[Any]]


def _listeners(request: Request) -> Sequence[Any]:
    served: ServedListeners | None = getattr(request.app.state, SERVED_LISTENERS, None)
    return [] if served is None else served()


@router.get("/worker", summary="This worker: identity, dynamic configuration applied, "
                               "listeners and served certificates",
            response_model=WorkerResponse)
def get_worker(herder: HerderDep, request: Request, reveal: RevealSecrets) -> dict[str, Any]:
    """200; each worker answers for itself (no forwarding)."""
    info = herder.worker_info()
    applied = info.dynamic_config
    overrides = shown(applied.overrides, reveal_secrets=reveal)
    return {"worker_id": info.worker_id, "url": info.url,
            "dynamic_config": dataclasses.replace(applied, overrides=overrides),
            "listeners": _listeners(request)}


@router.get("/cluster", summary="The cluster's leader, members (URLs) and held work",
            response_model=ClusterResponse)
def get_cluster(herder: HerderDep) -> ClusterInfo:
    """200 from any worker, as of the last assignment it received: the members, and the
    connectors and tasks the leader holds for workers that left (until they rejoin or
    ``scheduled.rebalance.max.delay.ms`` ends); standalone: the worker itself, as leader,
    nothing held."""
    return herder.cluster_info()
