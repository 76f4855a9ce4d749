"""How long Airflow's own processes take to pick up each step of a deferred wait and of
an Asset-scheduled run (api-server, scheduler, dag-processor, triggerer; LocalExecutor,
SQLite), over the DAGs of ``tests/integration/airflow_live_dags/``.

Per round of the deferred wait (``live_wait_running``: the connector-state sensor,
deferred, ``ConnectorStateTrigger`` polling REST every 0.2 s) the clock starts at
``PUT /connectors/{c}/resume`` of a PAUSED connector and stops at: the trigger's event
(its "Trigger fired event" record in the triggerer's log), the task instance leaving
``deferred``, running again, and succeeding. The raw baseline, in alternating rounds, is a
client polling ``GET /connectors/{c}/status`` every 10 ms after the same resume: when the
worker's REST API first shows RUNNING. Per round of the Asset pick-up: ``live_emit``'s
Asset event → the start of the ``live_on_asset`` run the scheduler created for it.

Run: ``.venv/bin/python tests/bench/bench_airflow_pickup.py [--rounds 10]``; prints a
table and writes ``tests/bench/results/airflow_pickup.json``.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "tests" / "bench" / "results" / "airflow_pickup.json"
sys.path.insert(0, str(ROOT))

from tests.support.airflow_live import (  # noqa: E402
    create_gated,
    measure_asset_pickup,
    measure_pickup,
    start_airflow,
    wait_state,
)
from worker.testing import EmbeddedBroker, WorkerProcess, free_port, write_properties  # noqa: E402

POLL_S = 0.01


def raw_round(client: httpx.Client, name: str) -> float:
    client.put(f"/connectors/{name}/pause").raise_for_status()
    wait_state(client, name, "PAUSED")
    started = time.perf_counter()
    client.put(f"/connectors/{name}/resume").raise_for_status()
    deadline = started + 60
    while time.perf_counter() < deadline:
        body = client.get(f"/connectors/{name}/status").json()
        if body["connector"]["state"] == "RUNNING" and all(
                t["state"] == "RUNNING" for t in body["tasks"]):
            return time.perf_counter() - started
        time.sleep(POLL_S)
    raise TimeoutError(f"{name} not RUNNING within 60 s")


def summary(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {"median": statistics.median(ordered),
            "p90": ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))],
            "min": ordered[0], "max": ordered[-1]}


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-airflow-") as tmp:
        work = Path(tmp)
        with EmbeddedBroker(log_dir=work) as broker:
            port = free_port()
            props = write_properties(work / "worker.properties", {
                "bootstrap.servers": broker.bootstrap_servers,
                "listeners": f"http://127.0.0.1:{port}",
                "storage.sql.url": f"sqlite:///{work / 'connect.db'}"})
            worker = WorkerProcess(props, url=f"http://127.0.0.1:{port}",
                                   log_path=work / "worker.log")
            worker.start()
            started = time.monotonic()
            services = start_airflow(work / "airflow", worker.url, work / "logs")
            start_s = time.monotonic() - started
            try:
                api = services.api()
                client = worker.client
                create_gated(client, "bench-pickup", work / "gate")
                waits, raw, assets = [], [], []
                for _ in range(args.rounds):
                    waits.append(measure_pickup(services, api, client, "bench-pickup"))
                    raw.append(raw_round(client, "bench-pickup"))
                    assets.append(measure_asset_pickup(api))
                api.close()
            finally:
                services.stop()
                worker.close()
    figures = {key: summary([w[key] for w in waits]) for key in waits[0]}
    figures["raw_rest_running"] = summary(raw)
    figures["asset_event_to_run_start"] = summary(assets)
    ratio = figures["trigger_event"]["median"] / figures["raw_rest_running"]["median"]
    print(f"Airflow healthy (4 processes, DAGs parsed) in {start_s:.1f} s; {args.rounds} "
          "rounds")
    print(f"{'measure':<28} {'median':>8} {'p90':>8} {'min':>8} {'max':>8}")
    for key, values in figures.items():
        print(f"{key:<28} " + " ".join(f"{values[k]:>7.2f}s" for k in
                                       ("median", "p90", "min", "max")))
    print(f"trigger event / raw REST poll (medians): {ratio:.2f}")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({
        "rounds": args.rounds, "python": platform.python_version(),
        "machine": platform.machine(), "airflow_start_s": start_s, "figures": figures,
        "trigger_event_over_raw": ratio}, indent=2) + "\n", encoding="utf-8")
    print(f"written to {RESULTS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
