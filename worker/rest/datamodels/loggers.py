"""Bodies of ``/admin/loggers`` (KIP-495, KIP-976).

``LoggerLevelResponse`` always carries ``last_modified``: ``null`` until the level is changed
through the API.
"""

from __future__ import annotations

from pydantic import Field

from worker.rest.datamodels.base import ConfigValue, ResponseModel

#: ``PUT /admin/loggers/{logger}``: Kafka reads a ``Map<String, String>`` and uses only
#: ``level``; other keys are ignored, numbers and booleans become strings (Jackson).
LevelBody = dict[str, ConfigValue | None]


class LoggerLevelResponse(ResponseModel):
    """A logger's level and when it was last changed through the API (ms, or null)."""

    level: str
    last_modified: int | None = Field(
        description="Unix time (ms) of the last change through the API on this worker; "
                    "null if it was never changed since the worker started")
