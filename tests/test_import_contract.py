"""The import contract (issue 32): which package may import which, checked on the source text.

Every ``.py`` file of the first-party packages is parsed with ``ast``; every ``import`` and ``from ... import`` counts,
module level or inside a function, class or ``try``; relative imports are resolved against the importing module.
``from pkg import name`` is an import of the module ``pkg.name`` when that module exists, else of the name ``name``
of ``pkg``. The rules (``docs/architecture.md``, "Import rules"):

1. ``solvers`` imports nothing of ``app``, ``worker``, ``fairsolve``, ``bench``.
2. ``fairsolve`` imports nothing of ``app`` or ``worker``, and of ``solvers`` only public names (no module or name
   whose last part starts with an underscore).
3. ``app`` imports no ``worker`` (the Celery app it sends tasks through is ``app.core.celery``).
4. Only the HTTP layer (``app.main`` and ``app.api``) imports the HTTP layer; the test harness may drive it. Routers
   are not libraries: a route module is imported only where routers are mounted.
5. ``worker`` never imports the HTTP layer.
6. Nothing outside ``tests`` imports a ``tests`` module.
7. No import cycles between modules, imports inside functions included (``if TYPE_CHECKING:`` blocks excluded: they
   never run).
"""

from __future__ import annotations

import ast
import dataclasses
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("app", "worker", "solvers", "fairsolve", "bench", "tests", "migrations")
# Pre-refactor homes of the HTTP layer are named too, so the rule also judges a tree that still has them.
HTTP_LAYER = ("app.main", "app.api", "app.routers", "app.dashboard", "app.deps")
ROUTE_PACKAGES = ("app.api.routes", "app.routers")  # one module per resource, each with a `router`
ROUTE_MOUNTS = ("app.main", "app.api.main")  # where routers are mounted


@dataclasses.dataclass(frozen=True)
class Edge:
    importer: str  # dotted module name of the importing file
    target: str  # the first-party module imported (deepest existing module)
    name: str | None  # the name taken from `target` when it is not a module itself
    path: str  # importing file, relative to the repository
    line: int
    type_checking: bool  # inside an `if TYPE_CHECKING:` block

    def __str__(self) -> str:
        what = f"{self.target}.{self.name}" if self.name else self.target
        return f"{self.path}:{self.line} imports {what}"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _source_files() -> Iterator[Path]:
    for package in PACKAGES:
        base = ROOT / package
        if base.is_dir():
            yield from sorted(p for p in base.rglob("*.py") if "__pycache__" not in p.parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Every import node with whether it sits under ``if TYPE_CHECKING:`` (functions and classes included)."""

    def walk(node: ast.AST, guarded: bool) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import | ast.ImportFrom):
                yield child, guarded
            elif isinstance(child, ast.If) and _is_type_checking(child.test):
                for stmt in child.body:
                    yield from walk(ast.Module(body=[stmt], type_ignores=[]), True)
                for stmt in child.orelse:
                    yield from walk(ast.Module(body=[stmt], type_ignores=[]), guarded)
            else:
                yield from walk(child, guarded)

    yield from walk(tree, False)


UNRESOLVED: list[str] = []  # first-party imports naming a module that does not exist (a stale path after a move)


def _graph() -> tuple[set[str], list[Edge]]:
    files = list(_source_files())
    modules = {_module_name(p) for p in files}
    packages = {_module_name(p) for p in files if p.name == "__init__.py"}

    def deepest(dotted: str) -> str | None:
        parts = dotted.split(".")
        while parts:
            candidate = ".".join(parts)
            if candidate in modules:
                return candidate
            parts.pop()
        return None

    edges: list[Edge] = []
    for path in files:
        importer = _module_name(path)
        rel = str(path.relative_to(ROOT))
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=rel)
        for node, guarded in _imports(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] in PACKAGES and (target := deepest(alias.name)):
                        edges.append(Edge(importer, target, None, rel, node.lineno, guarded))
                        if target != alias.name:
                            UNRESOLVED.append(f"{rel}:{node.lineno} imports {alias.name}")
                continue
            if node.level:
                # `from . import x` in a package is relative to the package itself, in a module to its parent.
                base = importer.split(".") if importer in packages else importer.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            if source.split(".")[0] not in PACKAGES:
                continue
            if source not in modules:
                UNRESOLVED.append(f"{rel}:{node.lineno} imports from {source}")
            for alias in node.names:
                full = f"{source}.{alias.name}"
                if full in modules:
                    edges.append(Edge(importer, full, None, rel, node.lineno, guarded))
                elif target := deepest(source):
                    name = None if alias.name == "*" else alias.name
                    edges.append(Edge(importer, target, name, rel, node.lineno, guarded))
    return modules, edges


MODULES, EDGES = _graph()


def _in(module: str, *roots: str) -> bool:
    return any(module == r or module.startswith(r + ".") for r in roots)


def _check(rule: str, offenders: list[Edge]) -> None:
    if offenders:
        listed = sorted({str(e) for e in offenders})
        pytest.fail(f"{rule}: {len(listed)} offending import(s)\n  " + "\n  ".join(listed), pytrace=False)


def test_files_were_found():
    assert {"app.main", "worker.celery_app", "solvers", "fairsolve"} <= MODULES
    # A relative and a function-level import are seen (the parser would otherwise pass every rule vacuously).
    assert any(e.importer.startswith("solvers.") and e.target.startswith("solvers.") for e in EDGES)


def test_first_party_imports_name_existing_modules():
    # After a move, an import of the old path (also one inside a function, which no import-time test runs) is caught
    # here rather than when the code path first runs.
    if UNRESOLVED:
        pytest.fail(
            f"{len(UNRESOLVED)} import(s) of modules that do not exist:\n  " + "\n  ".join(UNRESOLVED), pytrace=False
        )


def test_solvers_import_no_service_code():
    bad = [e for e in EDGES if _in(e.importer, "solvers") and _in(e.target, "app", "worker", "fairsolve", "bench")]
    _check("solvers must import nothing of app, worker, fairsolve or bench", bad)


def test_fairsolve_imports_no_server_code():
    bad = [e for e in EDGES if _in(e.importer, "fairsolve") and _in(e.target, "app", "worker")]
    _check("fairsolve (the client) must import nothing of app or worker", bad)


def test_fairsolve_imports_only_public_solvers_names():
    def private(e: Edge) -> bool:
        parts = e.target.split(".") + ([e.name] if e.name else [])
        return any(p.startswith("_") and not p.startswith("__") for p in parts)

    bad = [e for e in EDGES if _in(e.importer, "fairsolve") and _in(e.target, "solvers") and private(e)]
    _check("fairsolve must import only public solvers names (no _private module or name)", bad)


def test_app_imports_no_worker():
    bad = [e for e in EDGES if _in(e.importer, "app") and _in(e.target, "worker")]
    _check("app must import nothing of worker (send tasks through the sender Celery app in app.core)", bad)


def test_only_the_http_layer_imports_the_http_layer():
    bad = [
        e
        for e in EDGES
        if _in(e.target, *HTTP_LAYER) and not _in(e.importer, *HTTP_LAYER, "tests") and not _in(e.importer, "worker")
    ]
    _check(
        f"only the HTTP layer ({', '.join(HTTP_LAYER)}) may import the HTTP layer; move the shared function to its "
        "concern module",
        bad,
    )


def test_routers_are_not_libraries():
    bad = [
        e
        for e in EDGES
        if any(_in(e.target, r) and e.target != r for r in ROUTE_PACKAGES)
        and not _in(e.importer, *ROUTE_MOUNTS, "tests")
        and e.importer not in ROUTE_PACKAGES  # the package itself may gather its routers
    ]
    _check(
        "a route module is imported only where routers are mounted (app.main, app.api.main); move what another "
        "module needs from it to its concern module",
        bad,
    )


def test_worker_imports_no_http_layer():
    bad = [e for e in EDGES if _in(e.importer, "worker") and _in(e.target, *HTTP_LAYER)]
    _check("worker must never import the HTTP layer", bad)


def test_nothing_outside_tests_imports_a_test_module():
    bad = [e for e in EDGES if _in(e.target, "tests") and not _in(e.importer, "tests")]
    _check("nothing outside tests/ may import a tests module (shared code goes elsewhere)", bad)


def _cycles(edges: list[Edge]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    graph: dict[str, set[str]] = {}
    for e in edges:
        if e.importer != e.target and not e.type_checking:
            graph.setdefault(e.importer, set()).add(e.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
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
                        components.append(sorted(component))
    return sorted(components)


def test_no_import_cycles():
    cycles = _cycles(EDGES)
    if not cycles:
        return
    lines = []
    for component in cycles:
        members = set(component)
        inner = sorted(str(e) for e in EDGES if e.importer in members and e.target in members and not e.type_checking)
        lines.append(f"cycle among {', '.join(component)}:\n    " + "\n    ".join(inner))
    pytest.fail(
        f"no import cycles, also inside functions: {len(cycles)} cycle(s)\n  " + "\n  ".join(lines), pytrace=False
    )


def test_cycle_finder_finds_a_cycle():
    # The cycle test could pass by a bug in the finder: a three-module ring and a tail must give one component.
    fake = [Edge(a, b, None, "x.py", 1, False) for a, b in [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")]]
    assert _cycles(fake) == [["a", "b", "c"]]
    guarded = [*fake[:2], dataclasses.replace(fake[2], type_checking=True)]
    assert _cycles(guarded) == []


def test_api_process_imports_no_torch():
    code = "import sys, app.main; bad = [m for m in ('torch', 'sklearn') if m in sys.modules]; print(bad)"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]", f"importing app.main loaded {out.stdout.strip()}"
