"""Loading ``rest.extension.classes`` and what the REST app wraps itself in.

:func:`rest_security` is what the composition root calls: it resolves every class listed in
``rest.extension.classes`` (Java class name, Kafka's alias or Python import path, as any
plugin), builds and configures it with the worker's resolved properties, and lets it
register its middleware against a context over the herder. Any failure stops startup with
a ConfigError naming ``rest.extension.classes`` (or the extension's own key, when its
``configure`` names one); the extensions built until then are closed. The result, a
:class:`RestSecurity`, also carries the admin principals (``rest.admin.principals``), and
``create_app`` installs both at their place in the middleware stack
(:meth:`RestSecurity.install`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI

from worker.api.exceptions import ConfigException
from worker.api.rest_extension import (
    ASGIApp,
    ConnectClusterDetails,
    ConnectClusterState,
    ConnectorHealth,
    ConnectorState,
    RestExtension,
    RestExtensionContext,
    TaskState,
)
from worker.config.providers import has_placeholders
from worker.errors import ConfigError, NotFoundError, PluginNotFoundError
from worker.herder.base import Herder
from worker.plugins.registry import PluginRegistry, PluginType
from worker.rest.errors import UnhandledErrorMiddleware
from worker.rest.security.authorization import (
    ADMIN_PRINCIPALS_CONFIG,
    AdminAuthorizationMiddleware,
    AdminPrincipals,
)

if TYPE_CHECKING:
    from worker.config.worker_config import WorkerConfig

log = logging.getLogger("worker.rest")  # the REST layer logs on one logger

REST_EXTENSION_CLASSES_CONFIG = "rest.extension.classes"


class HerderClusterState(ConnectClusterState):
    """Kafka's ``ConnectClusterStateImpl``: the cluster as the herder knows it."""

    def __init__(self, herder: Herder) -> None:
        self._herder = herder

    def connectors(self) -> list[str]:
        return self._herder.connectors()

    def connector_health(self, name: str) -> ConnectorHealth:
        try:
            info = self._herder.connector_status(name)
        except NotFoundError as exc:
            raise LookupError(str(exc)) from exc
        tasks = {t.id: TaskState(t.state, t.worker_id, t.trace, t.id) for t in info.tasks}
        state = ConnectorState(info.connector.state, info.connector.worker_id,
                               info.connector.trace)
        return ConnectorHealth(info.name, state, tasks, str(info.type))

    def connector_config(self, name: str) -> dict[str, str]:
        try:
            return self._herder.connector_config(name)
        except NotFoundError as exc:
            raise LookupError(str(exc)) from exc

    def cluster_details(self) -> ConnectClusterDetails:
        return ConnectClusterDetails(self._herder.server_info().kafka_cluster_id)


Middleware = tuple[Callable[..., ASGIApp], dict[str, Any]]


class _Context(RestExtensionContext):
    def __init__(self, state: ConnectClusterState, worker_id: str) -> None:
        self.middleware: list[Middleware] = []
        self._state = state
        self._worker_id = worker_id

    def add_middleware(self, middleware: Callable[..., ASGIApp], **options: Any) -> None:
        self.middleware.append((middleware, options))

    @property
    def cluster_state(self) -> ConnectClusterState:
        return self._state

    @property
    def worker_id(self) -> str:
        return self._worker_id


@dataclass
class RestSecurity:
    """The REST extensions of a worker, the middleware they registered, and the admin
    principals. The default (no extension, no admin principals) changes nothing."""

    extensions: list[RestExtension] = field(default_factory=list)
    middleware: list[Middleware] = field(default_factory=list)
    admin_principals: AdminPrincipals = field(default_factory=AdminPrincipals)

    @property
    def authenticates(self) -> bool:
        """Whether a REST extension wraps the API (it may answer 401)."""
        return bool(self.middleware)

    def install(self, app: FastAPI) -> None:
        """Add the middleware to ``app``: call it inside the listener rules and outside the
        body cache, so unauthenticated bodies are never read. Innermost first (Starlette
        wraps each added middleware around the previous ones): admin authorization, then
        the extensions' middleware, the first listed outermost, and around them a guard
        that answers an exception from extension code with a 500 error body."""
        if self.admin_principals:
            app.add_middleware(AdminAuthorizationMiddleware, principals=self.admin_principals)
        if not self.middleware:
            return
        for factory, options in reversed(self.middleware):
            app.add_middleware(factory, **options)
        app.add_middleware(UnhandledErrorMiddleware)

    def close(self) -> None:
        """Close every extension (failures are logged, never raised)."""
        for extension in self.extensions:
            try:
                extension.close()
            except Exception as exc:  # noqa: BLE001 - extension code; the worker stops
                # Its type only: an extension's message may hold a secret.
                log.warning("REST extension %s failed to close (%s)",
                            type(extension).__name__, type(exc).__name__)
        self.extensions = []


def _load(names: Sequence[str], configs: dict[str, str], raw: dict[str, str],
          registry: PluginRegistry) -> list[RestExtension]:
    built: list[RestExtension] = []
    try:
        for name in names:
            try:
                desc = registry.resolve(name, PluginType.REST_EXTENSION)
            except PluginNotFoundError as exc:
                raise ConfigError(REST_EXTENSION_CLASSES_CONFIG,
                                  f"Class {name} could not be found. {exc}") from None
            extension: RestExtension = desc.plugin_class()
            built.append(extension)
            try:
                extension.configure(configs)
            except ConfigException as exc:
                # The reason is shown; a value resolved from a placeholder never is.
                origin = (f" (the value of {raw[exc.name]})"
                          if has_placeholders(raw.get(exc.name)) else "")
                raise ConfigError(exc.name or REST_EXTENSION_CLASSES_CONFIG,
                                  f"{exc.reason}{origin} (REST extension {desc.class_name} "
                                  f"of {REST_EXTENSION_CLASSES_CONFIG})") from None
            except Exception as exc:  # noqa: BLE001 - extension code; its message not shown
                raise ConfigError(REST_EXTENSION_CLASSES_CONFIG,
                                  f"REST extension {desc.class_name} failed to configure "
                                  f"({type(exc).__name__})") from None
            log.info("REST extension %s (version %s)", desc.class_name, desc.version)
    except BaseException:
        RestSecurity(built).close()
        raise
    return built


def rest_security(config: WorkerConfig, registry: PluginRegistry, herder: Herder,
                  worker_id: str) -> RestSecurity:
    """Load, configure and register the worker's REST extensions and read its admin
    principals (see the module docstring); ConfigError on any problem."""
    principals = AdminPrincipals.parse(config.get(ADMIN_PRINCIPALS_CONFIG) or "")
    names = [str(n).strip() for n in config.get(REST_EXTENSION_CLASSES_CONFIG) or ()]
    extensions = _load([n for n in names if n], config.originals, config.raw, registry)
    security = RestSecurity(extensions, [], principals)
    context = _Context(HerderClusterState(herder), worker_id)
    for extension in extensions:
        try:
            extension.register(context)
        except Exception as exc:  # noqa: BLE001 - extension code; its message not shown
            security.close()
            raise ConfigError(REST_EXTENSION_CLASSES_CONFIG,
                              f"REST extension {type(extension).__name__} failed to "
                              f"register ({type(exc).__name__})") from None
    security.middleware = context.middleware
    if principals and not extensions and not any(
            str(url).strip().lower().startswith("https://") for url in config.listeners):
        log.warning("%s is set, but no request can carry a principal (no REST extension "
                    "authenticates and no listener is https): every /admin/* write will be "
                    "refused", ADMIN_PRINCIPALS_CONFIG)
    return security
