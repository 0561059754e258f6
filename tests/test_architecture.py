"""The shape of the code, checked: imports point one way, kgen/ is built of wings with no circle between its
modules (imports inside functions included), and an import inside a function says which optional dependency
it waits for. These tests read the source (ast), so they see lazy imports that running the code may not."""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("kgen", "fitness", "lattice")
# kgen's wings, from the top: a module may import its own wing and the wings of a lower rank only.
WING_RANK = {"cli": 6, "run": 5, "report": 4, "check": 3, "mondrian": 3, "datasets": 3, "runners": 2, "io": 1}
# modules of kgen/ that belong to no wing: the package's face, its entry point and the facts every wing reads
ROOT_MODULES = {"kgen": 7, "kgen.__main__": 7, "kgen.status": 0, "kgen.version": 0}


def module_name(path: Path) -> str:
    name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
    return name.removesuffix(".__init__")


def modules() -> dict[str, Path]:
    return {module_name(p): p for package in PACKAGES for p in sorted((ROOT / package).rglob("*.py"))}


def type_checking_nodes(tree: ast.AST) -> set[int]:
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            inside.update(id(child) for child in ast.walk(node))
    return inside


def type_checking_import(node: ast.Import | ast.ImportFrom, known: dict[str, Path]) -> Iterator[tuple[str, int, bool]]:
    """An import under `if TYPE_CHECKING:` (at module level: never lazy, but an arrow all the same)."""
    if isinstance(node, ast.ImportFrom) and node.module and not node.level:
        for alias in node.names:
            full = f"{node.module}.{alias.name}"
            yield (full if full in known else node.module), node.lineno, False
    elif isinstance(node, ast.Import):
        for alias in node.names:
            yield alias.name, node.lineno, False


def imports(path: Path, known: dict[str, Path]) -> Iterator[tuple[str, int, bool]]:
    """(imported module, line, inside a function) for every import of `path`, TYPE_CHECKING blocks included
    (a type is an arrow too); `from a import b` counts as importing `a.b` when that is a module, else `a`."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    checking = type_checking_nodes(tree)
    for node in ast.walk(tree):
        if id(node) in checking and isinstance(node, (ast.Import, ast.ImportFrom)):
            yield from type_checking_import(node, known)
            continue
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                yield (full if full in known else node.module), node.lineno, node.col_offset > 0
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno, node.col_offset > 0
        elif (isinstance(node, ast.Call) and ast.unparse(node.func).endswith("import_module") and node.args
              and isinstance(node.args[0], ast.Constant)):
            yield str(node.args[0].value), node.lineno, True


def graph() -> dict[str, set[str]]:
    """module -> the modules of our packages it imports (a package's __init__ counted when a submodule is)."""
    known = modules()
    edges: dict[str, set[str]] = {}
    for name, path in known.items():
        targets = set()
        for target, _, _ in imports(path, known):
            parts = target.split(".")
            for i in range(1, len(parts) + 1):
                prefix = ".".join(parts[:i])
                if prefix in known and prefix != name and not name.startswith(prefix + "."):
                    targets.add(prefix)
        edges[name] = targets
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges[v]:
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
                found.append(sorted(component))

    sys.setrecursionlimit(max(10_000, sys.getrecursionlimit()))
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def rank(module: str) -> int | None:
    if module in ROOT_MODULES:
        return ROOT_MODULES[module]
    parts = module.split(".")
    return WING_RANK.get(parts[1]) if parts[0] == "kgen" and len(parts) > 1 else None


def test_no_import_circle_anywhere_lazy_imports_included() -> None:
    assert cycles(graph()) == []


def test_the_cycle_finder_sees_a_circle_through_a_lazy_import() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(edges) == [["a", "b", "c"]]


def test_every_kgen_module_lives_in_a_wing() -> None:
    loose = [m for m in modules() if m.startswith("kgen") and rank(m) is None]
    assert loose == []


def test_kgen_imports_point_down_its_wings() -> None:
    upward = [f"{m} -> {t}" for m, targets in graph().items() if m.startswith("kgen") for t in targets
              if t.startswith("kgen") and t != "kgen" and rank(t) >= rank(m) and t.split(".")[:2] != m.split(".")[:2]]
    assert upward == []


def test_layers_lattice_under_fitness_under_kgen() -> None:
    edges = graph()
    assert [f"{m} -> {t}" for m, ts in edges.items() if m.startswith("lattice") for t in ts
            if not t.startswith("lattice")] == []
    assert [f"{m} -> {t}" for m, ts in edges.items() if m.startswith("fitness") for t in ts
            if t.startswith("kgen")] == []


def test_the_independent_checkers_reach_nothing_of_fitness() -> None:
    edges = graph()
    for checker in [m for m in edges if m.startswith("kgen.check")]:
        seen, todo = set(), [checker]
        while todo:
            current = todo.pop()
            if current not in seen:
                seen.add(current)
                todo.extend(edges.get(current, ()))
        assert not [m for m in seen if m.startswith("fitness")], checker


def test_an_import_inside_a_function_names_its_optional_dependency() -> None:
    """Imports inside functions are for optional dependencies (pyarrow, Dask, pandas through the Mondrian
    engine, tomli) and say so in a comment on the line or the line above; everything else is imported at
    the top, where a reader (and the cycle test) sees it."""
    known = modules()
    silent = []
    for name, path in known.items():
        if not name.startswith("kgen"):
            continue
        lines = path.read_text(encoding="utf-8").splitlines()
        for _, line, lazy in imports(path, known):
            context = " ".join(lines[max(0, line - 2):line]).lower()
            if lazy and "optional" not in context:
                silent.append(f"{path.relative_to(ROOT)}:{line}")
    assert silent == []


@pytest.mark.parametrize("package", PACKAGES)
def test_no_function_is_longer_than_sixty_lines(package: str) -> None:
    long = []
    for path in sorted((ROOT / package).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1  # type: ignore[operator]
                if length > 60 and f"{path.relative_to(ROOT)}:{node.name}" not in LONG_FUNCTIONS_LEFT:
                    long.append(f"{path.relative_to(ROOT)}:{node.name} ({length} lines)")
    assert long == []


# Functions still over 60 lines, each to be split into named steps (docs/architecture.md); the list only
# shrinks: a new long function fails the test above. None is left.
LONG_FUNCTIONS_LEFT: set[str] = set()
