"""``make demo`` works: every line the demo writes reaches the sink's output file.

Runs ``python -m worker.demo --duration 20`` as a subprocess (its own embedded broker and
worker) in a temporary directory.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow]

DURATION_S = 20
#: Broker + worker start, connector start, 20 s of lines, drain and shutdown.
RUN_TIMEOUT_S = 180


def _run_demo(demo_dir: Path) -> subprocess.CompletedProcess[str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "worker.demo", "--duration", str(DURATION_S), "--dir", demo_dir],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        out, _ = proc.communicate(timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        # SIGTERM lets the demo stop its worker and broker; SIGKILL would orphan them.
        proc.send_signal(signal.SIGTERM)
        try:
            out, _ = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
        pytest.fail(f"the demo did not finish within {RUN_TIMEOUT_S}s; output:\n{out}")
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, None)


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def test_demo_moves_every_written_line_to_the_output_file(tmp_path: Path) -> None:
    demo_dir = tmp_path / "demo"
    result = _run_demo(demo_dir)
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
