"""No import circle among the project's modules, type-only imports (under TYPE_CHECKING) and imports
inside functions included: a circle hides which module depends on which, and a lazy import that
dodges one at run time is still one.

The graph is read from the sources (every `import` and `from ... import` anywhere in a module), over
the project's packages; an edge goes to the module imported, or to the package when the name is not
a module of it."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("coordinator", "state", "streaming", "gateway", "client", "deploy", "bench")


def project_modules(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES) -> dict[str, Path]:
    mods = {}
    for package in packages:
        for path in (root / package).rglob("*.py"):
            parts = path.relative_to(root).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            mods[name] = path
    return mods


def import_graph(mods: dict[str, Path]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for mod, path in mods.items():
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                deps.update(a.name for a in node.names if a.name in mods)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package
                    for _ in range(node.level - 1):
                        base = base.rpartition(".")[0]
                    target = f"{base}.{node.module}" if node.module else base
                else:
                    target = node.module or ""
                for a in node.names:
                    if f"{target}.{a.name}" in mods:
                        deps.add(f"{target}.{a.name}")
                    elif target in mods:
                        deps.add(target)
        graph[mod] = deps - {mod}
    return graph


def circles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(frozenset(component))
    return found


def test_no_import_circle():
    assert circles(import_graph(project_modules())) == []


def test_the_check_finds_a_circle_through_a_type_only_and_a_lazy_import(tmp_path):
    sources = {
        "__init__.py": "",
        "a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .b import B\n",
        "b.py": "def f():\n    from . import c\n",
        "c.py": "from pkg.a import x\n",
        "d.py": "import pkg.a\n",
    }
    (tmp_path / "pkg").mkdir()
    for name, text in sources.items():
        (tmp_path / "pkg" / name).write_text(text)
    graph = import_graph(project_modules(tmp_path, ("pkg",)))
    assert circles(graph) == [frozenset({"pkg.a", "pkg.b", "pkg.c"})]
