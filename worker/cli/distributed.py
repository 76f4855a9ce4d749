"""``connect-distributed worker.properties``

As Kafka's script: start a worker that joins the cluster named by ``group.id``, keeping
its state in the internal topics. SIGTERM/SIGINT stop it cleanly (it leaves the group, so
the others rebalance at once).
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from worker.cli.standalone import (
    configure_logging,
    install_signal_handlers,
    raise_fd_limit,
    serve_until_stopped,
)
from worker.compose import build_distributed, discover_plugins
from worker.config.properties import load_properties
from worker.config.worker_config import DistributedConfig
from worker.errors import ConnectError

log = logging.getLogger("worker.cli.distributed")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="connect-distributed",
        description="Run a distributed Kafka Connect-compatible worker (connect-plane).")
    parser.add_argument("worker_properties", help="worker.properties file")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    configure_logging()
    raise_fd_limit()
    try:
        props = load_properties(args.worker_properties)
        # Plugins first: the config providers the properties use may come from plugin.path.
        registry = discover_plugins(props)
        process = build_distributed(DistributedConfig(props, registry), registry)
        process.start()
    except ConnectError as exc:
        log.error("Failed to start the worker: %s", exc)
        return 1
    return serve_until_stopped(process, install_signal_handlers())


if __name__ == "__main__":
    sys.exit(main())
