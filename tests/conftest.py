"""Shared test helpers: the test layers, the repository root, a snakemake runner with a hard
timeout, a function run in a fresh process, and every test's CPU affinity put back after it.
The session's torch inductor cache starts empty, as a cell's process 0 does (a persistent one
would serve the tests' compilations from an earlier session's, which record no eager ops).

Every test belongs to exactly one layer, a marker (`pytest -m fast`, `-m torch`, ...; the
commands: README.md, tests/run_layers.py): the nearest explicit layer marker (function, class,
module), else `e2e` where it reads the smoke sweep (`smoke_run`), else, where it is marked
`per_framework`, the layer of its `framework` parameter, else `fast`. A fast-layer test that
imports a framework, itself or in a subprocess (tests/import_probe), fails naming it: the fast
layer never pays a framework's import or compile.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import yaml

from layers import FRAMEWORK_IMPORTS, FRAMEWORK_LAYERS, LAYERS

pytest_plugins = ["pytester"]  # tests/test_layers.py runs pytest on small test files
REPO = Path(__file__).resolve().parents[1]

SNAKEMAKE = [sys.executable, "-m", "snakemake"]
os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="fwbench-tests-inductor-")
atexit.register(shutil.rmtree, os.environ["TORCHINDUCTOR_CACHE_DIR"], True)


PER_FRAMEWORK = "per_framework"
SMOKE_MARK, QUIET = "smoke", "quiet"


def pytest_configure(config: pytest.Config) -> None:
    for layer, what in LAYERS.items():
        config.addinivalue_line("markers", f"{layer}: {what}")
    config.addinivalue_line(
        "markers", f"{PER_FRAMEWORK}: each case goes to the layer of its `framework` parameter"
    )
    config.addinivalue_line("markers", "slurm: the e2e tests through a local SLURM cluster")
    config.addinivalue_line("markers", f"{SMOKE_MARK}: reads the smoke sweep (set where it does)")
    config.addinivalue_line(
        "markers", f"{QUIET}: holds this machine against its quiet state: nothing may run beside it"
    )


def layer_of(item: pytest.Item) -> str:
    """The one layer a test belongs to (the module docstring says the rule)."""
    for marker in item.iter_markers():  # nearest first
        if marker.name in LAYERS:
            return marker.name
    if "smoke_run" in getattr(item, "fixturenames", ()):
        return "e2e"
    callspec = getattr(item, "callspec", None)
    framework = callspec.params.get("framework") if callspec else None
    per_framework = any(marker.name == PER_FRAMEWORK for marker in item.iter_markers())
    return framework if per_framework and framework in FRAMEWORK_LAYERS else "fast"


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Each test gets its layer's marker, and `smoke` where it reads the smoke sweep, before
    `-m` selects (tryfirst)."""
    for item in items:
        marked = {marker.name for marker in item.iter_markers() if marker.name in LAYERS}
        if len(marked) > 1:
            raise pytest.UsageError(f"{item.nodeid} carries the layers {sorted(marked)}: one")
        layer = layer_of(item)
        if item.get_closest_marker(layer) is None:
            item.add_marker(layer)
        if "smoke_run" in getattr(item, "fixturenames", ()):
            item.add_marker(SMOKE_MARK)


def frameworks_imported() -> set[str]:
    return {owner for name, owner in FRAMEWORK_IMPORTS.items() if name in sys.modules}


_BEFORE_COLLECTING: dict[str, set[str]] = {}
_IMPORTED_BY_MODULE: dict[str, set[str]] = {}


def pytest_collectstart(collector: pytest.Collector) -> None:
    if isinstance(collector, pytest.Module):
        _BEFORE_COLLECTING[collector.nodeid] = frameworks_imported()


def pytest_collectreport(report: pytest.CollectReport) -> None:
    if report.nodeid in _BEFORE_COLLECTING:
        new = frameworks_imported() - _BEFORE_COLLECTING.pop(report.nodeid)
        if new:
            _IMPORTED_BY_MODULE[report.nodeid] = new


class _NoFrameworkHere:
    """A meta path finder that refuses every framework's import: installed in a session that
    runs fast-layer tests alone, so that each fast test that would import one fails, not only
    the first (a module imported once is not looked for again)."""

    def find_spec(self, name, path=None, target=None):
        if name in FRAMEWORK_IMPORTS:
            raise ImportError(
                f"{name}: a fast-layer test imported {FRAMEWORK_IMPORTS[name]}; mark it with "
                "that layer (tests/conftest.py)"
            )
        return None


def pytest_collection_finish(session: pytest.Session) -> None:
    """Collecting imports no framework, so that no layer pays for another's imports; in a
    session of fast-layer tests alone, no framework can be imported at all."""
    if _IMPORTED_BY_MODULE:
        raise pytest.UsageError(
            "importing these test modules imported a framework (import it inside the test): "
            + ", ".join(f"{module}: {sorted(new)}" for module, new in _IMPORTED_BY_MODULE.items())
        )
    if session.items and all(layer_of(item) == "fast" for item in session.items):
        sys.meta_path.insert(0, _NoFrameworkHere())


IMPORT_PROBE = Path(__file__).parent / "import_probe"  # its sitecustomize notes imports


@pytest.fixture(autouse=True)
def _fast_layer_imports_no_framework(request: pytest.FixtureRequest, monkeypatch, tmp_path_factory):
    """A fast-layer test that imports a framework, in this process or in any Python process it
    starts (tests/import_probe), fails naming it and the layer to move to."""
    if layer_of(request.node) != "fast":
        yield
        return
    log = tmp_path_factory.mktemp("imports") / "frameworks.log"
    monkeypatch.setenv("FWBENCH_FRAMEWORK_IMPORT_LOG", str(log))
    paths = [str(IMPORT_PROBE), *filter(None, [os.environ.get("PYTHONPATH")])]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(paths))
    before = frameworks_imported()
    yield
    imported = frameworks_imported() - before
    lines = log.read_text().splitlines() if log.exists() else []
    started = {line.split("\t")[0]: line.split("\t")[1] for line in lines}
    assert not imported, f"a fast-layer test imported {sorted(imported)}: mark it with that layer"
    assert not started, f"a fast-layer test's subprocess imported a framework: {started}"


@pytest.fixture(autouse=True)
def _affinity_put_back():
    """A test that sets a process up in-process (fwbench.host.threads pins it to the timed
    cores) would leave the rest of the session on one core."""
    saved = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    yield
    if saved is not None:
        os.sched_setaffinity(0, saved)


def in_fresh_process(module: str, function: str, *args: object) -> None:
    """`module.function(*args)` in a fresh Python process, as a workflow job runs (a framework
    takes its threads once per process); fails the test with the process's stderr tail."""
    script = (
        f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); "
        f"from {module} import {function}; {function}(*{args!r})"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]


def snakemake(
    *args: str, cwd: Path = REPO, timeout: float = 600, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    """Run snakemake on this repository's Snakefile; never hangs past `timeout`."""
    return subprocess.run(
        [*SNAKEMAKE, "--snakefile", str(REPO / "Snakefile"), "--directory", str(cwd), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """A scratch working directory for a workflow run (results/ lands here)."""
    return tmp_path


@pytest.fixture(scope="session")
def synthetic_sweep(tmp_path_factory):
    """The synthetic sweep (tests/synthetic.py: cells → aggregate → stats), built once per
    session; modules take a copy of it (`synthetic.copy_of`)."""
    from synthetic import synthetic_results

    return synthetic_results(tmp_path_factory.mktemp("synthetic-sweep"))


SMOKE = str(REPO / "config/test.yaml")
FAILING_CELL = "jax/jit/lstm"
# The smoke sweep's bfloat16 cells that fail with ONNX Runtime's own error: its CPU provider has
# no bf16 Gemm/MatMul kernel (torch's export) and refuses tf2onnx's graph, which mixes float16
# and bfloat16. A runtime version that gains the kernels makes the tests that name these fail.
NO_BF16_KERNEL = {("torch", "onnxrt", "mlp"), ("tensorflow", "onnxrt", "mlp")}
ORT_ERROR = "ONNXRuntimeError"


@pytest.fixture(scope="session")
def smoke_run(tmp_path_factory) -> Path:
    """The smoke sweep with --cores 8 on this 2-core machine and one cell made to fail."""
    workdir = tmp_path_factory.mktemp("smoke")
    override = workdir / "override.yaml"
    override.write_text(
        yaml.safe_dump(
            {"bench": {"inject_failure": [FAILING_CELL]}, "timing_lock": str(workdir / "lock")}
        )
    )
    result = snakemake(
        "--cores", "8", "--configfile", SMOKE, str(override), cwd=workdir, timeout=1500
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return workdir


def smoke_configs(workdir: Path) -> list[str]:
    """The config files the smoke run used: plans against them show only real changes."""
    return [SMOKE, str(workdir / "override.yaml")]


@pytest.fixture
def smoke_copy(smoke_run: Path, tmp_path: Path) -> Path:
    """A private copy of the finished smoke sweep (mtimes kept) for tests that change it."""
    copy = tmp_path / "smoke"
    shutil.copytree(smoke_run, copy, symlinks=True)
    return copy
