"""The library's house rules, checked on the source: sizes, import direction, no cycles."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from conftest import REPO

LIBRARY = REPO / "workflow" / "fwbench"
MAX_LINES = 300
FRAMEWORK_IMPORTS = {"torch": "torch", "jax": "jax", "jaxlib": "jax", "optax": "jax"}
FRAMEWORK_IMPORTS |= {"tensorflow": "tensorflow", "keras": "tensorflow"}


def _modules() -> dict[str, Path]:
    modules = {}
    for path in sorted(LIBRARY.rglob("*.py")):
        parts = list(path.relative_to(LIBRARY.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


MODULES = _modules()


def _imports(path: Path) -> set[str]:
    """Every module name an import statement in the file names, wherever it stands."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
            names |= {f"{node.module}.{alias.name}" for alias in node.names}
    return names


def _library_imports(path: Path) -> set[str]:
    return {name for name in _imports(path) if name in MODULES}


def test_the_module_list_is_not_empty_and_holds_the_packages():
    for package in ("io", "model", "measure", "hardware", "frameworks", "training"):
        assert f"fwbench.{package}" in MODULES
    assert {"analysis", "present"} <= {name.split(".")[1] for name in MODULES if "." in name}


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_module_is_longer_than_300_lines(module):
    lines = len(MODULES[module].read_text().splitlines())
    assert lines <= MAX_LINES, f"{module} has {lines} lines"


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of the graph (as a closed path), or None (depth-first search)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(name: str) -> list[str] | None:
        state[name] = 1
        path.append(name)
        for target in sorted(graph.get(name, ())):
            if state.get(target) == 1:
                return path[path.index(target) :] + [target]
            if target not in state and (cycle := visit(target)):
                return cycle
        path.pop()
        state[name] = 2
        return None

    for name in sorted(graph):
        if name not in state and (cycle := visit(name)):
            return cycle
    return None


def test_no_import_cycle_among_library_modules():
    graph = {name: _library_imports(path) - {name} for name, path in MODULES.items()}
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " → ".join(cycle or [])


def test_the_cycle_finder_finds_a_cycle_and_accepts_a_chain():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


@pytest.mark.parametrize("module", sorted(MODULES))
def test_a_framework_is_imported_only_in_its_own_adapter_package(module):
    for name in _imports(MODULES[module]):
        owner = FRAMEWORK_IMPORTS.get(name.split(".")[0])
        if owner:
            assert module.startswith(f"fwbench.frameworks.{owner}"), f"{module} imports {name}"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_the_library_does_not_import_snakemake_or_find_files_by_its_own_location(module):
    source = MODULES[module].read_text()
    assert not any(name.split(".")[0] == "snakemake" for name in _imports(MODULES[module]))
    assert ".parents[" not in source, f"{module} finds files relative to itself"
