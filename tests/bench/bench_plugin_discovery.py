"""Worker start-up with 500 plugins on the plugin path: only_scan vs hybrid_warn vs
service_load (KIP-898).

The script generates a plugin path of ``--plugins`` locations (default 500), each a
directory holding one installed distribution — a plugin module with a source connector and
its task, ``import pandas`` at the top as real connectors import their client libraries,
and a ``.dist-info`` whose ``entry_points.txt`` declares the connector. Two profiles:
``shared`` (pandas only: one import serves every plugin, the best case for scanning) and
``vendored`` (each location also ships and imports its own client library, as each Kafka
plugin directory ships its own jars). Then, ``--runs`` times per mode (modes interleaved
within a round), it starts a ``connect-standalone`` worker with ``plugin.path`` set to it
and measures:

- **ready**: from process start (``Popen``) until ``GET /health`` answers 200, polled every
  10 ms;
- **RSS** of the worker process at that moment;
- **discovery**: the sum of the worker's "Scanning plugins with ... took N ms" log lines;

and checks that ``GET /connector-plugins`` lists every generated connector. Before the
measured rounds, one ``only_scan`` start runs on the freshly generated tree ("cold": no
``__pycache__`` yet; the runs after it find bytecode, as a worker restarted on the same
plugin path does); a worker with an empty plugin path is the baseline.

Run: ``.venv/bin/python tests/bench/bench_plugin_discovery.py [--plugins 500] [--runs 5]
[--vendored-runs 2] [--profile shared|vendored|both] [--workdir DIR]``; writes
``tests/bench/results/plugin_discovery.json``. Targets (issue #13):
service_load ready ≥ 10× faster than only_scan, and in under 2 s.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from contextlib import ExitStack
from datetime import date
from pathlib import Path
from typing import Any

import httpx
import psutil  # type: ignore[import-untyped]  # no type hints shipped, no stubs here

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "tests" / "bench" / "results" / "plugin_discovery.json"
sys.path.insert(0, str(ROOT))

from tests.bench.bench_distributed import machine  # noqa: E402
from tests.unit.worker.plugins import _builder as b  # noqa: E402
from worker.testing import EmbeddedBroker, free_port, terminate_process, write_properties  # noqa: E402

DEPENDENCY = "pandas"
PROFILES = ("shared", "vendored")
#: The shape of each vendored client library: modules, and classes per module.
VENDORED_MODULES, VENDORED_CLASSES = 6, 6
MODES = ("only_scan", "hybrid_warn", "service_load")
_SCAN = re.compile(r"Scanning plugins with \w+ took (\d+) ms")


def vendored_library(i: int) -> dict[str, str]:
    """The client library plugin ``i`` ships in its own location (as a Kafka plugin
    directory ships its own jars): package ``bench_client_<i>`` of
    :data:`VENDORED_MODULES` modules, each with :data:`VENDORED_CLASSES` dataclasses, an
    enum, compiled patterns and functions — the kind of code a REST or database client
    library is made of."""
    package = f"bench_client_{i:03d}"
    names = [f"part{m:02d}" for m in range(VENDORED_MODULES)]
    files = {f"{package}/__init__.py": "".join(f"from . import {name}\n" for name in names)
             + f'__version__ = "4.{i}.0"\n'}
    for m, name in enumerate(names):
        classes = "".join(textwrap.dedent(f'''

            @dataclasses.dataclass(frozen=True)
            class Model{m}x{c}:
                """A resource of the remote API."""
                id: str
                name: str = ""
                size: int = 0
                tags: tuple[str, ...] = ()
                state: State = State.ACTIVE

                @classmethod
                def from_json(cls, data: dict[str, typing.Any]) -> "Model{m}x{c}":
                    return cls(str(data["id"]), str(data.get("name", "")),
                               int(data.get("size", 0)), tuple(data.get("tags", ())),
                               State(data.get("state", "active")))

                def to_json(self) -> dict[str, typing.Any]:
                    return {{"id": self.id, "name": self.name, "size": self.size,
                            "tags": list(self.tags), "state": self.state.value}}

                def matches(self, query: str) -> bool:
                    return bool(PATTERN_{c % 4}.search(self.name)) and query in self.name
            ''') for c in range(VENDORED_CLASSES))
        files[f"{package}/{name}.py"] = textwrap.dedent(f'''\
            """Part {m} of bench client library {i}."""

            import dataclasses
            import enum
            import re
            import typing

            PATTERN_0 = re.compile(r"^[a-z][a-z0-9_-]{{2,62}}$")
            PATTERN_1 = re.compile(r"(?P<host>[^:/]+)(:(?P<port>\\d+))?/(?P<path>.*)")
            PATTERN_2 = re.compile(r"\\b(error|warn|fatal)\\b", re.IGNORECASE)
            PATTERN_3 = re.compile(r"^v(\\d+)\\.(\\d+)\\.(\\d+)(-[0-9a-z.]+)?$")


            class State(enum.Enum):
                ACTIVE = "active"
                PAUSED = "paused"
                DELETED = "deleted"
            ''') + classes
    return files


def plugin_module(i: int, profile: str) -> str:
    """A plugin module of a realistic shape: a configurable source connector and its task,
    doing its work with pandas, which all plugins share; under the ``vendored`` profile it
    also imports the client library its location ships (:func:`vendored_library`)."""
    dependency = (f"import bench_client_{i:03d} as client  # noqa: F401"
                  if profile == "vendored" else "")
    return textwrap.dedent(f'''\
        """Bench plugin {i}: reads rows of a CSV file with pandas and produces them."""

        import threading

        import pandas as pd

        {dependency}

        from worker.api import (ConfigDef, Importance, SourceConnector, SourceRecord,
                                SourceTask, Type)

        CONFIG = (ConfigDef()
                  .define("path", Type.STRING, "", Importance.HIGH, "CSV file to read")
                  .define("topic", Type.STRING, "bench-{i}", Importance.HIGH, "Target topic")
                  .define("batch.rows", Type.INT, 100, Importance.LOW, "Rows per poll"))


        class Bench{i}SourceTask(SourceTask):
            def start(self, props):
                self.props = dict(props)
                self.frame = pd.read_csv(props["path"]) if props.get("path") else None
                self.offset = 0
                self.stopping = threading.Event()

            def poll(self):
                if self.frame is None or self.offset >= len(self.frame):
                    self.stopping.wait(0.5)
                    return None
                rows = self.frame.iloc[self.offset:self.offset + 100]
                self.offset += len(rows)
                return [SourceRecord({{"file": self.props["path"]}}, {{"row": self.offset}},
                                     self.props["topic"], value=row.to_json())
                        for _, row in rows.iterrows()]

            def stop(self):
                self.stopping.set()


        class Bench{i}SourceConnector(SourceConnector):
            def version(self):
                return "1.{i}.0"

            def config(self):
                return CONFIG

            def start(self, props):
                self.props = dict(props)

            def task_class(self):
                return Bench{i}SourceTask

            def task_configs(self, max_tasks):
                return [dict(self.props)]

            def stop(self):
                pass
        ''')


def generate(root: Path, count: int, profile: str) -> Path:
    plugins = root / f"plugins-{profile}"
    for i in range(count):
        module = f"bench_plugin_{i:03d}"
        library = vendored_library(i) if profile == "vendored" else {}
        b.distributions_location(plugins, f"plugin-{i:03d}", f"bench-plugin-{i:03d}",
                                 {f"{module}.py": plugin_module(i, profile), **library},
                                 {b.SOURCE: {f"com.example.bench.Bench{i}SourceConnector":
                                             f"{module}:Bench{i}SourceConnector"}})
    return plugins


def worker_env() -> dict[str, str]:
    """The workers' environment: this one, minus ``PYTHONDONTWRITEBYTECODE`` (set on some
    machines, this one included): a worker writes ``__pycache__`` into writable plugin
    locations, so each start after the cold one finds bytecode, as a restarted worker
    does."""
    env = {key: value for key, value in os.environ.items()
           if key != "PYTHONDONTWRITEBYTECODE"}
    return {**env, "PYTHONUNBUFFERED": "1"}


def start_once(workdir: Path, bootstrap: str, plugin_path: str, mode: str, expected: int,
               label: str) -> dict[str, Any]:
    port = free_port()
    run_dir = Path(tempfile.mkdtemp(prefix=f"{label}-", dir=workdir))
    props = write_properties(run_dir / "worker.properties", {
        "bootstrap.servers": bootstrap, "listeners": f"http://127.0.0.1:{port}",
        "storage.sql.url": f"sqlite:///{run_dir / 'connect.db'}",
        "plugin.path": plugin_path, "plugin.discovery": mode})
    log_path = run_dir / "worker.log"
    with open(log_path, "wb") as log, httpx.Client(base_url=f"http://127.0.0.1:{port}",
                                                   timeout=2.0) as client:
        started = time.monotonic()
        proc = subprocess.Popen([sys.executable, "-m", "worker.cli.standalone", str(props)],
                                stdout=log, stderr=subprocess.STDOUT, cwd=run_dir,
                                env=worker_env())
        try:
            while True:
                if proc.poll() is not None:
                    raise RuntimeError(f"worker exited {proc.returncode}; see {log_path}")
                try:
                    if client.get("/health").status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if time.monotonic() - started > 300:
                    raise RuntimeError(f"worker not ready after 300 s; see {log_path}")
                time.sleep(0.01)
            ready = time.monotonic() - started
            rss = psutil.Process(proc.pid).memory_info().rss
            listed = [p["class"] for p in client.get("/connector-plugins").json()]
        finally:
            terminate_process(proc, 30)
    found = sum(name.startswith("com.example.bench.") for name in listed)
    if found != expected:
        raise RuntimeError(f"{mode}: /connector-plugins lists {found} bench plugins, "
                           f"expected {expected}; see {log_path}")
    discovery_ms = sum(int(m) for m in _SCAN.findall(log_path.read_text()))
    return {"ready_s": round(ready, 3), "rss_mb": round(rss / 2**20, 1),
            "discovery_ms": discovery_ms}


def summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    return {"runs": runs,
            "median_ready_s": round(statistics.median(r["ready_s"] for r in runs), 3),
            "median_rss_mb": round(statistics.median(r["rss_mb"] for r in runs), 1),
            "median_discovery_ms": statistics.median(r["discovery_ms"] for r in runs)}


def run_profile(workdir: Path, bootstrap: str, profile: str, plugins: int, runs: int,
                baseline_s: float) -> dict[str, Any]:
    """Generate the plugin path of ``profile``; one cold ``only_scan`` start, then ``runs``
    rounds of every mode; the figures and ratios."""
    path = generate(workdir, plugins, profile)
    print(f"{profile}: generated {plugins} plugin locations under {path}")
    cold = start_once(workdir, bootstrap, str(path), "only_scan", plugins, f"{profile}-cold")
    print(f"{profile}: cold only_scan (no bytecode yet): {cold}")
    results: dict[str, list[dict[str, Any]]] = {mode: [] for mode in MODES}
    for round_ in range(runs):
        for mode in MODES:
            run = start_once(workdir, bootstrap, str(path), mode, plugins, f"{profile}-{mode}")
            results[mode].append(run)
            print(f"{profile} round {round_ + 1}: {mode:12} {run}")
    modes = {mode: summary(runs) for mode, runs in results.items()}
    scan, fast = modes["only_scan"], modes["service_load"]
    return {
        "only_scan_cold": cold, "modes": modes,
        "ready_ratio_only_scan_over_service_load":
            round(scan["median_ready_s"] / fast["median_ready_s"], 2),
        # What the plugins add to a worker's start-up, the baseline taken off.
        "plugin_cost_ratio_only_scan_over_service_load":
            round((scan["median_ready_s"] - baseline_s)
                  / max(fast["median_ready_s"] - baseline_s, 0.001), 1),
        "discovery_ratio_only_scan_over_service_load":
            round(scan["median_discovery_ms"] / max(fast["median_discovery_ms"], 1), 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plugins", type=int, default=500)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--vendored-runs", type=int, default=2,
                        help="rounds of the vendored profile (a scanning start takes minutes)")
    parser.add_argument("--profile", choices=(*PROFILES, "both"), default="both",
                        help="shared: every plugin imports pandas; vendored: each also "
                             "imports the client library its location ships")
    parser.add_argument("--workdir", type=Path, help="keep the plugin paths and logs here")
    args = parser.parse_args()
    profiles = PROFILES if args.profile == "both" else (args.profile,)
    with ExitStack() as stack:
        workdir = args.workdir or Path(stack.enter_context(tempfile.TemporaryDirectory()))
        workdir.mkdir(parents=True, exist_ok=True)
        bootstrap = os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
        broker = "env"
        if not bootstrap:
            bootstrap = stack.enter_context(EmbeddedBroker()).bootstrap_servers
            broker = "embedded Tansu"
        baseline = summary([start_once(workdir, bootstrap, "", "service_load", 0, "baseline")
                            for _ in range(args.runs)])
        print(f"baseline (empty plugin path): {baseline['median_ready_s']} s")
        results = {profile: run_profile(
            workdir, bootstrap, profile, args.plugins,
            args.vendored_runs if profile == "vendored" else args.runs,
            baseline["median_ready_s"]) for profile in profiles}
    document = {
        "date": date.today().isoformat(), "machine": machine(), "broker": broker,
        "plugins": args.plugins,
        "dependency": f"{DEPENDENCY} {__import__(DEPENDENCY).__version__} (shared); "
                      f"vendored: + a client library of {VENDORED_MODULES} modules x "
                      f"{VENDORED_CLASSES} dataclasses per location",
        "baseline_empty_plugin_path": baseline, "profiles": results,
        "targets": {"ready_ratio_at_least": 10, "service_load_ready_below_s": 2.0},
    }
    RESULTS.write_text(json.dumps(document, indent=2) + "\n")
    for profile, data in results.items():
        print(f"== {profile}: ready ratio {data['ready_ratio_only_scan_over_service_load']}x, "
              f"plugin cost ratio {data['plugin_cost_ratio_only_scan_over_service_load']}x, "
              f"discovery ratio {data['discovery_ratio_only_scan_over_service_load']}x")
        for mode, figures in data["modes"].items():
            print(f"   {mode:12} ready {figures['median_ready_s']} s, RSS "
                  f"{figures['median_rss_mb']} MB, discovery "
                  f"{figures['median_discovery_ms']} ms")


if __name__ == "__main__":
    main()
