"""KIP-1017 health statuses, with Apache Kafka Connect's exact wording.

``GET /health`` answers 200 ``healthy`` once the worker finished starting and its herder
handled a no-op request in time, 503 ``starting`` before that, and 500 ``unhealthy`` when
the no-op request timed out (Kafka's 10 s bound). Kafka appends details (the stage the
herder is in) to the message; we append where the herder thread is stuck, and keep its
whole stack in ``worker_thread_details`` for the log (the JSON body is Kafka's two fields).
"""

from __future__ import annotations

import logging
import os
import sys
import sysconfig
import threading
import traceback
from concurrent.futures import Future

from worker.herder.models import HealthStatus

log = logging.getLogger(__name__)

#: Kafka's ``RestServerConfig`` health check timeout (not configurable there either).
HEALTH_CHECK_TIMEOUT_S = 10.0

HEALTHY = "healthy"
STARTING = "starting"
UNHEALTHY = "unhealthy"

HEALTHY_MESSAGE = "Worker has completed startup and is ready to handle requests."
STARTING_MESSAGE = "Worker is still starting up."
UNHEALTHY_MESSAGE = ("Worker was unable to handle this request and may be unable to handle "
                     "other requests.")


def probe(request: Future[None], timeout_s: float,
          thread: threading.Thread | None = None) -> HealthStatus:
    """Healthy if the herder's no-op ``request`` completes within ``timeout_s``.

    A request that fails (rather than times out) is re-raised, as Kafka's RootResource
    does, and answered with a plain 500 error.
    """
    try:
        request.result(timeout_s)
    except TimeoutError:
        status = unhealthy(thread)
        log.warning("Health check: the herder did not answer a no-op request within %.0f s. "
                    "%s", timeout_s, status.worker_thread_details or "")
        return status
    return healthy()


def healthy() -> HealthStatus:
    return HealthStatus(HEALTHY, HEALTHY_MESSAGE)


def starting(details: str | None = None) -> HealthStatus:
    return HealthStatus(STARTING, _with(STARTING_MESSAGE, details))


def unhealthy(thread: threading.Thread | None = None) -> HealthStatus:
    """Unhealthy; with ``thread`` (the herder's), say where it is and keep its stack."""
    stack = thread_stack(thread) if thread is not None else None
    if thread is None or not stack:
        return HealthStatus(UNHEALTHY, UNHEALTHY_MESSAGE)
    last = _innermost_own_frame(stack)
    details = f"The {thread.name} thread is busy in {last.name} ({last.filename}:{last.lineno})."
    return HealthStatus(UNHEALTHY, _with(UNHEALTHY_MESSAGE, details),
                        "".join(traceback.format_list(stack)))


def short_of_resources(problem: str) -> HealthStatus:
    """Unhealthy because the worker lacks a resource it needs (our extension: Kafka's
    check knows only a stuck herder)."""
    return HealthStatus(UNHEALTHY, problem)


def thread_stack(thread: threading.Thread) -> traceback.StackSummary | None:
    """The current stack of a live thread, innermost frame last; None if it is gone."""
    frame = sys._current_frames().get(thread.ident or -1)
    return traceback.extract_stack(frame) if frame is not None else None


def _innermost_own_frame(stack: traceback.StackSummary) -> traceback.FrameSummary:
    """The innermost frame outside the standard library: the call that is stuck, not the
    ``threading.wait`` it is stuck in."""
    stdlib = sysconfig.get_paths()["stdlib"] + os.sep
    own = [frame for frame in stack if not frame.filename.startswith(stdlib)]
    return own[-1] if own else stack[-1]


def _with(message: str, details: str | None) -> str:
    # Kafka's WorkerStatus: the message, then a space and the details when there are any.
    return f"{message} {details}" if details else message
