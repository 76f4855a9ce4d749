"""Development and test helpers that ship with the package.

:class:`EmbeddedBroker` runs the Tansu test broker (see ``docs/architecture.md`` §6);
:class:`WorkerProcess` runs a ``connect-standalone`` / ``connect-distributed`` worker as a
subprocess the way users run it. Both serve the demos and the test suite.
"""

from __future__ import annotations

from worker.testing.broker import BrokerStartError, EmbeddedBroker, resolve_tansu_binary
from worker.testing.process import (
    DISTRIBUTED_MODULE,
    STANDALONE_MODULE,
    WorkerProcess,
    WorkerStartError,
    write_properties,
)
from worker.testing.processes import free_port, log_tail, terminate_process

__all__ = [
    "DISTRIBUTED_MODULE",
    "STANDALONE_MODULE",
    "BrokerStartError",
    "EmbeddedBroker",
    "free_port",
    "log_tail",
    "resolve_tansu_binary",
    "terminate_process",
    "WorkerProcess",
    "WorkerStartError",
    "write_properties",
]
