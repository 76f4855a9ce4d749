"""What every REST datamodel shares: the base classes, ``ErrorResponse``, config values.

Responses reproduce the JSON that Apache Kafka Connect's Jackson mapping produces. They read
the herder's dataclasses by attribute (``from_attributes``), so a field is declared once,
here on the wire side; where the JSON name differs from the attribute (``class``, ``order``)
a serialization alias says so, and where Connect leaves a value out instead of printing
``null`` (``@JsonInclude(NON_EMPTY)``) the field says so with ``exclude_if``.

Request bodies forbid unknown fields, as Jackson's default ``FAIL_ON_UNKNOWN_PROPERTIES``
does, and accept JSON numbers and booleans where Connect expects strings, as Jackson
coerces them (``"tasks.max": 1`` is a common, valid request).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, WithJsonSchema


class ResponseModel(BaseModel):
    """Base of response models: built from the herder's objects, serialized by the JSON
    names Connect uses."""

    model_config = ConfigDict(from_attributes=True, serialize_by_alias=True, frozen=True)


class BodyModel(BaseModel):
    """Base of request bodies: an unknown field is an error, as in Connect."""

    model_config = ConfigDict(extra="forbid")


class ErrorResponse(ResponseModel):
    """Every error response: ``{"error_code", "message"}`` (Connect's ``ErrorMessage``)."""

    error_code: int
    message: str


def coerce_scalar(value: Any) -> Any:
    """Turn a JSON number or boolean into the string Jackson would have made of it."""
    if isinstance(value, bool):  # before int: bool is an int subclass
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return value


def omit_empty(value: str | None) -> bool:
    """``exclude_if`` of a string Connect leaves out when null or empty."""
    return not value


def omit_none(value: object) -> bool:
    """``exclude_if`` of a value Connect leaves out when absent."""
    return value is None


#: The JSON schema of what :func:`coerce_scalar` accepts: the OpenAPI document says what
#: the server takes, so that generated clients and fuzzers agree with it.
SCALAR_SCHEMA: dict[str, Any] = {
    "anyOf": [{"type": "string"}, {"type": "number"}, {"type": "boolean"}]}

#: A config value: a JSON string, or a number/boolean coerced to one.
ConfigValue = Annotated[str, BeforeValidator(coerce_scalar),
                        WithJsonSchema(SCALAR_SCHEMA, mode="validation")]
#: A connector config as sent by clients.
ConfigMap = dict[str, ConfigValue]
#: A connector config that must name its connector: Connect answers 400 ("... contains
#: no connector type") without ``connector.class``. Only the document says it is required;
#: the herder gives the answer, in Kafka's words.
ConnectorConfigMap = Annotated[ConfigMap, WithJsonSchema({
    "type": "object", "required": ["connector.class"],
    "properties": {"connector.class": {"type": "string", "minLength": 1}},
    "additionalProperties": SCALAR_SCHEMA}, mode="validation")]
#: A ``PATCH .../config`` body: a null value removes the key.
ConfigPatch = dict[str, ConfigValue | None]
