"""The provider as Airflow 3's own UI shows it, in headless Chromium: the ``kafka_connect``
connection form's custom fields, the runbook DAG's graph and the *Kafka Connect status*
extra link of a task instance of ours (``tests/support/airflow_ui.py``).

A real run: ``kafka_connect_replay_source`` through ``dag.test()`` against a standalone
worker, in the session's Airflow home; then ``airflow api-server`` alone serves the UI.
Skipped, with what to install, where there is no Chromium (or no Playwright).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import create_topic, unique_name
from tests.support.airflow_ui import (
    CUSTOM_FIELD_LABELS,
    RUNBOOK_DAG,
    AirflowUI,
    ApiServer,
    browser_page,
    no_browser_reason,
    run_replay,
)

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(no_browser_reason() is not None,
                                 reason=f"Airflow UI test: {no_browser_reason()}")]

RUNBOOKS = Path(__file__).parents[2] / "dags" / "kafka_connect_offsets_runbook.py"


def test_connection_form_graph_and_extra_link_render(
        standalone_worker, kafka_connect_conn, airflow_dag, kafka_admin,
        kafka_bootstrap: str, tmp_path: Path) -> None:
    worker = standalone_worker()
    kafka_connect_conn(host=worker.url, extra={"bootstrap_servers": kafka_bootstrap})
    connector = unique_name("orders-source")
    topic = create_topic(kafka_admin, unique_name("ui"))
    dag_run = run_replay(airflow_dag(RUNBOOKS, RUNBOOK_DAG), worker.client, topic, connector,
                         tmp_path)
    assert dag_run.state == "success"

    server = ApiServer(env={}, log_path=tmp_path / "api-server.log")
    with server, browser_page() as page:
        ui = AirflowUI(page, server.url)
        try:
            assert ui.connection_form() == list(CUSTOM_FIELD_LABELS)
            ui.dag_graph(RUNBOOK_DAG, dag_run.run_id, ("replay", "still_running"))
            href = ui.extra_link(RUNBOOK_DAG, dag_run.run_id, "replay")
        except Exception:
            page.screenshot(path=str(tmp_path / "failure.png"))
            print(f"screenshot of the failure: {tmp_path / 'failure.png'}\n"
                  f"api-server log: {server.log_path}")
            raise
    assert href == f"{worker.url}/connectors/{connector}/status"
