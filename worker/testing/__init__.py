"""Development and test helpers that ship with the package.

:class:`EmbeddedBroker` runs the Tansu test broker (see ``DESIGN.md`` §5); it is used by
``make demo`` and by the test suite's session-scoped Kafka fixture.
"""

from __future__ import annotations

from worker.testing.broker import (
    BrokerStartError,
    EmbeddedBroker,
    free_port,
    log_tail,
    resolve_tansu_binary,
    terminate_process,
)

__all__ = [
    "BrokerStartError",
    "EmbeddedBroker",
    "free_port",
    "log_tail",
    "resolve_tansu_binary",
    "terminate_process",
]
