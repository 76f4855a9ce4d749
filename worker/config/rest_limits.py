"""What one REST request and one connection may cost the worker (connect-plane settings).

Kafka Connect's REST server is Jetty with its defaults: an 8 KiB request head (request line
and headers; 414/431 beyond), a 30 s idle timeout per read, no limit on a body's size and no
cap on connections. A Connect worker must stay responsive to requests nobody authenticated
yet (internal requests are let through authentication, and every request is read before it
can be authenticated), so here every part of a request has a limit that is enforced before
authentication and before any parsing (``worker.rest.http_limits`` for the request line,
headers, header time and connections; ``worker.rest.body_limits`` for bodies):

=========================================  ============  ==================================
key                                        default       what it bounds
=========================================  ============  ==================================
``rest.request.line.max.bytes``            8192          request line (method, target,
                                                         version); 414 beyond
``rest.request.headers.max.bytes``         16384         all header lines together; 431
``rest.request.headers.max.count``         100           number of header lines; 431
``rest.request.headers.timeout.ms``        10000         from a request's first byte (or a
                                                         new connection) to its last header
                                                         line; 408 and closed
``rest.request.body.max.bytes``            1048576       a body of any route not below
                                                         (connector configs, validation,
                                                         dynamic worker config, loggers); 413
``rest.request.body.offsets.max.bytes``    8388608       ``PATCH /connectors/{c}/offsets``
``rest.request.body.internal.max.bytes``   8388608       requests between workers (``POST
                                                         /connectors/{c}/tasks``)
``rest.request.body.timeout.ms``           30000         from the end of the headers to the
                                                         body's last byte; 408
``rest.max.connections``                   512           open connections over all
                                                         listeners; 503 and closed beyond
=========================================  ============  ==================================

docs/security.md lists them with what Kafka Connect does in each case.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from worker.api.config_def import ConfigDef, Importance, Type, at_least

KIB = 1024
MIB = 1024 * KIB

REQUEST_LINE_MAX_BYTES = "rest.request.line.max.bytes"
HEADERS_MAX_BYTES = "rest.request.headers.max.bytes"
HEADERS_MAX_COUNT = "rest.request.headers.max.count"
HEADERS_TIMEOUT_MS = "rest.request.headers.timeout.ms"
BODY_MAX_BYTES = "rest.request.body.max.bytes"
OFFSETS_BODY_MAX_BYTES = "rest.request.body.offsets.max.bytes"
INTERNAL_BODY_MAX_BYTES = "rest.request.body.internal.max.bytes"
BODY_TIMEOUT_MS = "rest.request.body.timeout.ms"
MAX_CONNECTIONS = "rest.max.connections"

_OURS = " (connect-plane setting; docs/security.md)"

REST_LIMITS = (
    ConfigDef()
    .define(REQUEST_LINE_MAX_BYTES, Type.INT, 8 * KIB, Importance.LOW,
            "Longest request line (method, target and version) the REST listeners read; a "
            "longer one is answered 414 and the connection closed" + _OURS,
            validator=at_least(256))
    .define(HEADERS_MAX_BYTES, Type.INT, 16 * KIB, Importance.LOW,
            "Largest total size of a request's header lines; beyond it the request is "
            "answered 431 and the connection closed" + _OURS, validator=at_least(1 * KIB))
    .define(HEADERS_MAX_COUNT, Type.INT, 100, Importance.LOW,
            "Most header lines in one request; more are answered 431" + _OURS,
            validator=at_least(8))
    .define(HEADERS_TIMEOUT_MS, Type.LONG, 10_000, Importance.LOW,
            "Time a client has from opening a connection, or from the first byte of a "
            "request, to the end of its headers; a slower request is answered 408 and the "
            "connection closed" + _OURS, validator=at_least(100))
    .define(BODY_MAX_BYTES, Type.LONG, 1 * MIB, Importance.LOW,
            "Largest request body of a route not covered by the two settings below "
            "(connector configs, validation, the dynamic worker configuration, loggers); "
            "a larger one is answered 413 before it is read" + _OURS,
            validator=at_least(1 * KIB))
    .define(OFFSETS_BODY_MAX_BYTES, Type.LONG, 8 * MIB, Importance.LOW,
            "Largest body of PATCH /connectors/{c}/offsets" + _OURS,
            validator=at_least(1 * KIB))
    .define(INTERNAL_BODY_MAX_BYTES, Type.LONG, 8 * MIB, Importance.LOW,
            "Largest body of a request between workers (POST /connectors/{c}/tasks: a "
            "connector's task configs)" + _OURS, validator=at_least(1 * KIB))
    .define(BODY_TIMEOUT_MS, Type.LONG, 30_000, Importance.LOW,
            "Time a client has from the end of a request's headers to the last byte of its "
            "body; a slower request is answered 408 and the connection closed" + _OURS,
            validator=at_least(100))
    .define(MAX_CONNECTIONS, Type.INT, 512, Importance.LOW,
            "Most connections the REST listeners keep open together; a connection beyond "
            "it is answered 503 and closed at once" + _OURS, validator=at_least(1))
)


@dataclass(frozen=True)
class RestLimits:
    """The limits as the REST server applies them (bytes, seconds, counts)."""

    request_line_max_bytes: int = 8 * KIB
    headers_max_bytes: int = 16 * KIB
    headers_max_count: int = 100
    headers_timeout_s: float = 10.0
    body_max_bytes: int = 1 * MIB
    offsets_body_max_bytes: int = 8 * MIB
    internal_body_max_bytes: int = 8 * MIB
    body_timeout_s: float = 30.0
    max_connections: int = 512

    @classmethod
    def from_values(cls, get: Any) -> RestLimits:
        """From a typed config's ``get(key)`` (``WorkerConfig.get``)."""
        return cls(
            request_line_max_bytes=int(get(REQUEST_LINE_MAX_BYTES)),
            headers_max_bytes=int(get(HEADERS_MAX_BYTES)),
            headers_max_count=int(get(HEADERS_MAX_COUNT)),
            headers_timeout_s=int(get(HEADERS_TIMEOUT_MS)) / 1000,
            body_max_bytes=int(get(BODY_MAX_BYTES)),
            offsets_body_max_bytes=int(get(OFFSETS_BODY_MAX_BYTES)),
            internal_body_max_bytes=int(get(INTERNAL_BODY_MAX_BYTES)),
            body_timeout_s=int(get(BODY_TIMEOUT_MS)) / 1000,
            max_connections=int(get(MAX_CONNECTIONS)),
        )
