"""``connect-standalone worker.properties [connector.properties|connector.json ...]``

As Kafka's script: start a standalone worker, then create (or update) each connector given
on the command line. SIGTERM/SIGINT stop it cleanly.
"""

from __future__ import annotations

import argparse
import faulthandler
import logging
import signal
import sys
import threading
from collections.abc import Sequence

from worker.compose import Connect, build_standalone, discover_plugins
from worker.config.properties import load_connector_file, load_properties
from worker.config.worker_config import StandaloneConfig
from worker.errors import ConnectError
from worker.runtime import fd_budget
from worker.storage.base import TargetState
from worker.util.collector import settle_collector

log = logging.getLogger("worker.cli.standalone")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="connect-standalone",
        description="Run a standalone Kafka Connect-compatible worker (connect-plane).")
    parser.add_argument("worker_properties", help="worker.properties file")
    parser.add_argument("connector_configs", nargs="*",
                        help="connector .properties or .json files to create or update")
    return parser.parse_args(argv)


def configure_logging() -> None:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="[%(asctime)s] %(levelname)s %(message)s (%(name)s) "
                               "[%(threadName)s]")


def raise_fd_limit() -> None:
    """Before anything opens a client: the soft RLIMIT_NOFILE up to the hard limit, and
    one line saying what that allows (worker.runtime.fd_budget)."""
    log.info("%s", fd_budget.describe(*fd_budget.raise_nofile_limit()))


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    configure_logging()
    raise_fd_limit()
    try:
        props = load_properties(args.worker_properties)
        # Plugins first: the config providers the properties use may come from plugin.path.
        registry = discover_plugins(props)
        config = StandaloneConfig(props, registry)
        connector_files = [load_connector_file(p) for p in args.connector_configs]
        for path, connector in zip(args.connector_configs, connector_files, strict=True):
            if not connector.config.get("name"):
                raise ConnectError(f"Connector config {path} has no 'name'")
        process = build_standalone(config, registry)
        process.start(ready=False)  # ready once the command-line connectors exist
    except ConnectError as exc:
        log.error("Failed to start the worker: %s", exc)
        return 1

    stopping = install_signal_handlers()
    try:
        for connector in connector_files:
            name = connector.config["name"]
            # KIP-980: the initial state applies when the file creates the connector.
            created = process.herder.put_connector_config(
                name, connector.config, allow_replace=True,
                initial_state=initial_target_state(connector.initial_state))
            log.info("%s connector %s", "Created" if created.created else "Updated", name)
    except ConnectError as exc:
        log.error("Failed to create a connector from the command line: %s", exc)
        process.stop()
        return 1
    process.mark_ready()
    return serve_until_stopped(process, stopping)


def initial_target_state(initial_state: str | None) -> TargetState | None:
    """A connector file's KIP-980 ``initial_state`` as the config topic's target state
    (RUNNING is STARTED there); None for the default."""
    if initial_state is None:
        return None
    return TargetState.STARTED if initial_state == "RUNNING" else TargetState(initial_state)


def install_signal_handlers() -> threading.Event:
    """SIGTERM/SIGINT set the returned event; SIGUSR1 dumps every thread's stack."""
    stopping = threading.Event()

    def on_signal(signum: int, _frame: object) -> None:
        log.info("Received %s; stopping", signal.Signals(signum).name)
        stopping.set()

    # `kill -USR1 <pid>` prints every thread's stack to stderr (the jstack of this worker).
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    return stopping


def serve_until_stopped(process: Connect, stopping: threading.Event) -> int:
    # Everything built so far lives as long as the process; records come in batches.
    settle_collector()
    log.info("Worker started; REST API at %s", process.server.url)
    while not stopping.wait(1.0):
        pass
    process.stop()
    log.info("Worker stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
