"""When the runtime asks a connector for task configs again, and what that restarts."""

from __future__ import annotations

import pytest

from tests.support import wait_for_connector_state, wait_until
from tests.support.plugins import PREFIX


def _generations(client, name: str) -> list[str]:  # type: ignore[no-untyped-def]
    return [t["config"]["generation"] for t in client.get(f"/connectors/{name}/tasks").json()]


@pytest.mark.integration
def test_resume_from_paused_regenerates_task_configs(standalone_worker) -> None:
    client = standalone_worker().client
    name = "generations"
    response = client.put(f"/connectors/{name}/config", json={
        "connector.class": f"{PREFIX}.GenerationConnector", "tasks.max": "2"})
    assert response.status_code == 201, response.text
    wait_for_connector_state(client, name, "RUNNING", tasks_state="RUNNING", task_count=2)
    first = _generations(client, name)
    assert len(first) == 2 and len(set(first)) == 1

    assert client.put(f"/connectors/{name}/pause").status_code == 202
    wait_for_connector_state(client, name, "PAUSED", tasks_state="PAUSED", task_count=2)
    assert _generations(client, name) == first  # paused: nothing regenerated

    assert client.put(f"/connectors/{name}/resume").status_code == 202
    wait_until(lambda: _generations(client, name) != first, timeout=30,
               message="task configs were not regenerated on resume")
    newer = _generations(client, name)
    assert int(newer[0]) > int(first[0]) and newer[0] == newer[1]
    wait_for_connector_state(client, name, "RUNNING", tasks_state="RUNNING", task_count=2)


@pytest.mark.integration
def test_too_many_task_configs_fail_the_connector_unless_enforcement_is_off(
        standalone_worker) -> None:
    """KIP-1004: a connector that generates more task configs than ``tasks.max`` is FAILED
    with Kafka's message; with ``tasks.max.enforce=false`` every config runs."""
    client = standalone_worker().client
    config = {"connector.class": f"{PREFIX}.TooManyTasksConnector", "tasks.max": "2"}
    assert client.put("/connectors/enforced/config", json=config).status_code == 201
    status = wait_for_connector_state(client, "enforced", "FAILED")
    assert "The connector enforced has generated 3 tasks, which is greater than 2" in \
        status["connector"]["trace"]
    assert client.get("/connectors/enforced/tasks").json() == []

    response = client.put("/connectors/lenient/config",
                          json={**config, "tasks.max.enforce": "false"})
    assert response.status_code == 201, response.text
    wait_for_connector_state(client, "lenient", "RUNNING", tasks_state="RUNNING",
                             task_count=3)
