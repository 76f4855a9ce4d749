"""``/connector-plugins``: installed plugins, their config definitions, config validation.

The counterpart of Kafka Connect's ``ConnectorPluginsResource``.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body, Query

from worker.errors import BadRequestError
from worker.herder.models import ConfigInfos, ConfigKeyInfo, PluginInfo
from worker.rest.datamodels.base import ConnectorConfigMap
from worker.rest.datamodels.connector_plugins import (
    ConfigInfosResponse,
    ConfigKeyInfoResponse,
    PluginInfoResponse,
)
from worker.rest.deps import HerderDep, query_flag
from worker.rest.openapi import error_responses
from worker.rest.routing import ConnectRoute

router = APIRouter(prefix="/connector-plugins", tags=["connector-plugins"],
                   route_class=ConnectRoute)

_ALIAS_SUFFIX = "Connector"


def _normalized(plugin: str) -> str:
    """Connect's alias rule: ``FileStreamSourceConnector`` and ``FileStreamSource`` match."""
    if plugin.endswith(_ALIAS_SUFFIX) and len(plugin) > len(_ALIAS_SUFFIX):
        return plugin[: -len(_ALIAS_SUFFIX)]
    return plugin


@router.get("", summary="List installed plugins (only connectors unless told otherwise)",
            response_model=list[PluginInfoResponse])
def list_plugins(
    herder: HerderDep,
    connectors_only: Annotated[str | None, Query(alias="connectorsOnly")] = None,
) -> list[PluginInfo]:
    """Connectors only by default; ``?connectorsOnly=false`` adds converters, SMTs..."""
    return herder.plugins(connectors_only=query_flag(connectors_only, True))


@router.get("/{plugin}/config", summary="Get a plugin's configuration definition",
            response_model=list[ConfigKeyInfoResponse],
            responses=error_responses((404, "Unknown plugin")))
def get_plugin_config(plugin: str, herder: HerderDep) -> list[ConfigKeyInfo]:
    """The plugin's config keys; 404 for an unknown plugin."""
    return herder.plugin_config(plugin)


@router.put("/{plugin}/config/validate", summary="Validate a connector configuration",
            response_model=ConfigInfosResponse,
            responses=error_responses((400, "connector.class is missing, unknown, or not "
                                            "the plugin of the path")))
def validate_config(plugin: str, config: Annotated[ConnectorConfigMap, Body()],
                    herder: HerderDep) -> ConfigInfos:
    """Validate without storing; ``connector.class``, when given, must name ``plugin``.

    The match is Connect's: the class (full or simple name, or alias) must end with the
    path's plugin name once a trailing ``Connector`` is dropped from both.
    """
    included = config.get("connector.class")
    if included is not None and not _normalized(included).endswith(_normalized(plugin)):
        raise BadRequestError(f"Included connector type {included} does not match "
                              f"request type {plugin}")
    return herder.validate_connector_config(config)
