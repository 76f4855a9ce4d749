"""Bodies of the admin-style endpoints: active topics (KIP-558), loggers (KIP-495/976)
and health (KIP-1017), named after Kafka Connect's entities.

``ActiveTopicsInfo`` serializes to ``{"topics": [...]}`` (Kafka keeps the connector name
out of the JSON and uses it as the key of the enclosing map); ``LoggerLevel`` always
carries ``last_modified``, ``null`` until the level is changed through the API;
``WorkerStatus`` is ``{"status", "message"}`` only.
"""

from __future__ import annotations

from pydantic import Field

from worker.herder import models as domain
from worker.rest.models import ConfigValue, _Response

#: ``PUT /admin/loggers/{logger}``: Kafka reads a ``Map<String, String>`` and uses only
#: ``level``; other keys are ignored, numbers and booleans become strings (Jackson).
LevelRequest = dict[str, ConfigValue | None]


class ActiveTopicsInfo(_Response):
    """The value under the connector's name in ``GET /connectors/{c}/topics``."""

    topics: list[str]


class LoggerLevel(_Response):
    """A logger's level and when it was last changed through the API (ms, or null)."""

    level: str
    last_modified: int | None = Field(
        description="Unix time (ms) of the last change through the API on this worker; "
                    "null if it was never changed since the worker started")

    @classmethod
    def from_domain(cls, level: domain.LoggerLevel) -> LoggerLevel:
        return cls(level=level.level, last_modified=level.last_modified)


class WorkerStatus(_Response):
    """``GET /health``: ``healthy`` (200), ``starting`` (503) or ``unhealthy`` (500)."""

    status: str
    message: str

    @classmethod
    def from_domain(cls, status: domain.HealthStatus) -> WorkerStatus:
        return cls(status=status.status, message=status.message)
