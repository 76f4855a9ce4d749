from __future__ import annotations

import pytest

from airflow_provider.triggers.connector_state import ConnectorStateTrigger

PATH = "airflow_provider.triggers.connector_state.ConnectorStateTrigger"


@pytest.mark.parametrize("kwargs", [
    {"kafka_connect_conn_id": "kc", "connector": "orders", "target_state": "RUNNING",
     "wait_for_tasks": True, "poll_interval": 1.0, "timeout": None},
    {"kafka_connect_conn_id": "other", "connector": "a/b c", "target_state": "STOPPED",
     "wait_for_tasks": False, "poll_interval": 0.25, "timeout": 30.0},
])
def test_serialize_round_trip_is_exact(kwargs) -> None:
    path, serialized = ConnectorStateTrigger(**kwargs).serialize()
    assert (path, serialized) == (PATH, kwargs)
    assert ConnectorStateTrigger(**serialized).serialize() == (PATH, kwargs)


def test_target_state_is_checked_when_built() -> None:
    assert ConnectorStateTrigger("kc", "c", "paused").serialize()[1]["target_state"] == "PAUSED"
    with pytest.raises(ValueError, match="target_state"):
        ConnectorStateTrigger("kc", "c", "SLEEPING")
