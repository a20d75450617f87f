"""The small models the adapter tests run, and what a fresh process sees of an adapter.

A helper module, not a test module: tests/test_adapter_contract.py (what every framework's
adapter does) and tests/test_<framework>_extras.py (what only one does) share it.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from fwbench import frameworks
from fwbench.frameworks.protocols import CompileInfo
from fwbench.model import reference
from fwbench.model.specs import build_spec
from fwbench.model.weights import Weights, make_input, make_weights

from layers import FRAMEWORK_IMPORTS, FRAMEWORK_LAYERS

FRAMEWORKS = tuple(frameworks.MODES)
TOLERANCE = 1e-4  # normwise relative error, float32 against the float64 reference
BATCH = 2
SMALL_DIMS: dict[str, dict[str, Any]] = {
    "mlp": {"input": 20, "hidden": [32]},
    "cnn": {"channels": 3, "height": 8, "width": 8, "conv_channels": [4, 8], "dense": [16]},
    "rnn": {"input": 8, "hidden": 16, "layers": 2, "seq_len": 5},
    "lstm": {"input": 8, "hidden": 16, "layers": 2, "seq_len": 5},
    "transformer": {"d_model": 16, "heads": 4, "ff": 32, "layers": 2, "seq_len": 6},
}
# The top-level modules of each framework (tests/layers.py names them once).
FRAMEWORK_MODULES = {
    framework: {module for module, owner in FRAMEWORK_IMPORTS.items() if owner == framework}
    for framework in FRAMEWORK_LAYERS
}


# What pytest asks of every module-level object while it collects (pytest 9.2); a LazyModule
# answers these without importing (tests/test_layers.py checks the list against pytest).
COLLECTION_PROBES = frozenset({"_mock_name", "__wrapped__", "__bases__", "__test__"})


class LazyModule(ModuleType):
    """A module imported at its first attribute read: a framework's test module names it at
    module level without importing it while pytest collects (no layer pays another's import).
    With `attribute`, the module that attribute of the imported one holds."""

    def __init__(self, name: str, attribute: str | None = None) -> None:
        super().__init__(name)
        self._attribute = attribute

    def __getattr__(self, name: str) -> Any:
        if name in COLLECTION_PROBES:
            raise AttributeError(name)
        module = importlib.import_module(self.__name__)
        return getattr(getattr(module, self._attribute) if self._attribute else module, name)


def lazy_import(name: str, attribute: str | None = None) -> ModuleType:
    """`name` (or its `attribute`), imported when first used; skips the calling test module
    where its framework is not installed (as pytest.importorskip, without importing it)."""
    parts = name.split(".")
    framework = parts[2] if parts[:2] == ["fwbench", "frameworks"] else parts[0]
    if importlib.util.find_spec(framework) is None:
        pytest.skip(f"{framework} is not installed", allow_module_level=True)
    return LazyModule(name, attribute)


def adapter(framework: str) -> ModuleType:
    """The framework's inference adapter; skips the calling test where it is not installed."""
    pytest.importorskip(framework)
    return frameworks.load(framework)


def small_runner(
    framework: str,
    arch: str,
    mode: str = "eager",
    weights: Weights | None = None,
    batch: int = BATCH,
) -> tuple[Any, np.ndarray]:
    """A runner of `arch` on SMALL_DIMS on the CPU (not called yet) and an input for it."""
    spec = build_spec(arch, SMALL_DIMS[arch])
    runner = build_runner(framework, spec, weights or make_weights(spec), mode, "cpu")
    return runner, make_input(spec, batch)


@dataclass(frozen=True)
class Run:
    runner: Any
    prepared: Any
    output: np.ndarray
    expected: np.ndarray  # the float64 reference output
    relative_error: float
    compile_info: CompileInfo  # read right after the second call


def exported(framework: str, spec: Any, weights: Weights, mode: str, device: str) -> str:
    """The artifact of an export mode, exported into a directory of its own (kept for the
    test session: the runner may map it)."""
    stem = os.path.join(tempfile.mkdtemp(prefix=f"fwbench-test-{framework}-{mode}-"), spec.name)
    return (
        frameworks.load(framework, frameworks.EXPORT_PART)
        .export(spec, weights, mode, device, stem)
        .file
    )


def mode_adapter(framework: str, mode: str) -> Any:
    """The adapter a mode's cells run: the framework's, or for a runtime mode the runtime's
    (on one thread, as a cell sets it)."""
    if frameworks.runtime_of(framework, mode) is None:
        return adapter(framework)
    pytest.importorskip(framework)  # its exporter writes the artifact
    loaded = frameworks.load_inference(framework, mode)
    loaded.set_threads(1)
    return loaded


def build_runner(framework: str, spec: Any, weights: Weights, mode: str, device: str) -> Any:
    """The mode's runner; an export mode's from its artifact, exported first."""
    if frameworks.is_export_mode(framework, mode):
        artifact = exported(framework, spec, weights, mode, device)
        return mode_adapter(framework, mode).build(spec, None, mode, device, artifact=artifact)
    return adapter(framework).build(spec, weights, mode, device)


def run(framework: str, arch: str, mode: str, dims: dict | None, device: str = "cpu") -> Run:
    """Build, call twice on batch 2 (the first call traces or compiles, the second is the
    steady state the benchmark times) and record what the runner says."""
    spec = build_spec(arch, dims)
    weights, x = make_weights(spec), make_input(spec, BATCH)
    runner = build_runner(framework, spec, weights, mode, device)
    prepared = runner.prepare(x)
    runner.sync(runner(prepared))
    output = runner(prepared)
    runner.sync(output)
    output = runner.to_numpy(output)
    expected = reference.forward(spec, weights, x)
    _, relative = reference.max_errors(output, expected)
    return Run(runner, prepared, output, expected, relative, runner.compile_info())


@functools.cache
def small_run(framework: str, arch: str, mode: str, device: str = "cpu") -> Run:
    """`run` on SMALL_DIMS, cached: each model is built and compiled once per test session."""
    return run(framework, arch, mode, SMALL_DIMS[arch], device)


_FRESH_PROCESS = """
import json, sys
from fwbench import frameworks
from fwbench.model.specs import build_spec
from fwbench.model.weights import make_input, make_weights

NAMES = ("torch", "jax", "jaxlib", "optax", "tensorflow", "keras")


def loaded():
    return sorted(name for name in NAMES if name in sys.modules)


framework = sys.argv[1]
report = {"before_import": loaded()}
adapter = frameworks.load(framework)
report["after_import"] = loaded()
report["sklearn_loaded_by_import"] = "sklearn" in sys.modules
if "jax" in sys.modules:
    from jax._src import xla_bridge

    report["backend_started_at_import"] = xla_bridge.backends_are_initialized()
report["threads"] = adapter.set_threads(1)
spec = build_spec("mlp", {"input": 8, "hidden": [8]})
runner = adapter.build(spec, make_weights(spec), "eager", "cpu")
runner.sync(runner(runner.prepare(make_input(spec, 2))))
report["after_run"] = loaded()
try:
    adapter.set_threads(2)
    report["late_set_threads"] = "accepted"
except RuntimeError as error:
    report["late_set_threads"] = str(error)
try:
    import jax  # noqa: F401

    report["jax_importable_afterwards"] = True
except ImportError as error:
    report["jax_importable_afterwards"] = repr(error)
try:
    import sklearn.datasets  # noqa: F401  (training loads its digits with it)

    report["sklearn_importable_afterwards"] = True
except ImportError as error:
    report["sklearn_importable_afterwards"] = repr(error)
print(json.dumps(report, default=str))
"""


@functools.cache
def fresh_process(framework: str) -> dict[str, Any]:
    """What a process that imports only this adapter sees, as a benchmark job does: the
    framework modules loaded before and after the import and after one eager call,
    set_threads(1) before the first op and set_threads(2) after it, whether the import loaded
    sklearn, and whether jax and sklearn can still be imported at the end."""
    pytest.importorskip(framework)
    env = os.environ | frameworks.pre_import_env(framework, "cpu") | {"OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        [sys.executable, "-c", _FRESH_PROCESS, framework],
        capture_output=True,
        text=True,
        env=env,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])
