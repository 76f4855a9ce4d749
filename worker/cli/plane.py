"""``connect-plane <command>``: connect-plane's own tools, beside the commands named after
Kafka's (``connect-standalone``, ``connect-distributed``, ``connect-plugin-path``).

One command so far, ``broker`` (:mod:`worker.cli.broker`): the embedded test broker in the
foreground. A tool of ours gets a subcommand here rather than a ``connect-*`` name of its
own, so that no name suggests a Kafka tool that Kafka does not have.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from worker.cli import broker
from worker.util.logs import configure_logging


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="connect-plane",
                                   description="connect-plane's own tools.")
    commands = root.add_subparsers(dest="command", required=True, metavar="{broker}")
    broker.add_arguments(commands.add_parser(
        "broker", help="run the embedded Kafka-compatible test broker (Tansu) in the "
        "foreground and print the bootstrap.servers line for worker.properties",
        description="Run the embedded Kafka-compatible test broker (Tansu, memory storage: "
        "nothing survives a stop) until Ctrl-C or SIGTERM."))
    return root


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    configure_logging()
    return broker.run(args)


if __name__ == "__main__":
    sys.exit(main())
