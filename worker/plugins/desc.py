"""Plugin descriptors: a plugin's names and type, and a reference to its class that may
not be imported yet.

Under ``plugin.discovery=service_load`` the worker imports no plugin module until a
connector uses it (KIP-898's point: start-up cost proportional to what runs, not to what is
installed). A :class:`PluginClassRef` is the ``module:Class`` a manifest names; it imports
on first use, once, and remembers the class or why it could not be loaded. Its version
comes from the distribution's metadata until then, and from the class afterwards.
"""

from __future__ import annotations

import builtins
import importlib
import logging
import threading
from dataclasses import dataclass, field
from typing import Any

from worker.errors import PluginNotFoundError
from worker.plugins.types import CLASSPATH, UNDEFINED_VERSION, PluginType, plugin_types_of

log = logging.getLogger(__name__)


def plugin_version(cls: type) -> str:
    """The version a plugin reports; Kafka instantiates plugins to ask for it, too."""
    try:
        return str(cls().version())
    except Exception:  # noqa: BLE001 - a plugin that cannot be built still gets listed
        return UNDEFINED_VERSION


def describe_error(exc: BaseException) -> str:
    """A one-line reason for an import failure (file and line for a syntax error)."""
    if isinstance(exc, SyntaxError):
        return f"SyntaxError: {exc.msg} ({exc.filename}, line {exc.lineno})"
    return f"{type(exc).__name__}: {exc}"


class PluginClassRef:
    """One plugin class: already imported, or ``module:attr`` imported on first use.

    A class implementing several plugin types (a converter that is also a header
    converter) has one reference shared by its descriptors. ``error`` is why it could not
    be loaded; ``not_found`` tells "this class does not exist" (no such module in its
    location, no such attribute) from "it exists but fails to load" (syntax error,
    missing dependency, exception at import) — ``connect-plugin-path sync-manifests``
    removes manifest entries of the first kind and leaves the second alone.
    """

    def __init__(self, module: str, attr: str, *, plugin_class: type | None = None,
                 version: str | None = None, error: str | None = None,
                 not_found: bool = False) -> None:
        self.module = module
        self.attr = attr
        self._class = plugin_class
        self._metadata_version = version
        self._class_version: str | None = version if plugin_class is not None else None
        self._error = error
        self._not_found = not_found
        self._lock = threading.Lock()

    @classmethod
    def of(cls, plugin_class: type, version: str | None = None) -> PluginClassRef:
        """A reference to a class that is already imported."""
        return cls(plugin_class.__module__, plugin_class.__qualname__,
                   plugin_class=plugin_class, version=version)

    @property
    def target(self) -> str:
        """``module:attr``, an entry point's value."""
        return f"{self.module}:{self.attr}"

    @property
    def python_name(self) -> str:
        """``module.attr``, the import path."""
        return f"{self.module}.{self.attr}"

    @property
    def loaded(self) -> bool:
        return self._class is not None

    @property
    def error(self) -> str | None:
        """Why the class could not be loaded (None: loaded, or not tried yet)."""
        return self._error

    @property
    def not_found(self) -> bool:
        return self._not_found

    def load(self) -> type:
        """The class, imported on first call. Raises PluginNotFoundError with the reason,
        the same one on every later call (a broken module is not re-run per use)."""
        with self._lock:
            if self._class is not None:
                return self._class
            if self._error is None:
                self._import()
            if self._class is None:
                raise PluginNotFoundError(f"Failed to load plugin class {self.target}: "
                                          f"{self._error}")
            return self._class

    def _import(self) -> None:
        try:
            obj: Any = importlib.import_module(self.module)
        except ModuleNotFoundError as exc:
            missing = exc.name or ""
            self._not_found = self.module == missing or self.module.startswith(missing + ".")
            self._error = describe_error(exc)
            return
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - plugin code at import
            self._error = describe_error(exc)
            return
        for part in self.attr.split("."):
            if not hasattr(obj, part):
                self._not_found = True
                self._error = f"module {self.module} has no attribute {self.attr}"
                return
            obj = getattr(obj, part)
        if not isinstance(obj, type):
            self._not_found = True
            self._error = f"{self.target} is not a class"
            return
        self._class = obj

    def version(self) -> str:
        """The class's version once imported, else the distribution's (or "undefined")."""
        cls = self._class
        if cls is None:
            return self._metadata_version or UNDEFINED_VERSION
        if self._class_version is None:
            self._class_version = plugin_version(cls)
        return self._class_version

    def __repr__(self) -> str:
        state = "loaded" if self.loaded else ("failed" if self._error else "lazy")
        return f"<PluginClassRef {self.target} {state}>"


@dataclass(frozen=True)
class PluginDesc:
    """One installed plugin of one type (a class may be listed once per type it implements).

    ``plugin_class`` imports the class on first access when discovery found it in a
    manifest without importing it (``service_load``); it raises PluginNotFoundError when
    the class cannot be loaded or does not implement ``type``.
    """

    class_name: str
    type: PluginType
    ref: PluginClassRef = field(repr=False, compare=False)
    aliases: tuple[str, ...] = ()
    """Names registered for it; one that another plugin shares later stops resolving
    (``PluginRegistry.aliases`` gives the ones that still do)."""
    location: str = CLASSPATH
    """Where discovery found it: a plugin location's path, or ``classpath``."""

    @property
    def plugin_class(self) -> builtins.type:  # the field ``type`` shadows the builtin here
        cls = self.ref.load()
        if self.type not in plugin_types_of(cls):
            raise PluginNotFoundError(
                f"{self.class_name} ({self.ref.target}) is declared as a {self.type.value} "
                f"plugin but does not implement {self.type.interface_name}")
        return cls

    @property
    def version(self) -> str:
        return self.ref.version()

    @property
    def loaded(self) -> bool:
        return self.ref.loaded
