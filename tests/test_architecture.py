"""The package's shape, checked on its source: arrows point down the layers, and no module imports itself back.

Every import is read from the source (``ast``): at module top, inside functions and under ``TYPE_CHECKING`` alike,
so a cycle cannot hide inside a function. The layers, bottom up, are the package's folders (ARCHITECTURE.md):
a module may import its own layer and the layers below it, never one above. The package's ``__init__`` is for users
and imports nothing at import time; it is left out.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "meta_eval"

#: The layers, bottom up; folders on one line are siblings (neither imports the other).
LAYERS = [
    ("core",),
    ("inputs", "outputs"),
    ("model",),
    ("measures",),
    ("statistics",),
    ("rendering",),
    ("analyses",),
    ("orchestration",),
    ("cli",),
]
LEVEL = {folder: level for level, folders in enumerate(LAYERS) for folder in folders}


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in PACKAGE.rglob("*.py")}


def _imports(path: Path, name: str, known: set[str]) -> set[str]:
    """The package modules ``path`` imports (``from a import b`` counts as ``a.b`` when that is a module)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:  # meta_eval.a.b.function -> meta_eval.a.b
                target = target.rpartition(".")[0]
            if target.startswith("meta_eval.") and target != name:
                found.add(target)
    return found


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    return {name: _imports(path, name, known) for name, path in modules.items() if name != "meta_eval"}


def _layer(module: str) -> str:
    return module.split(".")[1]


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each a cycle of imports."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_every_folder_is_a_layer():
    folders = {p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert folders == set(LEVEL), "a folder of meta_eval/ that is not a layer (or a layer without its folder)"
    loose = sorted(p.name for p in PACKAGE.glob("*.py") if p.name != "__init__.py")
    assert not loose, f"modules outside the layers: {loose}"


def test_no_import_cycle():
    cycles = _cycles(_graph())
    assert not cycles, "\n".join(" <-> ".join(c) for c in cycles)


def test_arrows_point_down_the_layers():
    upward = sorted(f"{a} -> {b}" for a, targets in _graph().items() for b in targets
                    if LEVEL[_layer(b)] > LEVEL[_layer(a)]
                    or (LEVEL[_layer(b)] == LEVEL[_layer(a)] and _layer(b) != _layer(a)))
    assert not upward, "imports of a layer above (or of a sibling):\n" + "\n".join(upward)


def test_only_the_interface_imports_the_users_package():
    """``meta_eval/__init__.py`` is for users (it re-exports every layer): a module below the command line that
    imports it would import every layer, above its own too."""
    importers = []
    for name, path in _modules().items():
        if name == "meta_eval" or _layer(name) == "cli":
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (isinstance(node, ast.Import) and any(a.name == "meta_eval" for a in node.names)) or \
                    (isinstance(node, ast.ImportFrom) and node.module == "meta_eval" and not node.level):
                importers.append(f"{name}:{node.lineno}")
    assert not importers, "imports of the package root: " + ", ".join(importers)


@pytest.mark.parametrize("graph, expected", [
    ({"a": {"b"}, "b": {"a"}, "c": set()}, [["a", "b"]]),
    ({"a": {"b"}, "b": {"c"}, "c": set()}, []),
])
def test_the_cycle_finder_finds_cycles(graph, expected):
    assert _cycles(graph) == expected


def test_the_import_reader_sees_imports_inside_functions(tmp_path):
    source = tmp_path / "m.py"
    source.write_text("def f():\n    from meta_eval.core import errors\n    import meta_eval.model.rankings\n")
    known = {"meta_eval.core", "meta_eval.core.errors", "meta_eval.model", "meta_eval.model.rankings"}
    assert _imports(source, "meta_eval.x", known) == {"meta_eval.core.errors", "meta_eval.model.rankings"}
