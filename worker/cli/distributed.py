"""``connect-distributed worker.properties``

As Kafka's script: start a worker that joins the cluster named by ``group.id``, keeping
its state in the internal topics. SIGTERM/SIGINT stop it cleanly at any moment, start-up
included (``worker.cli.base``); a stopping follower leaves the group, so the others
rebalance at once (a leader lets its session expire: ``worker.herder.distributed.membership``).

Only the standard library is imported before ``main()`` installs the signal handlers; the
worker itself is imported by the start-up.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from worker.cli.base import Startup, run

if TYPE_CHECKING:
    from worker.compose import Connect

log = logging.getLogger("worker.cli.distributed")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="connect-distributed",
        description="Run a distributed Kafka Connect-compatible worker (connect-plane).")
    parser.add_argument("worker_properties", help="worker.properties file")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    return run(log, lambda startup: start(startup, args))


def start(startup: Startup, args: argparse.Namespace) -> Connect:
    from worker.compose import build_distributed, discover_plugins
    from worker.config.properties import load_properties
    from worker.config.worker_config import DistributedConfig

    props = load_properties(args.worker_properties)
    # Plugins first: the config providers the properties use may come from plugin.path.
    registry = discover_plugins(props)
    startup.checkpoint()
    config = DistributedConfig(props, registry)
    startup.checkpoint()
    process = startup.built(build_distributed(config, registry, cancelled=startup.cancelled))
    process.start()
    return process


if __name__ == "__main__":
    sys.exit(main())
