"""``/connector-plugins``: installed plugins, their config definitions, config validation.

The counterpart of Kafka Connect's ``ConnectorPluginsResource``.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body, Query

from worker.errors import BadRequestError
from worker.rest.deps import HerderDep, blocking, query_flag
from worker.rest.models import ConfigInfos, ConfigKeyInfo, ConfigMap, PluginInfo

router = APIRouter(prefix="/connector-plugins", tags=["connector-plugins"])

_ALIAS_SUFFIX = "Connector"


def _normalized(plugin: str) -> str:
    """Connect's alias rule: ``FileStreamSourceConnector`` and ``FileStreamSource`` match."""
    if plugin.endswith(_ALIAS_SUFFIX) and len(plugin) > len(_ALIAS_SUFFIX):
        return plugin[: -len(_ALIAS_SUFFIX)]
    return plugin


@router.get("", summary="List installed plugins (only connectors unless told otherwise)")
@blocking
def list_plugins(
    herder: HerderDep,
    connectors_only: Annotated[str | None, Query(alias="connectorsOnly")] = None,
) -> list[PluginInfo]:
    """Connectors only by default; ``?connectorsOnly=false`` adds converters, SMTs..."""
    plugins = herder.plugins(connectors_only=query_flag(connectors_only, True))
    return [PluginInfo.from_domain(plugin) for plugin in plugins]


@router.get("/{plugin}/config", summary="Get a plugin's configuration definition")
@blocking
def get_plugin_config(plugin: str, herder: HerderDep) -> list[ConfigKeyInfo]:
    """The plugin's config keys; 404 for an unknown plugin."""
    return [ConfigKeyInfo.from_domain(key) for key in herder.plugin_config(plugin)]


@router.put("/{plugin}/config/validate", summary="Validate a connector configuration")
@blocking
def validate_config(plugin: str, config: Annotated[ConfigMap, Body()],
                    herder: HerderDep) -> ConfigInfos:
    """Validate without storing; ``connector.class``, when given, must name ``plugin``.

    The match is Connect's: the class (full or simple name, or alias) must end with the
    path's plugin name once a trailing ``Connector`` is dropped from both.
    """
    included = config.get("connector.class")
    if included is not None and not _normalized(included).endswith(_normalized(plugin)):
        raise BadRequestError(f"Included connector type {included} does not match "
                              f"request type {plugin}")
    return ConfigInfos.from_domain(herder.validate_connector_config(config))
