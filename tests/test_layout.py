"""The library's house rules, checked on the source: sizes, import direction, no cycles."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from fwbench.frameworks import RUNTIME_GEMMS

from conftest import REPO
from layers import FRAMEWORK_IMPORTS

LIBRARY = REPO / "workflow" / "fwbench"
MAX_FUNCTION_LINES = 60
# A deployment runtime's package is imported by its own module alone; an exporter by the
# export part of the framework it converts from.
RUNTIME_IMPORTS = {
    "onnxruntime": "fwbench.runtimes.onnxrt",
    "onnx": "fwbench.runtimes.onnxrt",
    "ai_edge_litert": "fwbench.runtimes.litert",
    "tf2onnx": "fwbench.frameworks.tensorflow.export",
    "onnxscript": "fwbench.frameworks.torch.export",
}
RUNTIME_HARDWARE = {f"fwbench.runtimes.{name}" for name in RUNTIME_GEMMS}


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
    packages = ("io", "model", "host", "memory", "measure", "hardware", "frameworks", "training")
    packages += ("tools", "__main__")
    for package in packages:
        assert f"fwbench.{package}" in MODULES
    assert {"analysis", "present"} <= {name.split(".")[1] for name in MODULES if "." in name}


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


def package_of(module: str) -> str:
    """The package a module belongs to: `fwbench.<package>` (a top-level module is its own)."""
    return ".".join(module.split(".")[:2])


# The commands (`python -m fwbench COMMAND`) and their entry point: the top layer, above present/.
COMMAND_PACKAGES = ("fwbench.tools", "fwbench.__main__")


def test_no_library_package_imports_the_commands_they_sit_on_top():
    for module, path in MODULES.items():
        if package_of(module) not in COMMAND_PACKAGES:
            found = {
                name for name in _library_imports(path) if package_of(name) in COMMAND_PACKAGES
            }
            assert not found, f"{module} imports {found}: only the entry point imports a command"


def package_graph(modules: dict[str, set[str]]) -> dict[str, set[str]]:
    """Which packages import which, from a module import graph (imports within one package
    dropped)."""
    graph: dict[str, set[str]] = {}
    for module, targets in modules.items():
        imported = {package_of(target) for target in targets} - {package_of(module)}
        graph.setdefault(package_of(module), set()).update(imported)
    return graph


def test_no_two_packages_import_each_other_even_through_others():
    modules = {name: _library_imports(path) for name, path in MODULES.items()}
    cycle = find_cycle(package_graph(modules))
    assert cycle is None, "package import cycle: " + " → ".join(cycle or [])


def test_the_package_graph_joins_modules_of_one_package_and_finds_a_package_cycle():
    modules = {
        "fwbench.a.x": {"fwbench.a.y", "fwbench.b.z"},
        "fwbench.a.y": set(),
        "fwbench.b.z": {"fwbench.c"},
        "fwbench.c": {"fwbench.a.y"},
    }
    graph = package_graph(modules)
    assert graph == {
        "fwbench.a": {"fwbench.b"},
        "fwbench.b": {"fwbench.c"},
        "fwbench.c": {"fwbench.a"},
    }
    assert find_cycle(graph) == ["fwbench.a", "fwbench.b", "fwbench.c", "fwbench.a"]
    assert find_cycle(package_graph(modules | {"fwbench.c": set()})) is None


def long_functions(source: str, limit: int = MAX_FUNCTION_LINES) -> list[tuple[str, int]]:
    """(name, lines) of every function or method in `source` longer than `limit` lines,
    from its `def` line to its last, docstring included."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            lines = node.end_lineno - node.lineno + 1
            if lines > limit:
                found.append((node.name, lines))
    return found


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_library_function_is_longer_than_60_lines(module):
    too_long = long_functions(MODULES[module].read_text())
    assert not too_long, f"{module}: functions over {MAX_FUNCTION_LINES} lines: {too_long}"


def test_the_function_length_check_counts_a_long_function_and_passes_a_short_one():
    body = "".join(f"        x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES))
    source = f"def short():\n    return 1\n\n\nclass C:\n    def long(self):\n{body}"
    assert long_functions(source) == [("long", MAX_FUNCTION_LINES + 1)]


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
def test_a_runtime_or_exporter_is_imported_only_in_its_own_module(module):
    for name in _imports(MODULES[module]):
        owner = RUNTIME_IMPORTS.get(name.split(".")[0])
        # a runtime's hardware part (frameworks.load_hardware) is its adapter too
        own = (owner, f"{owner}_hardware") if owner in RUNTIME_HARDWARE else (owner,)
        assert owner is None or module in own, f"{module} imports {name} (only {owner} may)"


def test_no_runtime_module_imports_a_framework():
    for module in (m for m in MODULES if m.startswith("fwbench.runtimes")):
        frameworks = {n for n in _imports(MODULES[module]) if n.split(".")[0] in FRAMEWORK_IMPORTS}
        assert not frameworks, f"{module} imports {frameworks}: a runtime cell runs without it"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_the_library_does_not_import_snakemake_or_find_files_by_its_own_location(module):
    source = MODULES[module].read_text()
    assert not any(name.split(".")[0] == "snakemake" for name in _imports(MODULES[module]))
    assert ".parents[" not in source, f"{module} finds files relative to itself"


ARCHITECTURE = REPO / "docs" / "architecture.md"


def derived_layers(graph: dict[str, set[str]]) -> dict[str, int]:
    """Each package's layer: 0 where it imports no other package, else one more than the
    highest layer it imports (the import graph has no cycle: the test above)."""
    layers: dict[str, int] = {}

    def layer(package: str) -> int:
        if package not in layers:
            below = graph.get(package, set()) - {package, "fwbench"}
            layers[package] = 1 + max(map(layer, below)) if below else 0
        return layers[package]

    for package in graph:
        layer(package)
    return layers


def documented_layers(text: str) -> dict[str, int]:
    """{package: layer} from the layer table of docs/architecture.md (rows `| n | `a`, `b/` |`)."""
    section = text.split("## The library, in layers", 1)[1].split("\n## ", 1)[0]
    layers = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) >= 2 and cells[0].isdigit():
            for name in re.findall(r"`([\w/]+)`", cells[1]):
                layers[f"fwbench.{name.rstrip('/')}"] = int(cells[0])
    return layers


def test_the_docs_layer_table_is_the_import_graphs_own_order():
    modules = {name: _library_imports(path) for name, path in MODULES.items()}
    derived = derived_layers(package_graph(modules))
    derived.pop("fwbench")  # the package's own __init__: a docstring
    documented = documented_layers(ARCHITECTURE.read_text())
    differ = {
        package: (documented.get(package), layer)
        for package, layer in derived.items()
        if documented.get(package) != layer
    }
    unknown = set(documented) - set(derived)
    assert not differ, f"docs/architecture.md's layer table (documented, derived): {differ}"
    assert not unknown, f"docs/architecture.md's layer table names no package: {unknown}"


def test_the_layers_are_derived_from_the_imports_and_read_from_a_table():
    graph = {
        "fwbench.a": set(),
        "fwbench.b": {"fwbench.a"},
        "fwbench.c": {"fwbench.a", "fwbench.b"},
    }
    assert derived_layers(graph) == {"fwbench.a": 0, "fwbench.b": 1, "fwbench.c": 2}
    table = "## The library, in layers\n| layer | packages |\n|---|---|\n"
    table += "| 0 | `a`, `b/` |\n| 2 | `c` |\n"
    assert documented_layers(table) == {"fwbench.a": 0, "fwbench.b": 0, "fwbench.c": 2}
