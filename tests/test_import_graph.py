"""No import circle in turbogelu/ or experiments/: a module may import another only if that one
does not, through any chain, import it back. Imports inside functions count too (a deferred
import that breaks a circle at run time still ties the two modules together).

A module's import of its own parent package is not an edge (Python runs the parent first in
any case); ``from package import name`` is an edge to the submodule when ``name`` is one."""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import ROOT

PACKAGES = ("turbogelu", "experiments")


def modules(root: Path, packages=PACKAGES) -> dict[str, Path]:
    found = {}
    for package in packages:
        for path in (root / package).rglob("*.py"):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _absolute(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def import_graph(root: Path, packages=PACKAGES) -> dict[str, set[str]]:
    """{module: the modules of ``packages`` it imports}."""
    mods = modules(root, packages)
    graph = {}
    for name, path in mods.items():
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = _absolute(node, name, path.name == "__init__.py")
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    targets.add(sub if sub in mods else base)
        graph[name] = {
            t for t in targets if t in mods and t != name and not name.startswith(t + ".")
        }
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm,
    iterative), each sorted."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
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
    return found


def test_no_import_circles():
    graph = import_graph(ROOT)
    assert len(graph) > 80  # the whole tree was read (89 modules when written)
    assert circles(graph) == []


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_a_circle_is_found_however_it_is_written(tmp_path):
    _write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "from . import b\n",
            "pkg/b.py": "def f():\n    from .sub.c import g\n",  # deferred: still an edge
            "pkg/sub/__init__.py": "from .. import d\n",
            "pkg/sub/c.py": "import pkg.a\n",
            "pkg/d.py": "from pkg import sub\n",  # d <-> pkg.sub through sub's __init__
            "pkg/e.py": "from pkg.a import thing\n",  # into the circle, not part of it
        },
    )
    graph = import_graph(tmp_path, ("pkg",))
    assert graph["pkg.b"] == {"pkg.sub.c"}
    assert graph["pkg.sub.c"] == {"pkg.a"}
    assert "pkg" not in graph["pkg.a"]  # a submodule's parent package is no edge
    assert sorted(circles(graph)) == [["pkg.a", "pkg.b", "pkg.sub.c"], ["pkg.d", "pkg.sub"]]


def test_no_circle_in_a_chain(tmp_path):
    _write(tmp_path, {"pkg/__init__.py": "from . import a\n", "pkg/a.py": "from . import b\n"})
    _write(tmp_path, {"pkg/b.py": "import os\n"})
    assert circles(import_graph(tmp_path, ("pkg",))) == []
