"""Screenshots of the provider in Airflow 3's own UI, for ``docs/airflow.md``.

    .venv/bin/python scripts/airflow_ui_screenshots.py --out docs/images

Starts the embedded test broker and a standalone worker, gives a fresh Airflow home (SQLite)
a real run of ``kafka_connect_replay_source`` through ``dag.test()``, starts only
``airflow api-server`` on a free loopback port, and has headless Chromium (the system's,
driven by Playwright) save ``connection-form.png`` (the ``kafka_connect`` connection form),
``runbook-graph.png`` (the runbook DAG's graph) and ``extra-link.png`` (a runbook task
instance with its *Kafka Connect status* link). Everything it started is stopped at the end.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.support import airflow_env  # noqa: E402

# Before anything imports airflow: a fresh AIRFLOW_HOME and SQLite database.
AIRFLOW_HOME = airflow_env.configure()

from confluent_kafka.admin import AdminClient  # noqa: E402

from tests.support import create_topic, write_properties  # noqa: E402
from tests.support.airflow_ui import (  # noqa: E402
    CUSTOM_FIELD_LABELS,
    RUNBOOK_DAG,
    AirflowUI,
    ApiServer,
    browser_page,
    copy_dags,
    load_dag,
    no_browser_reason,
    run_replay,
)
from worker.testing import EmbeddedBroker, WorkerProcess, free_port  # noqa: E402

log = logging.getLogger("airflow_ui_screenshots")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "images",
                        help="directory of the PNG files (default: docs/images)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    if reason := no_browser_reason():
        print(f"cannot take screenshots: {reason}", file=sys.stderr)
        return 2
    out: Path = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix="connect-plane-ui-"))
    try:
        code = _run(out, workdir)
    except BaseException:
        print(f"failed: logs and failure.png are in {workdir}", file=sys.stderr)
        raise
    finally:
        airflow_env.cleanup()
    shutil.rmtree(workdir, ignore_errors=True)
    return code


def _run(out: Path, workdir: Path) -> int:
    log.info("Airflow home %s: migrating the database", AIRFLOW_HOME)
    airflow_env.migrate()
    copy_dags(REPO / "dags", AIRFLOW_HOME)
    with EmbeddedBroker(log_dir=workdir / "tansu") as broker:
        port = free_port()
        props = write_properties(workdir / "worker" / "worker.properties", {
            "bootstrap.servers": broker.bootstrap_servers,
            "listeners": f"http://127.0.0.1:{port}",
            "storage.sql.url": f"sqlite:///{workdir / 'worker' / 'connect.db'}",
            "offset.flush.interval.ms": 1000})
        worker = WorkerProcess(props, url=f"http://127.0.0.1:{port}",
                               log_path=workdir / "worker" / "worker.log")
        try:
            worker.start()
            os.environ.update(airflow_env.connection_env(
                "kafka_connect_default", host=worker.url,
                extra={"bootstrap_servers": broker.bootstrap_servers}))
            # A temporary client: none is left polling a stopped broker at the end.
            topic = create_topic(AdminClient({"bootstrap.servers": broker.bootstrap_servers}),
                                 "orders")
            connector = "orders-source"
            dag = load_dag(AIRFLOW_HOME / "dags" / "kafka_connect_offsets_runbook.py",
                           RUNBOOK_DAG)
            dag_run = run_replay(dag, worker.client, topic, connector, workdir)
            if dag_run.state != "success":
                raise RuntimeError(f"{RUNBOOK_DAG} run ended {dag_run.state}")
            with ApiServer(env={}, log_path=workdir / "api-server.log") as server, \
                    browser_page() as page:
                ui = AirflowUI(page, server.url)
                try:
                    _shoot(ui, dag_run.run_id, out)
                except BaseException:
                    page.screenshot(path=str(workdir / "failure.png"))
                    raise
        finally:
            worker.close()
    for name in SHOTS:
        print(out / name)
    return 0


SHOTS = ("connection-form.png", "runbook-graph.png", "extra-link.png")


def _shoot(ui: AirflowUI, run_id: str, out: Path) -> None:
    found = ui.connection_form(screenshot=out / SHOTS[0])
    missing = [label for label in CUSTOM_FIELD_LABELS if label not in found]
    if missing:
        raise RuntimeError(f"the kafka_connect connection form lacks {missing}")
    ui.dag_graph(RUNBOOK_DAG, run_id, ("replay", "still_running"), screenshot=out / SHOTS[1])
    href = ui.extra_link(RUNBOOK_DAG, run_id, "replay", screenshot=out / SHOTS[2])
    log.info("the %r link of task replay: %s", "Kafka Connect status", href)


if __name__ == "__main__":
    sys.exit(main())
