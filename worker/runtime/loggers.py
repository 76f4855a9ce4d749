"""KIP-495 dynamic log levels over Python's standard ``logging`` module.

Kafka Connect reads and sets log4j levels; this worker logs through ``logging`` with
logger names that mirror module paths (``worker.runtime.source_task``), so ``Loggers``
translates between the two:

* Kafka's level names map to Python levels: ``ALL``→1, ``TRACE``→5 (registered as a level
  name so records print ``TRACE``), ``DEBUG``, ``INFO``, ``WARN``↔``WARNING``, ``ERROR``,
  ``FATAL``↔``CRITICAL``, ``OFF``→a level no record reaches. Names are matched without
  regard to case, as Kafka does; Python-only names (``WARNING``, ``CRITICAL``) are invalid,
  as they are for log4j.
* A logger is *known* once something created it (a real ``logging.Logger`` in the
  manager's ``loggerDict``; a package placeholder is not a logger). The root logger is
  ``root`` (any case) or the empty name.
* ``set_level`` sets the namespace logger (created if needed, as log4j does) and every
  existing descendant explicitly, and reports the loggers whose level actually changed —
  Kafka 4.x's semantics. Descendants are dotted children (``a.b`` is under ``a``, ``ab``
  is not); Kafka's log4j code matches by plain string prefix.
* ``last_modified`` (ms since the epoch) is recorded for each logger changed through this
  object, in memory only: levels and timestamps do not survive a restart, as in Kafka.

There is one ``Loggers`` per worker (built by the composition root); the only shared
state is Python's logging module itself, which is process-wide by nature.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import NamedTuple

from worker.errors import NotFoundError

log = logging.getLogger(__name__)

#: The name Kafka (log4j 1) gives the root logger; log4j2's empty name is accepted too.
ROOT_LOGGER_NAME = "root"
TRACE = 5
#: Python has no OFF: a level above any a record is logged at (log4j's OFF is MAX_VALUE).
OFF = 2**31 - 1
ALL = 1  # NOTSET (0) would mean "inherit" on a non-root logger

#: Kafka level name → Python level, most verbose first.
KAFKA_LEVELS: dict[str, int] = {
    "ALL": ALL, "TRACE": TRACE, "DEBUG": logging.DEBUG, "INFO": logging.INFO,
    "WARN": logging.WARNING, "ERROR": logging.ERROR, "FATAL": logging.CRITICAL, "OFF": OFF,
}


class LoggerState(NamedTuple):
    """A logger's effective level (Kafka name) and when this worker last changed it (ms)."""

    level: str
    last_modified: int | None


def kafka_level_name(level: int) -> str:
    """The Kafka name of a Python level: the most severe Kafka level not above it.

    A custom level between two Kafka levels (say 25) reports the lower one (INFO),
    whose records it lets through in part; NOTSET (0, only meaningful on the root)
    lets everything through and reports ``ALL``.
    """
    name = "ALL"
    for kafka_name, value in KAFKA_LEVELS.items():
        if value <= level:
            name = kafka_name
    return name


def python_level(level: str) -> int:
    """The Python level for a Kafka level name (any case).

    Raises NotFoundError with Kafka's message: its ``LoggingResource`` answers 404, not
    400, for an unknown level.
    """
    value = KAFKA_LEVELS.get(level.upper())
    if value is None:
        raise NotFoundError(f"invalid log level '{level}'.")
    return value


class Loggers:
    """Reads and sets log levels of one worker (thread-safe).

    :param clock: seconds since the epoch (``time.time``); injectable for tests.
    :param manager: the logging hierarchy to act on; Python's global one by default.
        Tests pass a private ``logging.Manager`` so they never touch real loggers.
    """

    def __init__(self, clock: Callable[[], float] = time.time,
                 manager: logging.Manager | None = None) -> None:
        self._clock = clock
        self._manager = manager if manager is not None else logging.Logger.manager
        self._root: logging.Logger = self._manager.root
        self._last_modified: dict[str, int] = {}
        self._lock = threading.Lock()
        # Records at level 5 print "TRACE" instead of "Level 5"; never rename a level an
        # application already named.
        if logging.getLevelName(TRACE) == f"Level {TRACE}":
            logging.addLevelName(TRACE, "TRACE")

    # --- reads ---------------------------------------------------------------------------

    def level(self, name: str) -> LoggerState:
        """The effective level of a known logger. Raises NotFoundError for an unknown one."""
        with self._lock:
            logger = self._existing(name)
            if logger is None:
                raise NotFoundError(f"Logger {name} not found.")
            return self._level_of(logger)

    def all_levels(self) -> dict[str, LoggerState]:
        """The root logger and every logger with an explicit level, sorted by name.

        Loggers turned ``OFF`` are left out, as Kafka 4.x leaves them out.
        """
        with self._lock:
            loggers = [self._root, *(lg for lg in self._loggers() if lg.level != logging.NOTSET)]
            levels = {self._name(lg): self._level_of(lg) for lg in loggers}
        return {name: levels[name] for name in sorted(levels) if levels[name].level != "OFF"}

    # --- writes --------------------------------------------------------------------------

    def set_level(self, namespace: str, level: str) -> list[str]:
        """Set ``namespace`` and its existing descendants to ``level``.

        Returns the sorted names of the loggers whose effective level changed (a logger
        this call had to create counts as changed, as in Kafka). Raises NotFoundError for
        an unknown level name.
        """
        value = python_level(level)
        with self._lock:
            if self._is_root(namespace):
                targets = [self._root, *self._loggers()]
            else:
                prefix = namespace + "."
                targets = [lg for lg in self._loggers() if lg.name.startswith(prefix)]
                namespace_logger = self._existing(namespace)
                if namespace_logger is not None:
                    targets.append(namespace_logger)
            # None marks the logger this call creates: it counts as changed, as in Kafka.
            before: dict[str, int | None] = {self._name(lg): lg.getEffectiveLevel()
                                             for lg in targets}
            if not self._is_root(namespace) and namespace not in before:
                before[namespace] = None
                targets.append(self._manager.getLogger(namespace))
            log.info("Setting level of namespace %s and children to %s", namespace,
                     level.upper())
            for logger in targets:
                logger.setLevel(value)
            now = int(self._clock() * 1000)
            changed = sorted(name for name, old in before.items() if old != value)
            for name in changed:
                self._last_modified[name] = now
        return changed

    # --- helpers -------------------------------------------------------------------------

    @staticmethod
    def _is_root(name: str) -> bool:
        return name == "" or name.lower() == ROOT_LOGGER_NAME

    def _name(self, logger: logging.Logger) -> str:
        return ROOT_LOGGER_NAME if logger is self._root else logger.name

    def _loggers(self) -> list[logging.Logger]:
        """Every real logger (not placeholders) of the hierarchy, root excluded."""
        # list() copies in one step: other threads may create loggers meanwhile.
        return [lg for lg in list(self._manager.loggerDict.values())
                if isinstance(lg, logging.Logger)]

    def _existing(self, name: str) -> logging.Logger | None:
        if self._is_root(name):
            return self._root
        logger = self._manager.loggerDict.get(name)
        return logger if isinstance(logger, logging.Logger) else None

    def _level_of(self, logger: logging.Logger) -> LoggerState:
        return LoggerState(kafka_level_name(logger.getEffectiveLevel()),
                           self._last_modified.get(self._name(logger)))
