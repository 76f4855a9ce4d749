"""The story ``make demo`` tells, one chapter per step, narrated on the terminal.

Airflow, Spark and the worker log a lot: while they work, file descriptors 1 and 2 go to
``logs/airflow.log``; the narration goes to the terminal through a copy of the original
stdout.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import sys
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from dags.demo.airflow_runs import DagResult, DagTestAirflow
from dags.demo.stack import ARCHIVE, SOURCE, TOPIC, Stack, StackError, order_lines, wait_for

if TYPE_CHECKING:
    from dags.demo.live_airflow import LiveAirflow

FIRST_ORDERS, POISON_LINE, REPLAY_FROM, LATE_ORDERS = 100, 37, 81, 30
_POISON = re.compile(r"the record at offset (\d+) of (.+)-(\d+) failed")


class Console:
    """Narration on the terminal; everything else into a log file while :meth:`quiet`."""

    def __init__(self, log_path: Path) -> None:
        self.log_path = log_path
        sys.stdout.flush()
        self._out: TextIO = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")

    def say(self, text: str = "") -> None:
        self._out.write(text + "\n")

    @contextmanager
    def quiet(self) -> Iterator[None]:
        sys.stdout.flush()
        sys.stderr.flush()
        saved = os.dup(1), os.dup(2)
        with open(self.log_path, "ab") as log:
            os.dup2(log.fileno(), 1)
            os.dup2(log.fileno(), 2)
            try:
                yield
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os.dup2(saved[0], 1)
                os.dup2(saved[1], 2)
                os.close(saved[0])
                os.close(saved[1])


class Story:
    """One run of the demo; :meth:`run` returns the exit code. ``airflow``: how DAGs run —
    ``dag.test()`` (the default, ``make demo``) or Airflow's own processes
    (:class:`dags.demo.live_airflow.LiveAirflow`, ``--airflow``)."""

    def __init__(self, directory: Path, console: Console,
                 airflow: DagTestAirflow | LiveAirflow | None = None) -> None:
        self.dir = directory
        self.out = console
        self.stack = Stack(directory)
        self.airflow = airflow or DagTestAirflow(directory)
        self.output = directory / "pipeline"
        self.say = console.say

    def run(self, keep_running: bool = False) -> int:
        try:
            self._kafka_and_connect()
            self._airflow()
            self.say("\n[3/8] The Spark pipeline downstream of the connector")
            first = self._pipeline("source_running", "first run", show_totals=True)
            self._skip_poison_record()
            self._replay()
            self._rerun(first)
            self._rotate_certificate()
            self._third_party_plugin()
            self._where_things_are()
            if self.airflow.timings:
                (self.dir / "airflow-timings.json").write_text(
                    json.dumps(self.airflow.timings, indent=2, sort_keys=True) + "\n",
                    encoding="utf-8")
            if keep_running:
                self._wait_for_ctrl_c()
            return 0
        except (StackError, RuntimeError, AssertionError) as exc:
            self.say(f"\nDemo failed: {exc}\nLogs: {self.stack.logs}/")
            return 1
        except Exception as exc:  # a bug: the traceback goes to the log, not the story
            with open(self.out.log_path, "a", encoding="utf-8") as log:
                traceback.print_exc(file=log)
            self.say(f"\nDemo failed: {type(exc).__name__}: {exc} (traceback in "
                     f"{self.out.log_path})")
            return 1
        finally:
            self.say("\nStopping Airflow, the worker (SIGTERM) and the broker:")
            with self.out.quiet(), _signals_deferred():
                said = self.airflow.stop() + self.stack.stop()
            for line in said:
                self.say(f"  {line}")

    # ------------------------------------------------------------------ chapters

    def _kafka_and_connect(self) -> None:
        self.say("[1/8] Kafka, a Kafka Connect worker and two connectors")
        self.stack.start()
        self.say(f"  broker (Tansu, embedded) at {self.stack.bootstrap}, topic {TOPIC!r}")
        self.say(f"  worker (connect-standalone, state in {self.dir / 'connect.db'}) "
                 f"at {self.stack.url} and {self.stack.https_url}")
        lines = order_lines(1, FIRST_ORDERS, poison_at=POISON_LINE)
        self.stack.orders_file.write_text("".join(f"{x}\n" for x in lines), encoding="utf-8")
        self.say(f"  wrote {len(lines)} order events to {self.stack.orders_file} "
                 f"(line {POISON_LINE} is cut short: not JSON)")
        self.stack.create_connectors()
        self.stack.wait_published("the file")
        state = self.stack.status(SOURCE)["connector"]["state"]
        self.say(f"  {SOURCE}: {state}, published {len(lines)} records to {TOPIC!r}")
        status = wait_for(lambda: self._failed_task(ARCHIVE), f"{ARCHIVE} to reach the poison")
        reason = next((ln.strip() for ln in status["trace"].splitlines()
                       if "Tolerance exceeded" in ln), status["trace"].splitlines()[-1])
        self.say(f"  {ARCHIVE}: task FAILED — {reason[:150]}")

    def _airflow(self) -> None:
        self.say(f"\n[2/8] {self.airflow.describe()}")
        with self.out.quiet():
            said = self.airflow.start(self.stack, self.output)
        for line in said:
            self.say(f"  {line}")
        with self.out.quiet():
            check = self.airflow.run_dag("orders_source_check", scheduled=True)
        self._expect(check, "orders_source_check")

    def _pipeline(self, emitted_by: str, label: str, *,
                  show_totals: bool = False) -> DagResult:
        """The ``orders_pipeline`` run the Asset event of task ``emitted_by`` queued."""
        with self.out.quiet():
            result = self.airflow.pipeline(emitted_by, self.stack.bootstrap, TOPIC)
        return self._pipeline_done(result, label, show_totals=show_totals)

    def _pipeline_done(self, result: DagResult, label: str, *,
                       show_totals: bool = False) -> DagResult:
        if result.note:
            self.say(f"  {result.note}")
        self._expect(result, f"orders_pipeline ({label}, SparkSubmitOperator)")
        summary = result.returned["report"]
        self.say(f"    run {result.run_id}: offsets {_offsets(summary)}")
        self.say(f"    {summary['records_read']} records read, {summary['records_dropped']} "
                 f"dropped, {summary['duplicates']} duplicates → {summary['orders']} orders "
                 f"of {summary['customers']} customers")
        self.say(f"    Parquet: {summary['output']}")
        if show_totals:
            from dags.pipelines.orders_job import read_output

            self.say("      customer  currency  orders     amount")
            for row in read_output(summary["output"])[0].to_pylist():
                self.say(f"      {row['customer']:<9} {row['currency']:<8} {row['orders']:>7}"
                         f"  {row['total_amount']:>9.2f}")
        return result

    def _skip_poison_record(self) -> None:
        failed = self._failed_task(ARCHIVE)
        if failed is None:
            raise RuntimeError(f"the task of {ARCHIVE} is no longer FAILED: nothing to skip")
        trace = failed["trace"]
        found = _POISON.search(trace)
        if found is None:
            raise RuntimeError(f"the trace of {ARCHIVE} names no record: {trace[-500:]}")
        offset, topic, partition = int(found[1]), found[2], int(found[3])
        self.say(f"\n[4/8] kafka_connect_skip_poison_record: the trace names offset {offset} "
                 f"of {topic}-{partition}")
        with self.out.quiet():
            result = self.airflow.run_dag("kafka_connect_skip_poison_record", conf={
                "connector": ARCHIVE, "topic": topic, "partition": partition,
                "poison_offset": offset})
        self._expect(result, "kafka_connect_skip_poison_record")
        check, runbook = result.returned["check_position"], result.returned["skip_poison_record"]
        self.say(f"  check_position: the sink's group is at offset {check['committed']}: "
                 f"skipping {check['records_skipped']} record")
        self.say(f"  skip_poison_record: stop → offsets {_kafka_offsets(runbook['before'])} → "
                 f"{_kafka_offsets(runbook['after'])} → resume: {ARCHIVE} RUNNING")
        wanted = FIRST_ORDERS - 1
        wait_for(lambda: _line_count(self.stack.archive_file) >= wanted,
                 f"{ARCHIVE} to archive the records after the poison one")
        self.say(f"  {self.stack.archive_file.name} holds {wanted} orders: all but the poison")

    def _replay(self) -> None:
        lines = self.stack.orders_file.read_bytes().split(b"\n")
        position = sum(len(line) + 1 for line in lines[:REPLAY_FROM - 1])
        self.say(f"\n[5/8] kafka_connect_replay_source: publish orders {REPLAY_FROM}–"
                 f"{FIRST_ORDERS} again (byte {position} of {self.stack.orders_file.name})")
        offsets = [{"partition": {"filename": str(self.stack.orders_file)},
                    "offset": {"position": position}}]
        with self.out.quiet():
            result = self.airflow.run_dag("kafka_connect_replay_source", conf={
                "connector": SOURCE, "action": "alter", "offsets": offsets})
        self._expect(result, "kafka_connect_replay_source")
        self.stack.wait_published("the replayed lines")
        before = result.returned["replay"]["before"][0]["offset"]["position"]
        self.say(f"  replay: stop → position {before} → {position} → resume; "
                 f"{FIRST_ORDERS - REPLAY_FROM + 1} records published again")
        self._pipeline("replay", "second run")

    def _rerun(self, first_run: DagResult) -> None:
        from dags.pipelines.orders_job import read_output, same_output

        self.say(f"\n[6/8] {LATE_ORDERS} late orders arrive; then the first run is re-run")
        late = order_lines(FIRST_ORDERS + 1, LATE_ORDERS)
        with self.stack.orders_file.open("a", encoding="utf-8") as handle:
            handle.write("".join(f"{line}\n" for line in late))
        self.stack.wait_published("the late orders")
        self.say(f"  {SOURCE} published them: the topic now holds "
                 f"{FIRST_ORDERS + (FIRST_ORDERS - REPLAY_FROM + 1) + LATE_ORDERS} records")
        first = first_run.returned["report"]
        written = read_output(first["output"])
        with self.out.quiet():
            rerun = self.airflow.rerun(first_run)
        again = self._pipeline_done(rerun, "first run, cleared and re-run").returned["report"]
        if not same_output(read_output(again["output"]), written) or (
                _offsets(again) != _offsets(first)):
            raise AssertionError("the re-run read other records or wrote other output")
        self.say("    same range, same rows, schema and metadata as the first try: identical")

    def _rotate_certificate(self) -> None:
        from airflow_provider.hooks.tls import TlsClientOptions, served_certificate

        trust = TlsClientOptions(ca_bundle=str(self.stack.ca_cert))
        url, worker = self.stack.https_url, self.stack.worker
        assert worker is not None
        before, pid = served_certificate(url, trust), worker.pid
        self.say(f"\n[7/8] kafka_connect_certificate_rotation: the worker's HTTPS certificate "
                 f"at {url} expires in {before.days_left():.0f} days")
        with self.out.quiet():
            # The DAG's default params: rotate what expires within 30 days.
            result = self.airflow.run_dag("kafka_connect_certificate_rotation",
                                          scheduled=True)
        self._expect(result, "kafka_connect_certificate_rotation")
        made, report = result.returned["create_keystore"], result.returned["verify"]
        after = served_certificate(url, trust)
        if after.sha256 != made["fingerprint"] or after.sha256 == before.sha256:
            raise AssertionError(f"{url} serves {after.sha256}, not the new certificate "
                                 f"{made['fingerprint']}")
        if worker.pid != pid or not worker.is_running:
            raise AssertionError(f"the worker's PID changed: {pid} → {worker.pid}")
        self.say(f"  new keystore {made['keystore']} (signed by the demo CA; password via "
                 f"{made['password_placeholder'][:7]}...}}, never in clear)")
        self.say(f"  fingerprint before: {before.sha256}  (valid until "
                 f"{before.not_after:%Y-%m-%d})")
        self.say(f"  fingerprint after:  {after.sha256}  (valid until "
                 f"{after.not_after:%Y-%m-%d}, {report['days_left']:.0f} days)")
        self.say(f"  worker PID {worker.pid} unchanged: hot reload, no restart; the previous "
                 "keystore is kept for a rollback")

    def _third_party_plugin(self) -> None:
        from dags.demo import third_party as acme

        stack, worker, name = self.stack, self.stack.worker, "tickets-source"
        assert worker is not None
        pid = worker.pid
        self.say("\n[8/8] kafka_connect_plugin_manifest_sync: a third-party connector without "
                 "a manifest")
        module = acme.drop_plugin(stack.plugin_path)
        self.say(f"  dropped {module.relative_to(self.dir)} into the worker's plugin.path: "
                 "a plain module, no manifest")
        listed = stack.plugin_versions()
        if acme.CONNECTOR_CLASS in listed:
            raise AssertionError(f"{acme.CONNECTOR_CLASS} is listed without a manifest")
        self.say(f"  plugin.discovery=service_load: GET /connector-plugins lists {len(listed)} "
                 f"plugins, not {acme.CONNECTOR_CLASS}")
        config = {"connector.class": acme.CONNECTOR_CLASS, "topic": acme.TOPIC,
                  "tasks.max": "1"}
        response = stack.client.put(f"/connectors/{name}/config", json=config)
        if response.status_code != 400:
            raise AssertionError(f"creating {name} answered {response.status_code}, not 400: "
                                 f"{response.text[:300]}")
        message = response.json().get("message", "")
        self.say(f"  creating {name}: HTTP 400 {message[:110]}...")
        conf = {"plugin_path": [str(stack.plugin_path)]}
        with self.out.quiet():
            # Its default plugin_path is the worker's (CONNECT_PLANE_PLUGIN_PATH).
            result = self.airflow.run_dag("kafka_connect_plugin_manifest_sync", conf=conf,
                                          scheduled=True)
        self._expect(result, "kafka_connect_plugin_manifest_sync")
        self.say("  the dry run's plan, then written by sync:")
        for change in result.returned["plan"]["changes"]:
            entry = f" {change['entry']}" if change["entry"] else ""
            self.say(f"    {change['action']}{entry} → "
                     f"{Path(change['manifest']).relative_to(self.dir)}")
        report = result.returned["check_workers"]["workers"]
        for url, versions in report.items():
            # service_load imports a plugin when first used: no version until then.
            version = versions[acme.CONNECTOR_CLASS] or "(its version is read on first use)"
            self.say(f"  check_workers: {url} lists {acme.CONNECTOR_CLASS} {version}")
        if acme.CONNECTOR_CLASS not in stack.plugin_versions() or worker.pid != pid:
            raise AssertionError(f"the worker (PID {pid} → {worker.pid}) does not list "
                                 f"{acme.CONNECTOR_CLASS}")
        self.say(f"  worker PID {pid} unchanged: it re-read the manifests, no restart")
        stack.create_topic(acme.TOPIC)
        response = stack.client.put(f"/connectors/{name}/config", json=config)
        if response.status_code != 201:
            raise StackError(f"creating {name}: HTTP {response.status_code} {response.text}")
        wait_for(lambda: stack.committed(name) == {"ticket": acme.TICKETS - 1},
                 f"{name} to publish {acme.TICKETS} tickets")
        state = stack.status(name)
        self.say(f"  {name}: {state['connector']['state']}, task "
                 f"{state['tasks'][0]['state']}; published {acme.TICKETS} tickets to "
                 f"{acme.TOPIC!r}")
        version = stack.plugin_versions().get(acme.CONNECTOR_CLASS)
        self.say(f"  GET /connector-plugins: {acme.CONNECTOR_CLASS} {version}")
        with self.out.quiet():
            again = self.airflow.run_dag("kafka_connect_plugin_manifest_sync", conf=conf)
        self._expect(again, "kafka_connect_plugin_manifest_sync (next night)")
        if again.returned["plan"]["changes"] or again.states["sync"] != "skipped":
            raise AssertionError(f"the second run planned changes: {again.returned['plan']}")

    def _where_things_are(self) -> None:
        self.say("\nWhere things are:")
        for what, where in (
                ("orders (source file)", self.stack.orders_file),
                ("archive (sink file)", self.stack.archive_file),
                ("Parquet per run", self.output / "runs"),
                ("offset ranges per run", self.output / "ranges"),
                ("worker state (SQLite)", self.dir / "connect.db"),
                ("TLS: demo CA, keystores", self.stack.tls_dir),
                ("plugin.path", self.stack.plugin_path),
                ("Airflow home (SQLite)", self.dir / "airflow"),
                ("logs", self.stack.logs)):
            self.say(f"  {what:<23} {where}")

    def _wait_for_ctrl_c(self) -> None:
        url = self.stack.url
        self.say(f"\nThe worker keeps running at {url} and {self.stack.https_url}; try:\n"
                 f"  curl -s '{url}/connectors?expand=status'\n"
                 f"  curl -s {url}/connectors/{SOURCE}/offsets\n"
                 f"  curl -s {url}/connectors/{SOURCE}/topics\n"
                 f"  curl -s --cacert {self.stack.ca_cert} {self.stack.https_url}/admin/worker")
        for line in self.airflow.ui():
            self.say(line)
        self.say("Ctrl-C stops it all.")
        try:
            wait_for(lambda: not (self.stack.worker and self.stack.worker.is_running),
                     "Ctrl-C", timeout=float("inf"), interval=1.0)
            self.say("The worker exited.")
        except KeyboardInterrupt:
            self.say("\nInterrupted.")

    # ------------------------------------------------------------------ helpers

    def _failed_task(self, name: str) -> dict[str, Any] | None:
        tasks = self.stack.status(name).get("tasks", [])
        return tasks[0] if tasks and tasks[0]["state"] == "FAILED" else None

    def _expect(self, result: DagResult, dag_id: str) -> None:
        if not result.succeeded:
            seen = "; ".join(f"{task}: {' → '.join(states)}"
                             for task, states in result.seen.items())
            raise RuntimeError(f"{dag_id} run {result.run_id} did not succeed: {result.states}"
                               + (f" (states seen: {seen})" if seen else "")
                               + (f"\n{result.problems}" if result.problems else "")
                               + f"\nsee {self.out.log_path}")
        tasks = ", ".join(f"{task}={state}" for task, state in result.states.items())
        self.say(f"  {dag_id}: {tasks}")
        if result.note and not dag_id.startswith("orders_pipeline"):
            self.say(f"    ({result.note})")
        for task, states in result.seen.items():
            if "deferred" in states:  # the waits ran in the triggerer, not in a worker slot
                self.say(f"    {task}: {' → '.join(states)}")


@contextmanager
def _signals_deferred() -> Iterator[None]:
    """Ctrl-C and SIGTERM wait while the demo stops what it started (bounded: every stop
    has its timeout): an interrupted stop would leave processes behind in their own
    sessions."""
    previous = {sig: signal.signal(sig, signal.SIG_IGN) for sig in (signal.SIGINT,
                                                                    signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _offsets(summary: dict[str, Any]) -> str:
    return f"{json.dumps(summary['starting_offsets'])} → {json.dumps(summary['ending_offsets'])}"


def _kafka_offsets(offsets: list[dict[str, Any]]) -> str:
    return ", ".join(str(o["offset"]["kafka_offset"]) for o in offsets) or "none"


def _line_count(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines()) if path.exists() else 0


def prepare(directory: Path) -> None:
    """Empty ``directory``: the broker keeps its data in memory, so state left from a
    previous run would name topics and offsets that no longer exist."""
    if directory.exists():
        shutil.rmtree(directory)
    (directory / "logs").mkdir(parents=True)
