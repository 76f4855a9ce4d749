"""``connect-standalone worker.properties [connector.properties|connector.json ...]``

As Kafka's script: start a standalone worker, then create (or update) each connector given
on the command line. SIGTERM/SIGINT stop it cleanly at any moment, start-up included
(``worker.cli.base``: signals, logging, exit codes).

Only the standard library is imported before ``main()`` installs the signal handlers; the
worker itself is imported by the start-up.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from worker.cli.base import Startup, StartupError, run

if TYPE_CHECKING:
    from worker.compose import Connect
    from worker.storage.base import TargetState

log = logging.getLogger("worker.cli.standalone")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="connect-standalone",
        description="Run a standalone Kafka Connect-compatible worker (connect-plane).")
    parser.add_argument("worker_properties", help="worker.properties file")
    parser.add_argument("connector_configs", nargs="*",
                        help="connector .properties or .json files to create or update")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    return run(log, lambda startup: start(startup, args))


def start(startup: Startup, args: argparse.Namespace) -> Connect:
    """Build and start the worker, then create the command-line connectors; the worker is
    ready (``/health`` 200) after them, as Kafka's standalone worker."""
    from worker.compose import build_standalone, discover_plugins
    from worker.config.properties import load_connector_file, load_properties
    from worker.config.worker_config import StandaloneConfig
    from worker.errors import WorkerError

    props = load_properties(args.worker_properties)
    # Plugins first: the config providers the properties use may come from plugin.path.
    registry = discover_plugins(props)
    startup.checkpoint()
    config = StandaloneConfig(props, registry)
    connector_files = [load_connector_file(p) for p in args.connector_configs]
    for path, connector in zip(args.connector_configs, connector_files, strict=True):
        if not connector.config.get("name"):
            raise WorkerError(f"Connector config {path} has no 'name'")
    startup.checkpoint()
    process = startup.built(build_standalone(config, registry, cancelled=startup.cancelled))
    process.start(ready=False)  # ready once the command-line connectors exist
    for connector in connector_files:
        startup.checkpoint()
        name = connector.config["name"]
        try:
            # KIP-980: the initial state applies when the file creates the connector.
            created = process.herder.put_connector_config(
                name, connector.config, allow_replace=True,
                initial_state=initial_target_state(connector.initial_state))
        except WorkerError as exc:
            raise StartupError(f"Failed to create a connector from the command line: "
                               f"{exc}") from exc
        log.info("%s connector %s", "Created" if created.created else "Updated", name)
    process.mark_ready()
    return process


def initial_target_state(initial_state: str | None) -> TargetState | None:
    """A connector file's KIP-980 ``initial_state`` as the config topic's target state
    (RUNNING is STARTED there); None for the default."""
    from worker.storage.base import TargetState
    if initial_state is None:
        return None
    return TargetState.STARTED if initial_state == "RUNNING" else TargetState(initial_state)


if __name__ == "__main__":
    sys.exit(main())
