"""``make demo``: Kafka Connect, Airflow and Spark end to end, on embedded defaults.

1. the embedded broker (Tansu), a ``connect-standalone`` worker with its state in SQLite
   (http, and https with a certificate from a demo CA; plugins from manifests only),
   a FileStreamSource publishing JSON order events to ``orders`` and a FileStreamSink
   (JsonConverter) archiving them — whose task fails on the one event that is not JSON;
2. Airflow (SQLite, ``dag.test()``): ``orders_source_check`` emits the topic's Asset event;
3. ``orders_pipeline`` runs the PySpark job (``SparkSubmitOperator``, local mode) on the
   exact offset range it planned, writing per-customer totals to Parquet;
4. ``kafka_connect_skip_poison_record`` moves the failed sink past the bad record;
5. ``kafka_connect_replay_source`` re-publishes part of the file; its Asset event leads to a
   second pipeline run over just the replayed records;
6. late orders arrive and the first pipeline run is re-run: same range, identical output;
7. ``kafka_connect_certificate_rotation`` rotates the worker's HTTPS certificate (it
   expires within 30 days): a new keystore signed by the demo CA, PATCHed in through the
   dynamic worker configuration — new fingerprint, same worker PID;
8. a third-party connector dropped into the worker's ``plugin.path`` without a manifest is
   invisible (the worker runs ``plugin.discovery=service_load``) until
   ``kafka_connect_plugin_manifest_sync`` writes its manifest: then the worker lists it,
   without a restart, and a connector created from it publishes.

Everything lives in ``.demo/`` (``--dir``), wiped at start; logs in ``.demo/logs/``.
Usage: ``python -m dags.demo [--dir DIR] [--keep-running] [--airflow [--spark local]]``
from the repository root.

``--airflow`` tells the same story on Airflow's own processes instead of ``dag.test()``:
api-server, scheduler, dag-processor and triggerer (LocalExecutor, SQLite) load ``dags/``;
the scheduler starts the scheduled DAGs and the Asset-triggered pipeline runs, every wait
is deferred to the triggerer, and ``orders_pipeline`` runs on a Spark standalone cluster
(``--spark local``: local mode). Afterwards everything keeps running and the Airflow UI's
URL and login are printed, until Ctrl-C.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from types import FrameType

#: Wiped whole at start; ``python -m worker.demo`` keeps to a directory of its own.
DEFAULT_DIR = Path(".demo")


def _raise_interrupt(signum: int, frame: FrameType | None) -> None:
    # SIGTERM (e.g. from a test harness) stops the demo as cleanly as Ctrl-C does.
    raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dags.demo",
                                     description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--dir", type=Path, default=DEFAULT_DIR,
                        help=f"directory for files, state, output and logs, wiped at start "
                        f"(default: {DEFAULT_DIR})")
    parser.add_argument("--keep-running", action="store_true",
                        help="leave the worker and broker running after the story, until "
                             "Ctrl-C")
    parser.add_argument("--airflow", action="store_true",
                        help="run the DAGs on Airflow's own processes (api-server, "
                             "scheduler, dag-processor, triggerer) and keep its UI up")
    parser.add_argument("--spark", choices=("standalone", "local"), default="standalone",
                        help="with --airflow: where orders_pipeline's Spark job runs "
                             "(default: a standalone cluster started from pyspark)")
    args = parser.parse_args(argv)
    directory = args.dir.resolve()
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        parser.exit(2, "The demo's Spark pipeline needs Java 17 or 21: no `java` on PATH and "
                       "JAVA_HOME is unset.\n")

    from dags.demo.story import Console, Story, prepare

    airflow = None
    if args.airflow:
        from dags.demo.live_airflow import LiveAirflow

        airflow = LiveAirflow(directory, spark=args.spark)
    prepare(directory)
    console = Console(directory / "logs" / "airflow.log")
    console.say("connect-plane demo: Kafka Connect + Airflow + Spark, on embedded defaults")
    console.say(f"Directory: {directory} (wiped)\n")
    signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        return Story(directory, console, airflow).run(
            keep_running=args.keep_running or args.airflow)
    except KeyboardInterrupt:
        console.say("\nInterrupted; the worker and the broker were stopped.")
        return 130


if __name__ == "__main__":
    sys.exit(main())
