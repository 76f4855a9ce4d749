"""worker.runtime.loggers: Kafka level names over Python's logging (KIP-495).

Every test acts on a private logging hierarchy (``logging.Manager``), so none of them
changes a real logger of the test process.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from worker.errors import NotFoundError
from worker.runtime.loggers import (
    OFF,
    TRACE,
    Loggers,
    LoggerState,
    kafka_level_name,
    python_level,
)

NOW_S = 1_700_000_000.5
NOW_MS = 1_700_000_000_500


class Hierarchy:
    """A private logging tree with a clock the test moves, and the Loggers over it."""

    def __init__(self, root_level: int = logging.INFO) -> None:
        self.root = logging.RootLogger(root_level)
        self.manager = logging.Manager(self.root)
        self.root.manager = self.manager  # class attribute otherwise: the global manager
        self.now = NOW_S
        self.loggers = Loggers(clock=lambda: self.now, manager=self.manager)

    def get(self, name: str) -> logging.Logger:
        return self.manager.getLogger(name)


@pytest.fixture
def tree() -> Hierarchy:
    return Hierarchy()


# --- level names --------------------------------------------------------------------------

@pytest.mark.parametrize(("kafka", "python"), [
    ("ALL", 1), ("TRACE", TRACE), ("DEBUG", logging.DEBUG), ("INFO", logging.INFO),
    ("WARN", logging.WARNING), ("ERROR", logging.ERROR), ("FATAL", logging.CRITICAL),
    ("OFF", OFF),
])
def test_kafka_names_map_both_ways(kafka: str, python: int) -> None:
    assert python_level(kafka) == python
    assert python_level(kafka.lower()) == python  # Kafka upper-cases what it is sent
    assert kafka_level_name(python) == kafka


@pytest.mark.parametrize(("python", "kafka"), [
    (0, "ALL"), (3, "ALL"), (15, "DEBUG"), (25, "INFO"), (45, "ERROR"), (55, "FATAL"),
])
def test_levels_between_kafka_levels_report_the_lower_one(python: int, kafka: str) -> None:
    assert kafka_level_name(python) == kafka


@pytest.mark.parametrize("level", ["WARNING", "CRITICAL", "LOUD", "", " DEBUG", "10"])
def test_unknown_level_is_kafkas_404(level: str) -> None:
    with pytest.raises(NotFoundError) as info:
        python_level(level)
    assert str(info.value) == f"invalid log level '{level}'."


def test_trace_is_a_registered_level_name(tree: Hierarchy) -> None:
    assert logging.getLevelName(TRACE) == "TRACE"


# --- reads --------------------------------------------------------------------------------

def test_listing_has_root_and_explicitly_set_loggers_only(tree: Hierarchy) -> None:
    tree.get("worker.runtime.source_task")  # NOTSET: inherits, not listed
    tree.get("uvicorn").setLevel(logging.WARNING)
    tree.get("worker.rest").setLevel(logging.DEBUG)

    levels = tree.loggers.all_levels()

    assert list(levels) == ["root", "uvicorn", "worker.rest"]  # sorted, placeholders out
    assert levels["root"] == LoggerState("INFO", None)
    assert levels["uvicorn"] == LoggerState("WARN", None)
    assert levels["worker.rest"] == LoggerState("DEBUG", None)


def test_listing_leaves_out_loggers_turned_off(tree: Hierarchy) -> None:
    tree.get("noisy").setLevel(OFF)

    assert "noisy" not in tree.loggers.all_levels()
    assert tree.loggers.level("noisy") == LoggerState("OFF", None)


def test_level_is_the_effective_one(tree: Hierarchy) -> None:
    tree.get("worker").setLevel(logging.ERROR)
    tree.get("worker.runtime.sink_task")

    assert tree.loggers.level("worker.runtime.sink_task") == LoggerState("ERROR", None)


@pytest.mark.parametrize("name", ["root", "ROOT", "Root", ""])
def test_root_is_known_by_kafkas_names(tree: Hierarchy, name: str) -> None:
    assert tree.loggers.level(name) == LoggerState("INFO", None)


@pytest.mark.parametrize("name", ["no.such.logger", "worker"])
def test_unknown_logger_is_not_found(tree: Hierarchy, name: str) -> None:
    tree.get("worker.runtime.worker")  # makes "worker" a placeholder, not a logger

    with pytest.raises(NotFoundError) as info:
        tree.loggers.level(name)
    assert str(info.value) == f"Logger {name} not found."


def test_reading_never_creates_a_logger(tree: Hierarchy) -> None:
    with pytest.raises(NotFoundError):
        tree.loggers.level("ghost")
    assert "ghost" not in tree.manager.loggerDict


# --- writes -------------------------------------------------------------------------------

def test_set_level_changes_namespace_and_descendants(tree: Hierarchy) -> None:
    for name in ("worker", "worker.runtime", "worker.runtime.sink_task", "worker.rest",
                 "workers", "other"):
        tree.get(name)

    changed = tree.loggers.set_level("worker.runtime", "debug")

    assert changed == ["worker.runtime", "worker.runtime.sink_task"]
    assert tree.get("worker.runtime.sink_task").level == logging.DEBUG
    assert tree.get("worker").level == logging.NOTSET  # ancestors untouched
    assert tree.get("worker.rest").getEffectiveLevel() == logging.INFO


def test_descendants_are_dotted_children_only(tree: Hierarchy) -> None:
    tree.get("worker.a")
    tree.get("workerish")

    assert tree.loggers.set_level("worker", "ERROR") == ["worker", "worker.a"]
    assert tree.get("workerish").getEffectiveLevel() == logging.INFO


def test_only_loggers_whose_level_changed_are_reported(tree: Hierarchy) -> None:
    tree.get("app")
    tree.get("app.quiet").setLevel(logging.ERROR)
    tree.get("app.same")  # inherits INFO already

    changed = tree.loggers.set_level("app", "INFO")

    assert changed == ["app.quiet"]
    assert tree.loggers.level("app.quiet") == LoggerState("INFO", NOW_MS)
    assert tree.loggers.level("app.same") == LoggerState("INFO", None)
    # Every target is now set explicitly, as log4j's setAllLevels does.
    assert {"app", "app.quiet", "app.same"} <= set(tree.loggers.all_levels())


def test_a_logger_created_by_the_call_counts_as_changed(tree: Hierarchy) -> None:
    assert tree.loggers.set_level("brand.new", "INFO") == ["brand.new"]
    assert tree.loggers.level("brand.new") == LoggerState("INFO", NOW_MS)


def test_placeholder_namespace_becomes_a_logger_and_adopts_children(tree: Hierarchy
                                                                     ) -> None:
    child = tree.get("pkg.mod")

    assert tree.loggers.set_level("pkg", "DEBUG") == ["pkg", "pkg.mod"]
    assert child.parent is tree.get("pkg")


def test_last_modified_only_moves_for_changed_loggers(tree: Hierarchy) -> None:
    tree.loggers.set_level("a", "DEBUG")
    tree.get("a.b")
    tree.now = NOW_S + 60

    assert tree.loggers.set_level("a", "DEBUG") == []  # nothing to change
    assert tree.loggers.level("a").last_modified == NOW_MS
    assert tree.loggers.set_level("a", "WARN") == ["a", "a.b"]
    assert tree.loggers.level("a") == LoggerState("WARN", NOW_MS + 60_000)
    assert tree.loggers.all_levels()["a.b"] == LoggerState("WARN", NOW_MS + 60_000)


def test_root_sets_every_logger(tree: Hierarchy) -> None:
    tree.get("x").setLevel(logging.ERROR)
    tree.get("y.z")

    changed = tree.loggers.set_level("ROOT", "WARN")

    assert changed == ["root", "x", "y.z"]
    assert tree.root.level == logging.WARNING
    assert tree.get("x").level == logging.WARNING
    assert tree.loggers.level("root") == LoggerState("WARN", NOW_MS)


def test_invalid_level_changes_nothing(tree: Hierarchy) -> None:
    with pytest.raises(NotFoundError, match="invalid log level 'VERBOSE'."):
        tree.loggers.set_level("new.logger", "VERBOSE")
    assert "new.logger" not in tree.manager.loggerDict
    assert tree.loggers.all_levels() == {"root": LoggerState("INFO", None)}


def test_debug_set_through_the_api_lets_debug_records_through(tree: Hierarchy) -> None:
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    tree.root.addHandler(handler)
    logger = tree.get("worker.runtime.source_task")

    logger.debug("hidden")
    tree.loggers.set_level("worker.runtime", "DEBUG")
    logger.debug("shown")
    logger.log(TRACE, "still hidden")
    tree.loggers.set_level("worker", "TRACE")
    logger.log(TRACE, "traced")
    tree.loggers.set_level("worker", "OFF")
    logger.critical("silenced")

    assert [(r.getMessage(), r.levelname) for r in records] == [
        ("shown", "DEBUG"), ("traced", "TRACE")]


# --- the process-wide hierarchy -----------------------------------------------------------

@pytest.fixture
def real_logger() -> Iterator[logging.Logger]:
    logger = logging.getLogger("tests.unit.loggers.probe")
    saved = logger.level
    yield logger
    logger.setLevel(saved)


def test_default_manager_is_pythons_own(real_logger: logging.Logger) -> None:
    loggers = Loggers()

    assert loggers.set_level(real_logger.name, "ERROR") == [real_logger.name]
    assert real_logger.level == logging.ERROR
    assert loggers.level(real_logger.name).level == "ERROR"
    # A second Loggers (another worker in this process) has its own timestamps.
    assert Loggers().level(real_logger.name).last_modified is None
