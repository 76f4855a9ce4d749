"""Airflow 3's own UI in headless Chromium, for ``tests/integration/test_airflow_ui.py`` and
``scripts/airflow_ui_screenshots.py`` (which takes the screenshots of ``docs/airflow.md``).

* :func:`run_replay` gives the runbook DAG a real run: a ``FileStreamSource`` on the given
  worker, then ``kafka_connect_replay_source`` through ``dag.test()`` (the DAG is serialized
  and its task instances, extra-link XComs included, are in the metadata database).
* :class:`ApiServer` runs ``airflow api-server`` alone (no scheduler is needed to show what
  the database holds) on a free loopback port, with the simple auth manager's
  ``simple_auth_manager_all_admins``: every request is an admin's, so no password file,
  login page or token handling — acceptable only because it listens on 127.0.0.1 for the
  length of one test or script.
* :class:`AirflowUI` drives the UI with Playwright on the system's Chromium (Playwright's
  own browser download is not needed: ``executable_path`` points at Debian's ``chromium``).

Every wait is bounded: Playwright's waits take timeouts, the API server's readiness polls
a deadline.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import httpx

from worker.testing import free_port
from worker.testing.processes import log_tail, terminate_process

if TYPE_CHECKING:
    from playwright.sync_api import Page, ViewportSize

#: Browsers tried, in order, on PATH.
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
#: What the ``kafka_connect`` form shows beyond the standard fields (provider.yaml labels).
CUSTOM_FIELD_LABELS = ("Verify server certificate", "CA bundle", "Client certificate",
                       "Client key", "Request timeout (s)", "Kafka bootstrap servers",
                       "Status topic", "Kafka client settings", "Allowed worker URLs")
LINK_NAME = "Kafka Connect status"
RUNBOOK_DAG = "kafka_connect_replay_source"
VIEWPORT: ViewportSize = {"width": 1280, "height": 800}
#: The connection form's screenshot is taller: all of its custom fields.
FORM_HEIGHT = 1650
UI_TIMEOUT_MS = 30_000


def find_chromium() -> str | None:
    """The Chromium (or Chrome) binary on PATH, or ``$CONNECT_PLANE_CHROMIUM``."""
    if explicit := os.environ.get("CONNECT_PLANE_CHROMIUM"):
        return explicit if Path(explicit).exists() else None
    return next((found for name in CHROMIUM_NAMES if (found := shutil.which(name))), None)


def no_browser_reason() -> str | None:
    """Why the UI cannot be driven here, or ``None`` when it can."""
    if importlib.util.find_spec("playwright") is None:
        return "the Python package `playwright` is not installed (pip install playwright)"
    if find_chromium() is None:
        return ("no Chromium on PATH: install it (Debian/Ubuntu: `apt-get install -y "
                "--no-install-recommends chromium`) or set CONNECT_PLANE_CHROMIUM")
    return None


# ------------------------------------------------------------------ the DAG run


def copy_dags(dags_dir: Path, airflow_home: Path) -> None:
    """The repo's DAG folder into the Airflow home's (the bundle ``dag.test()`` runs)."""
    shutil.copytree(dags_dir, airflow_home / "dags", dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("__pycache__"))


def load_dag(dag_file: Path, dag_id: str) -> Any:
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(str(dag_file))
    if bag.import_errors:
        raise RuntimeError(f"{dag_file}: {bag.import_errors}")
    dag = bag.get_dag(dag_id)
    if dag is None:
        raise RuntimeError(f"{dag_file} defines no DAG {dag_id!r}")
    return dag


def run_replay(dag: Any, client: httpx.Client, topic: str, connector: str,
               workdir: Path, *, timeout: float = 60.0) -> Any:
    """Create a ``FileStreamSource`` ``connector`` on the worker of ``client``, wait for it
    to run, then replay its file with the runbook DAG ``dag``; returns the DAG run."""
    source = workdir / f"{connector}.jsonl"
    source.write_text("".join(f'{{"order_id": "o-{n}"}}\n' for n in range(3)),
                      encoding="utf-8")
    config = {"connector.class": "FileStreamSource", "file": str(source), "topic": topic}
    response = client.put(f"/connectors/{quote(connector, safe='')}/config", json=config)
    response.raise_for_status()
    deadline = time.monotonic() + timeout
    while True:
        status = client.get(f"/connectors/{quote(connector, safe='')}/status")
        body = status.json() if status.status_code == 200 else {}
        tasks = body.get("tasks") or []
        if (body.get("connector", {}).get("state") == "RUNNING" and tasks
                and all(t.get("state") == "RUNNING" for t in tasks)):
            break
        if time.monotonic() > deadline:
            raise TimeoutError(f"{connector} not RUNNING within {timeout}s: {status.text}")
        time.sleep(0.2)  # poll interval of a bounded wait
    return dag.test(run_conf={"connector": connector, "action": "alter",
                              "offsets": [{"partition": {"filename": str(source)},
                                           "offset": {"position": 0}}]})


# ------------------------------------------------------------------ the API server


@dataclass
class ApiServer:
    """``airflow api-server`` (one uvicorn worker) on a free loopback port."""

    env: Mapping[str, str]
    log_path: Path
    startup_timeout: float = 90.0
    process: subprocess.Popen[bytes] | None = None
    port: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ApiServer:
        self.port = free_port()
        env = {**os.environ, **self.env,
               "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "True",
               "AIRFLOW__API__BASE_URL": f"http://127.0.0.1:{self.port}"}
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "airflow", "api-server", "--host", "127.0.0.1",
                 "--port", str(self.port), "--workers", "1"],
                env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + self.startup_timeout
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"airflow api-server exited ({self.process.returncode}):\n"
                                   f"{log_tail(self.log_path, 60)}")
            try:
                if httpx.get(f"{self.url}/api/v2/monitor/health", timeout=2).status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise TimeoutError(f"airflow api-server not up in {self.startup_timeout}s:\n"
                                   f"{log_tail(self.log_path, 60)}")
            time.sleep(0.5)  # poll interval of a bounded wait

    def stop(self) -> None:
        if self.process is not None:
            terminate_process(self.process, timeout=10.0)
            self.process = None

    def __enter__(self) -> ApiServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


# ------------------------------------------------------------------ the browser


class AirflowUI:
    """One Playwright page on Airflow's UI at ``base_url``."""

    def __init__(self, page: Page, base_url: str) -> None:
        self.page = page
        self.base_url = base_url.rstrip("/")

    def goto(self, path: str) -> None:
        self.page.goto(f"{self.base_url}{path}", wait_until="domcontentloaded")

    def connection_form(self, conn_type: str = "kafka_connect",
                        display_name: str = "Kafka Connect",
                        screenshot: Path | None = None) -> list[str]:
        """Open *Add Connection*, select ``conn_type`` (listed as ``display_name``); returns
        which of :data:`CUSTOM_FIELD_LABELS` the form renders."""
        page = self.page
        self.goto("/connections")
        page.get_by_role("button", name="Add Connection").first.click()
        dialog = page.get_by_role("dialog")
        dialog.wait_for()
        dialog.get_by_text("Connection Type", exact=False).first.wait_for()
        self._select_conn_type(dialog, conn_type, display_name)
        # The custom fields are in the "Extra Fields" section (an accordion, one section
        # open at a time): open it.
        dialog.get_by_role("button", name="Extra Fields", exact=True).click()
        dialog.get_by_text(CUSTOM_FIELD_LABELS[-1], exact=True).first.wait_for()
        # A label is its own line of text; a "*" (required: a non-null schema type) follows.
        lines = {line.strip() for line in dialog.inner_text().splitlines()}
        found = [label for label in CUSTOM_FIELD_LABELS if label in lines]
        if screenshot is not None:
            # Tall enough for the whole "Extra Fields" section.
            page.set_viewport_size({"width": VIEWPORT["width"], "height": FORM_HEIGHT})
            page.screenshot(path=str(screenshot))
            page.set_viewport_size(VIEWPORT)
        return found

    def _select_conn_type(self, dialog: Any, conn_type: str, display_name: str) -> None:
        combo = dialog.get_by_role("combobox").first
        combo.click()
        combo.press_sequentially(conn_type)
        self.page.get_by_role("option", name=display_name, exact=True).first.click()

    def dag_graph(self, dag_id: str, run_id: str, task_ids: tuple[str, ...],
                  screenshot: Path | None = None) -> None:
        """The DAG run's graph view; waits until every task's node is drawn."""
        page = self.page
        self.goto(f"/dags/{quote(dag_id)}/runs/{quote(run_id, safe='')}")
        flow = page.locator(".react-flow")
        flow.first.wait_for()
        for task_id in task_ids:
            flow.get_by_text(task_id, exact=True).first.wait_for()
        if screenshot is not None:
            page.screenshot(path=str(screenshot))

    def extra_link(self, dag_id: str, run_id: str, task_id: str, name: str = LINK_NAME,
                   screenshot: Path | None = None) -> str | None:
        """The task instance's *Details* tab, where Airflow shows extra links; returns the
        ``href`` of extra link ``name``."""
        page = self.page
        self.goto(f"/dags/{quote(dag_id)}/runs/{quote(run_id, safe='')}"
                  f"/tasks/{quote(task_id)}/details")
        link = page.get_by_role("link", name=name)
        link.first.wait_for()
        if screenshot is not None:
            page.screenshot(path=str(screenshot))
        return link.first.get_attribute("href")


@contextmanager
def browser_page(chromium: str | None = None) -> Iterator[Page]:
    """A headless Chromium page (1280x800) showing the graph view by default."""
    from playwright.sync_api import sync_playwright

    executable = chromium or find_chromium()
    if executable is None:
        raise RuntimeError(no_browser_reason() or "no Chromium")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, headless=True,
                                             timeout=UI_TIMEOUT_MS)
        try:
            context = browser.new_context(viewport=VIEWPORT)
            context.set_default_timeout(UI_TIMEOUT_MS)
            # The DAG page opens on the view last chosen (local storage): the graph.
            context.add_init_script(
                f"localStorage.setItem('default_dag_view', {json.dumps(json.dumps('graph'))})")
            yield context.new_page()
        finally:
            browser.close()

