"""Bodies of ``/admin/loggers`` (KIP-495, KIP-976).

``LoggerLevelResponse`` always carries ``last_modified``: ``null`` until the level is changed
through the API.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, WithJsonSchema

from worker.rest.datamodels.base import SCALAR_SCHEMA, ConfigValue, ResponseModel

#: ``PUT /admin/loggers/{logger}``: Kafka reads a ``Map<String, String>`` and uses only
#: ``level``; other keys are ignored, numbers and booleans become strings (Jackson). A
#: missing ``level`` gets Kafka's 400 from the handler; the document says it is required.
LevelBody = Annotated[dict[str, ConfigValue | None], WithJsonSchema({
    "type": "object", "required": ["level"],
    "properties": {"level": {"type": "string",
                             "description": "TRACE, DEBUG, INFO, WARN, ERROR or FATAL"}},
    "additionalProperties": {"anyOf": [*SCALAR_SCHEMA["anyOf"], {"type": "null"}]},
}, mode="validation")]


class LoggerLevelResponse(ResponseModel):
    """A logger's level and when it was last changed through the API (ms, or null)."""

    level: str
    last_modified: int | None = Field(
        description="Unix time (ms) of the last change through the API on this worker; "
                    "null if it was never changed since the worker started")
