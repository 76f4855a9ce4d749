"""Bodies of ``/connector-plugins``: installed plugins, config definitions, validation.

Named after Kafka Connect's entities (``PluginInfo``, ``ConfigKeyInfo``,
``ConfigValueInfo``, ``ConfigInfo``, ``ConfigInfos``). Two JSON names differ from the
herder's attributes: a plugin's ``class_name`` is ``class``, a key's ``order_in_group`` is
``order``. A plugin's ``version`` is left out when it is ``"undefined"``, as Connect does.
"""

from __future__ import annotations

from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from worker.rest.datamodels.base import ResponseModel

#: What Connect prints for a plugin without a version (``PluginDesc.UNDEFINED_VERSION``).
UNDEFINED_VERSION = "undefined"


def _no_version(version: str | None) -> bool:
    return not version or version == UNDEFINED_VERSION


class PluginInfoResponse(ResponseModel):
    """One installed plugin: ``{"class", "type", "version"}``."""

    class_name: str = Field(serialization_alias="class")
    type: str = Field(description="source, sink, converter, header_converter, "
                                  "transformation or predicate")
    version: str | SkipJsonSchema[None] = Field(
        default=None, exclude_if=_no_version,
        description="Left out when the plugin does not declare one")


class ConfigKeyInfoResponse(ResponseModel):
    """A config key's definition."""

    name: str
    type: str = Field(description="The ConfigDef type: STRING, INT, LIST, ...")
    required: bool = Field(description="True when the key has no default value")
    default_value: str | None
    importance: str
    documentation: str | None
    group: str | None
    width: str
    display_name: str
    dependents: list[str]
    order_in_group: int = Field(serialization_alias="order")


class ConfigValueInfoResponse(ResponseModel):
    """A config key's validated value, recommended values and errors."""

    name: str
    value: str | None
    recommended_values: list[str]
    errors: list[str] = Field(description="Why the value is invalid; empty when valid")
    visible: bool


class ConfigInfoResponse(ResponseModel):
    """A key's definition together with its validated value."""

    definition: ConfigKeyInfoResponse
    value: ConfigValueInfoResponse


class ConfigInfosResponse(ResponseModel):
    """Result of ``PUT /connector-plugins/{p}/config/validate``."""

    name: str = Field(description="The connector class validated")
    error_count: int
    groups: list[str]
    configs: list[ConfigInfoResponse]
