"""A standalone worker's state survives a clean restart (docs/architecture.md §5):
connector configs, target states (PAUSED, STOPPED) and source offsets — a
FileStreamSource does not re-send lines whose offsets were committed before the restart.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.integration._rest_helpers import STRING_CONVERTER, path, read_values
from tests.support import create_topic, unique_name, wait_for_connector_state

pytestmark = pytest.mark.integration


def _append(file: Path, lines: list[str]) -> None:
    with file.open("a", encoding="utf-8") as out:
        out.write("".join(f"{line}\n" for line in lines))


def test_configs_target_states_and_offsets_survive_a_restart(
        standalone_worker: Callable[..., Any], kafka_admin: Any, kafka_bootstrap: str,
        unique_topic: Callable[..., str], tmp_path: Path) -> None:
    worker = standalone_worker({"key.converter": STRING_CONVERTER,
                                "value.converter": STRING_CONVERTER})
    client = worker.client
    topic = create_topic(kafka_admin, unique_topic("persist"))
    source_file = tmp_path / "in.txt"
    first = [f"first-{n}" for n in range(5)]
    _append(source_file, first)

    source, paused, stopped = (unique_name("p-source"), unique_name("p-paused"),
                               unique_name("p-stopped"))
    configs = {
        source: {"connector.class": "FileStreamSource", "file": str(source_file),
                 "topic": topic},
        paused: {"connector.class": "SequenceGenerator", "topic": unique_topic("paused"),
                 "tasks.max": "2", "rate": "1", "count": "5"},
        stopped: {"connector.class": "FileStreamSink", "topics": unique_topic("stopped"),
                  "file": str(tmp_path / "out.txt")},
    }
    for name, config in configs.items():
        response = client.put(f"{path(name)}/config", json=config)
        assert response.status_code == 201, response.text
    wait_for_connector_state(client, source, "RUNNING", tasks_state="RUNNING", task_count=1)
    assert client.put(f"{path(paused)}/pause").status_code == 202
    wait_for_connector_state(client, paused, "PAUSED", tasks_state="PAUSED", task_count=2)
    assert client.put(f"{path(stopped)}/stop").status_code == 204
    wait_for_connector_state(client, stopped, "STOPPED", task_count=0)
    assert read_values(kafka_bootstrap, topic, len(first)) == first

    before = {name: (client.get(f"{path(name)}/config").json(),
                     client.get(f"{path(name)}/tasks").json()) for name in configs}
    worker.restart()

    assert sorted(client.get("/connectors").json()) == sorted(configs)
    after = {name: (client.get(f"{path(name)}/config").json(),
                    client.get(f"{path(name)}/tasks").json()) for name in configs}
    assert after == before
    wait_for_connector_state(client, source, "RUNNING", tasks_state="RUNNING", task_count=1)
    wait_for_connector_state(client, paused, "PAUSED", tasks_state="PAUSED", task_count=2)
    status = wait_for_connector_state(client, stopped, "STOPPED", task_count=0)
    assert status["tasks"] == []

    # The source continues after the committed position: new lines only, no replay.
    second = [f"second-{n}" for n in range(3)]
    _append(source_file, second)
    assert read_values(kafka_bootstrap, topic, len(first) + len(second)) == first + second

    # Target states survive, and still respond to REST after the restart.
    assert client.put(f"{path(paused)}/resume").status_code == 202
    wait_for_connector_state(client, paused, "RUNNING", tasks_state="RUNNING", task_count=2)
