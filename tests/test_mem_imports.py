"""The modules of ``meta_eval.statistics.maxent`` import one another one way: no cycle, counting imports inside functions too."""

from __future__ import annotations

import ast
from pathlib import Path

import meta_eval.statistics.maxent

PACKAGE = "meta_eval.statistics.maxent"
FOLDER = Path(meta_eval.statistics.maxent.__file__).parent


def _imports(path: Path) -> set[str]:
    """The modules of the package that a file imports anywhere in it (module level or inside a function)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == PACKAGE:  # from meta_eval.statistics.maxent import solver
                found |= {f"{PACKAGE}.{alias.name}" for alias in node.names}
            elif node.module.startswith(PACKAGE + "."):
                found.add(node.module)
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.startswith(PACKAGE + ".")}
    return found


def _graph() -> dict[str, set[str]]:
    modules = {f"{PACKAGE}.{p.stem}": p for p in FOLDER.glob("*.py") if p.stem != "__init__"}
    return {name: _imports(path) & modules.keys() for name, path in modules.items()}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle of the graph as a list of modules, or None (depth-first search)."""
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(node):
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        state[node] = 2
        path.pop()
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_no_import_cycle_inside_mem():
    graph = _graph()
    assert len(graph) > 10 and graph[f"{PACKAGE}.solver"]  # the files were read
    cycle = _cycle(graph)
    assert cycle is None, " -> ".join(m.rpartition(".")[2] for m in cycle)


def test_the_cycle_finder_finds_a_cycle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None
