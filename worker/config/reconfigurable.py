"""What a part of the worker implements to take worker settings changed at run time.

The dynamic worker configuration (``/admin/dynamic-worker-config``) changes only keys that
some registered part can apply without a restart: the set of keys the API accepts is the
union of the registered parts' :meth:`Reconfigurable.reconfigurable_configs`. A change is
applied in two steps, so that a bad value changes nothing:

1. :meth:`Reconfigurable.validate_reconfiguration` with the whole effective configuration
   (the static worker properties merged with every dynamic override, ``${provider:...}``
   placeholders resolved on this worker) — it loads and checks everything it would use
   (e.g. a keystore) and raises ``ConfigError`` naming the key and the problem, never a
   secret value;
2. :meth:`Reconfigurable.reconfigure` with the same configuration, once every registered
   part has validated it.

Registering a part applies the overrides already in force at once (a worker that starts,
or restarts, serves the dynamic configuration, not only its properties file).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping


class Reconfigurable(ABC):
    """A component whose settings can change while the worker runs."""

    @abstractmethod
    def reconfigurable_configs(self) -> frozenset[str]:
        """The worker property names this component can apply at run time."""

    @abstractmethod
    def validate_reconfiguration(self, configs: Mapping[str, str]) -> None:
        """Check that ``configs`` (the whole effective worker configuration, resolved) can
        be applied; raise ``worker.errors.ConfigError`` naming the key if not. Changes
        nothing."""

    @abstractmethod
    def reconfigure(self, configs: Mapping[str, str]) -> None:
        """Apply ``configs`` (already validated). Must not fail for a configuration that
        passed :meth:`validate_reconfiguration`; if it does anyway, it keeps its old
        settings and raises."""
