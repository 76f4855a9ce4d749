"""Airflow's ``[operators] default_deferrable``, read when an operator or a sensor is
constructed (not when its module is imported), so a DAG parsed after the setting changes
follows it, as Airflow's own operators do."""

from __future__ import annotations

from airflow.sdk import conf


def resolve_deferrable(deferrable: bool | None) -> bool:
    """``deferrable`` as given, or when None Airflow's ``[operators] default_deferrable``,
    as first-party providers read it."""
    if deferrable is not None:
        return deferrable
    return conf.getboolean("operators", "default_deferrable", fallback=False)
