"""The connect-plane Airflow provider: Kafka Connect hooks, operators, sensors, triggers.

It speaks only Kafka Connect's public REST API and reads only the Java-compatible
status-topic format, so it works against connect-plane and Apache Kafka Connect alike; it
never imports ``worker``.
"""

from __future__ import annotations

from functools import cache
from importlib.resources import files
from typing import Any

__version__ = "0.1.0"


@cache
def _load_provider_yaml() -> dict[str, Any]:
    import yaml  # PyYAML ships with Airflow

    return yaml.safe_load(files(__name__).joinpath("provider.yaml").read_text(encoding="utf-8"))


def get_provider_info() -> dict[str, Any]:
    """The provider metadata Airflow reads through the ``apache_airflow_provider`` entry
    point: exactly ``provider.yaml``, so there is one source of truth."""
    return dict(_load_provider_yaml())
