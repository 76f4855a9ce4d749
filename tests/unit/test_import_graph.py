"""The packages' import graph: no import cycle of any length (every import counts:
module-level, inside functions and under ``TYPE_CHECKING``), and the worker's layers that
must not reach the built-in plugins do not (docs/architecture.md §3)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("worker", "airflow_provider", "spark_kafka_source", "dags")


def _modules() -> dict[str, Path]:
    modules = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            modules[name.removesuffix(".__init__")] = path
    return modules


def _imported(name: str, path: Path) -> Iterator[tuple[str, list[str]]]:
    """Each import of module ``name``, absolute: (module, the names taken from it)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from ((alias.name, []) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{parent}.{base}" if base else parent
            yield base, [alias.name for alias in node.names]


def _imports(name: str, path: Path, modules: dict[str, Path]) -> Iterator[str]:
    """The repository modules ``name`` imports; ``from pkg import mod`` counts as ``mod``."""
    for base, names in _imported(name, path):
        subs = [f"{base}.{taken}" for taken in names]
        yield from (sub for sub in subs if sub in modules)
        if base in modules and not all(sub in modules for sub in subs):
            yield base


@cache
def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: set(_imports(name, path, modules)) - {name}
            for name, path in modules.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (iterative Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return found


def test_no_import_cycles() -> None:
    graph = _graph()
    assert len(graph) > 250, "the packages were not found"
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_only_the_plugin_machinery_imports_the_builtins() -> None:
    """The built-ins are leaves: the runtime, herder, REST, storage, clients and the API
    find them through the registry, never by import."""
    graph = _graph()
    offenders = sorted(f"{module} -> {target}" for module, targets in graph.items()
                       for target in targets
                       if target.startswith("worker.builtin")
                       and module.startswith("worker.")
                       and not module.startswith(("worker.builtin", "worker.plugins")))
    assert offenders == []


def test_the_provider_and_the_spark_source_never_import_the_worker() -> None:
    graph = _graph()
    offenders = sorted(f"{module} -> {target}" for module, targets in graph.items()
                       for target in targets
                       if module.startswith(("airflow_provider", "spark_kafka_source"))
                       and target.startswith("worker"))
    assert offenders == []
    assert not any(target.startswith("airflow_provider") for module, targets in graph.items()
                   if module.startswith("spark_kafka_source") for target in targets)


def test_the_worker_layers_do_not_reach_across() -> None:
    """rest/ calls the herder, never storage, the runtime or Kafka's client; the plugin API
    imports nothing of the worker but util/ (docs/architecture.md §3)."""
    offenders = []
    for name, path in _modules().items():
        for base, _ in _imported(name, path):
            if name.startswith("worker.rest") and base.startswith(
                    ("worker.storage", "worker.runtime", "confluent_kafka")):
                offenders.append(f"{name} -> {base}")
            if name.startswith("worker.api") and base.startswith("worker.") \
                    and not base.startswith(("worker.api", "worker.util")):
                offenders.append(f"{name} -> {base}")
    assert offenders == []
