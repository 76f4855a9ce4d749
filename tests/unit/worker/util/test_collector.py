"""worker.util.collector: a worker process, once started, freezes what it built and
collects the youngest generation every FIRST_GENERATION_THRESHOLD allocations."""

from __future__ import annotations

import json
import subprocess
import sys

from worker.util.collector import FIRST_GENERATION_THRESHOLD

# In a fresh interpreter, so that this test process's collector is left alone: what
# serve (both CLIs' last step, worker.cli.base) leaves behind, given a stop already asked for.
PROBE = """
import gc, json, logging, signal
from worker.cli.base import Signals, serve

class Server:
    url = "http://127.0.0.1:0"

class Process:
    server = Server()
    stopped = False
    def stop(self):
        self.stopped = True

before = {"threshold": gc.get_threshold(), "frozen": gc.get_freeze_count()}
log = logging.getLogger("probe")
signals = Signals(log)
signals.received.append(signal.SIGTERM)
process = Process()
code = serve(log, signals, process)
print(json.dumps({"before": before, "threshold": gc.get_threshold(),
                  "frozen": gc.get_freeze_count(), "code": code,
                  "stopped": process.stopped}))
"""


def test_a_started_worker_freezes_its_heap_and_collects_young_objects_less_often() -> None:
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                         timeout=60, check=True).stdout
    result = json.loads(out.strip().splitlines()[-1])
    assert result["before"] == {"threshold": [700, 10, 10], "frozen": 0}
    # The older generations keep CPython's thresholds.
    assert result["threshold"] == [FIRST_GENERATION_THRESHOLD, 10, 10]
    # Everything imported so far (the worker's modules) is out of every collection.
    assert result["frozen"] > 10_000
    assert result["code"] == 0 and result["stopped"] is True
