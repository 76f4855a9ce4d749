"""The KIP-875 runbook on a standalone worker: stop → reset offsets → resume → RUNNING.

For a source (SequenceGenerator, 4 tasks) and a sink (FileStreamSink) connector that have
been at work (each has committed offsets for all its partitions), each round times, from
the first request until ``GET /connectors/{c}/status`` shows the connector and all its
tasks RUNNING again: ``PUT /stop``, wait for STOPPED (no tasks), ``DELETE /offsets``,
``PUT /resume``, wait for RUNNING. Status is polled every 10 ms. The baseline in the same
run is one REST round trip (``GET /``): the ratio says how many round trips' worth the
whole runbook costs.

Run: ``.venv/bin/python tests/bench/bench_offsets_runbook.py [--rounds 20]``; prints a
table and writes ``tests/bench/results/offsets_runbook.json``. Target (issue #3): median
below 1 s.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "tests" / "bench" / "results" / "offsets_runbook.json"
sys.path.insert(0, str(ROOT))

from worker.testing import EmbeddedBroker, free_port, terminate_process  # noqa: E402

POLL_S = 0.01
TIMEOUT_S = 60.0


def wait_state(client: httpx.Client, name: str, want: str, tasks: int | None) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while time.monotonic() < deadline:
        response = client.get(f"/connectors/{name}/status")
        if response.status_code == 200:
            body = response.json()
            states = [t["state"] for t in body["tasks"]]
            if body["connector"]["state"] == want and (
                    (tasks == 0 and not states)
                    or (tasks and len(states) == tasks and set(states) == {want})):
                return
        time.sleep(POLL_S)
    last = client.get(f"/connectors/{name}/status").text
    raise TimeoutError(f"{name} did not reach {want}: {last}")


def runbook(client: httpx.Client, name: str, tasks: int, steps: dict[str, list[float]]
            ) -> float:
    marks = [time.perf_counter()]
    assert client.put(f"/connectors/{name}/stop").status_code == 204
    wait_state(client, name, "STOPPED", 0)
    marks.append(time.perf_counter())
    response = client.delete(f"/connectors/{name}/offsets")
    assert response.status_code == 200, response.text
    marks.append(time.perf_counter())
    assert client.put(f"/connectors/{name}/resume").status_code == 202
    wait_state(client, name, "RUNNING", tasks)
    marks.append(time.perf_counter())
    for step, begin, end in zip(("stop", "reset", "resume"), marks, marks[1:], strict=False):
        steps.setdefault(step, []).append(end - begin)
    return marks[-1] - marks[0]


def wait_steady(client: httpx.Client, name: str, partitions: int) -> None:
    """Untimed, before each round: the connector has been at work long enough to commit
    offsets for all its partitions (a sink's group has joined and consumed). Stopping a
    task that is still starting (producer id handshake, group join) would time start-up,
    not the runbook."""
    deadline = time.monotonic() + TIMEOUT_S
    while time.monotonic() < deadline:
        response = client.get(f"/connectors/{name}/offsets")
        if response.status_code == 200 and len(response.json()["offsets"]) >= partitions:
            return
        time.sleep(0.1)
    raise TimeoutError(f"{name} committed no offsets: {response.text}")


def round_trip(client: httpx.Client, samples: int = 50) -> float:
    times = []
    for _ in range(samples):
        started = time.perf_counter()
        client.get("/").raise_for_status()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    results: dict[str, list[float]] = {}
    with ExitStack() as stack:
        bootstrap = os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
        if not bootstrap:
            bootstrap = stack.enter_context(EmbeddedBroker()).bootstrap_servers
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        port = free_port()
        props = workdir / "worker.properties"
        props.write_text(f"bootstrap.servers={bootstrap}\nlisteners=http://127.0.0.1:{port}\n"
                         f"storage.sql.url=sqlite:///{workdir / 'connect.db'}\n"
                         "consumer.session.timeout.ms=6000\noffset.flush.interval.ms=500\n")
        log = (workdir / "worker.log").open("w")
        worker = subprocess.Popen([sys.executable, "-m", "worker.cli.standalone", str(props)],
                                  cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
        stack.callback(terminate_process, worker, 30.0, 5.0)
        client = stack.enter_context(httpx.Client(base_url=f"http://127.0.0.1:{port}",
                                                  timeout=30))
        deadline = time.monotonic() + TIMEOUT_S
        while True:
            try:
                if client.get("/health").status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError("worker did not become healthy")
            time.sleep(0.1)
        connectors = {
            "runbook-source": ({"connector.class": "SequenceGenerator", "topic": "runbook",
                                "rate": "100", "tasks.max": "4"}, 4),
            "runbook-sink": ({"connector.class": "FileStreamSink", "topics": "runbook",
                              "file": str(workdir / "sink.txt")}, 1),
        }
        for name, (config, tasks) in connectors.items():
            client.put(f"/connectors/{name}/config", json=config).raise_for_status()
            wait_state(client, name, "RUNNING", tasks)
        rtt = round_trip(client)
        steps: dict[str, dict[str, list[float]]] = {name: {} for name in connectors}
        for name, (_, tasks) in connectors.items():
            results[name] = []
            for _ in range(args.rounds):
                wait_steady(client, name, tasks)
                results[name].append(runbook(client, name, tasks, steps[name]))

    summary = {
        "rounds": args.rounds, "rest_round_trip_s": rtt,
        "runbooks": {name: {"median_s": statistics.median(times),
                            "p90_s": sorted(times)[int(len(times) * 0.9) - 1],
                            "max_s": max(times),
                            "round_trips": statistics.median(times) / rtt,
                            "step_medians_s": {step: statistics.median(values) for step, values
                                               in steps[name].items()},
                            "all_s": times}
                     for name, times in results.items()},
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, "
                   f"Python {platform.python_version()}",
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(summary, indent=2) + "\n")
    print(f"REST round trip (GET /): {rtt * 1000:.2f} ms")
    print(f"{'connector':<16}{'median s':>10}{'p90 s':>8}{'max s':>8}{'round trips':>13}")
    for name, figures in summary["runbooks"].items():
        print(f"{name:<16}{figures['median_s']:>10.3f}{figures['p90_s']:>8.3f}"
              f"{figures['max_s']:>8.3f}{figures['round_trips']:>13.0f}")
    for name, figures in summary["runbooks"].items():
        parts = ", ".join(f"{k} {v:.3f}" for k, v in figures["step_medians_s"].items())
        print(f"  {name}: {parts}")
    print(f"target: median < 1 s; saved {RESULTS}")


if __name__ == "__main__":
    main()
