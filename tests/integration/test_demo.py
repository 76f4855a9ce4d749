"""The demos work, each run as a subprocess in a temporary directory (its own embedded
broker and worker):

* ``make demo`` (``python -m dags.demo``): the whole story — connectors, Airflow DAG runs,
  the Spark pipeline, the skip-poison and replay runbooks, an identical re-run, the HTTPS
  certificate rotated without a worker restart, a third-party connector made visible by
  the plugin-manifest sync DAG;
* ``python -m worker.demo --duration 20``: every line written reaches the sink's file.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import NO_JAVA

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).parents[2]
DURATION_S = 20
#: Broker + worker start, connector start, 20 s of lines, drain and shutdown.
RUN_TIMEOUT_S = 180
#: The whole story: broker, worker, Airflow DB, nine DAG runs, three Spark jobs.
STORY_TIMEOUT_S = 600


def _run_demo(args: list[str], timeout: float = RUN_TIMEOUT_S
              ) -> subprocess.CompletedProcess[str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        cwd=ROOT,  # python -m dags.demo runs from the repository root
    )
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        # SIGTERM lets the demo stop its worker and broker; SIGKILL would orphan them.
        proc.send_signal(signal.SIGTERM)
        try:
            out, _ = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
        pytest.fail(f"the demo did not finish within {timeout}s; output:\n{out}")
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, None)


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def test_demo_moves_every_written_line_to_the_output_file(tmp_path: Path) -> None:
    demo_dir = tmp_path / "demo"
    result = _run_demo(["worker.demo", "--duration", str(DURATION_S), "--dir", str(demo_dir)])
    log = demo_dir / "logs" / "worker.log"
    context = f"demo output:\n{result.stdout}\nworker log tail:\n{_tail(log)}"

    assert result.returncode == 0, context
    written = _lines(demo_dir / "input.txt")
    arrived = _lines(demo_dir / "output.txt")
    # One line per second for 20 s (a slow machine may manage a few less).
    assert len(written) >= DURATION_S // 2, context
    assert all(line.startswith("line ") for line in written), context
    # At-least-once: every written line arrived, in order, and nothing else did.
    assert set(arrived) == set(written), context
    first_seen = list(dict.fromkeys(arrived))
    assert first_seen == written, context
    assert "arrived < line 1 " in result.stdout
    assert "Files of this run:" in result.stdout


def _tail(path: Path, lines: int = 60) -> str:
    return "\n".join(_lines(path)[-lines:])


@pytest.mark.skipif(NO_JAVA is not None, reason=f"the demo's Spark pipeline: {NO_JAVA}")
def test_make_demo_tells_the_whole_story(tmp_path: Path) -> None:
    from dags.pipelines.orders_job import read_output

    demo_dir = tmp_path / "demo"
    result = _run_demo(["dags.demo", "--dir", str(demo_dir)], timeout=STORY_TIMEOUT_S)
    context = (f"demo output:\n{result.stdout}\nairflow log tail:\n"
               f"{_tail(demo_dir / 'logs' / 'airflow.log')}")
    assert result.returncode == 0, context
    for chapter in range(1, 9):
        assert f"[{chapter}/8]" in result.stdout, context
    assert "Tolerance exceeded in error handler" in result.stdout, context
    assert "identical" in result.stdout, context
    assert result.stdout.rstrip().endswith("broker stopped"), context
    # Chapter 7: a new certificate served by the same worker process.
    before = re.search(r"fingerprint before: ([0-9a-f]{64})", result.stdout)
    after = re.search(r"fingerprint after:  ([0-9a-f]{64})", result.stdout)
    assert before and after and before[1] != after[1], context
    assert re.search(r"worker PID \d+ unchanged", result.stdout), context
    keystores = sorted((demo_dir / "tls" / "keystores").glob("*.p12"))
    assert len(keystores) == 1 and (demo_dir / "tls" / "worker-first.p12").is_file()

    # Chapter 8: invisible without a manifest, listed and publishing after the DAG's sync
    # (same worker process), and the next night's run has nothing to do.
    plugin = "acme_tickets.TicketSourceConnector"
    assert re.search(r"plugin.discovery=service_load: GET /connector-plugins lists \d+ "
                     rf"plugins, not {plugin}", result.stdout), context
    assert "creating tickets-source: HTTP 400 " in result.stdout, context
    assert re.search(rf"check_workers: http://\S+ lists {plugin} ", result.stdout), context
    assert re.search(r"worker PID \d+ unchanged: it re-read the manifests", result.stdout)
    assert "tickets-source: RUNNING, task RUNNING; published 25 tickets" in result.stdout
    assert f"GET /connector-plugins: {plugin} 1.4.2" in result.stdout, context
    assert ("kafka_connect_plugin_manifest_sync: check_workers=success, plan=success, "
            "should_sync=success, sync=success") in result.stdout, context
    assert ("(next night): check_workers=skipped, plan=success, should_sync=success, "
            "sync=skipped") in result.stdout, context
    (manifest,) = (demo_dir / "plugins" / "acme-tickets").glob("*.dist-info/entry_points.txt")
    assert f"{plugin} = acme_tickets:TicketSourceConnector" in manifest.read_text()

    # Two pipeline runs, each with its recorded range; the re-run kept the first range.
    ranges = {p.stem: json.loads(p.read_text()) for p in (demo_dir / "pipeline" /
                                                           "ranges").glob("*.json")}
    assert sorted((r["starting_offsets"], r["ending_offsets"]) for r in ranges.values()) == [
        ('{"orders":{"0":0}}', '{"orders":{"0":100}}'),
        ('{"orders":{"0":100}}', '{"orders":{"0":120}}')]
    first = demo_dir / "pipeline" / "runs" / "manual__2026-01-01T00_00_00_00_00"
    summary = json.loads((first / "_run.json").read_text())
    assert (summary["records_read"], summary["records_dropped"], summary["orders"]) == (
        100, 11, 89)
    totals = read_output(first / "totals")[0].to_pylist()
    assert sum(row["orders"] for row in totals) == 89
    # The archive sink got past the poison record: all 99 other first orders are there.
    archived = _lines(demo_dir / "archive.txt")
    assert len(archived) >= 99 and not any("truncated" in line for line in archived)
