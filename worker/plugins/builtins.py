"""The built-in plugins: canonical names (Kafka's Java names where Kafka has the plugin),
types and the Python classes behind them.

They are declared in one place: the ``connect-plane`` distribution's entry points
(``pyproject.toml``, one ``connect_plane.*`` group per type), so discovery finds them as it
finds any installed plugin: in the worker's environment (``classpath``), from manifests.
:func:`builtin_plugins` reads the same declarations back from the installed distribution's
metadata, for ``builtin_registry()``: code that needs the built-ins without discovery (unit
tests, worker properties' config providers). Adding a built-in is one line in
``pyproject.toml`` (and ``pip install -e .`` in a development checkout).
"""

from __future__ import annotations

import builtins
import importlib
from dataclasses import dataclass
from functools import cache
from importlib.metadata import distribution

from worker.plugins.types import TYPES_BY_GROUP, PluginType

#: The distribution whose entry points declare the built-ins.
DISTRIBUTION = "connect-plane"

#: The packages of the worker's environment that module scanning imports: the built-ins
#: (and the API's SimpleHeaderConverter, which lives with the SPI as Kafka's does).
#: The rest of the environment (Airflow, Spark, ...) is found through manifests only —
#: importing every module of it would take minutes and run code nobody asked for.
CLASSPATH_SCAN_PACKAGES: tuple[str, ...] = ("worker.builtin", "worker.api.header_converter")


@dataclass(frozen=True)
class BuiltinPlugin:
    name: str
    type: PluginType
    target: str  # module:Class

    def load(self) -> builtins.type:  # the field ``type`` shadows the builtin here
        module, _, attr = self.target.partition(":")
        cls: builtins.type = getattr(importlib.import_module(module), attr)
        return cls


@cache
def builtin_plugins() -> tuple[BuiltinPlugin, ...]:
    """The built-ins the installed ``connect-plane`` distribution declares, in its order.

    Raises ``importlib.metadata.PackageNotFoundError`` when the worker's packages are
    imported from a checkout that was never installed (``pip install -e .``)."""
    return tuple(BuiltinPlugin(entry.name, TYPES_BY_GROUP[entry.group], entry.value)
                 for entry in distribution(DISTRIBUTION).entry_points
                 if entry.group in TYPES_BY_GROUP)
