"""The registry of framework packages: their modes, distributions and environment.

Each framework lives in its own package `frameworks/<framework>/` with the same modules in
each (`infer.py`, `models.py`, `train.py`, `hardware.py`; the interfaces they provide are in
`frameworks.protocols`), and only that package imports it. This module imports no framework:
it names the packages and loads the module a job needs, so a JAX job never imports torch or
tensorflow.
"""

from __future__ import annotations

import importlib
import re
from types import ModuleType

MODES: dict[str, tuple[str, ...]] = {
    "torch": ("eager", "compiled"),
    "jax": ("eager", "jit"),
    "tensorflow": ("eager", "function", "xla"),
}

# The modules every framework package has (frameworks.protocols says what each provides).
PARTS = ("infer", "models", "train", "hardware")

# The distribution whose installed version names a framework's results, then the others whose
# versions are recorded with them (and rerun its cells when they change).
DISTRIBUTIONS: dict[str, tuple[tuple[str, ...], ...]] = {
    "torch": (("torch",), ()),
    "jax": (("jax",), ("jaxlib",)),
    "tensorflow": (("tensorflow-cpu", "tensorflow"), ("keras",)),
}


# torch's compiled variants: `compiled_<name>`, each with its own torch.compile options
# (config `torch_compile`), so one sweep can hold several.
COMPILED_VARIANT = re.compile(r"compiled_[a-z0-9_]+")
TORCH_COMPILE_OPTIONS = ("mode", "fullgraph", "dynamic", "freezing")


def is_compiled_variant(framework: str, mode: str) -> bool:
    return framework == "torch" and COMPILED_VARIANT.fullmatch(mode) is not None


def check_framework_mode(framework: str, mode: str) -> None:
    if framework not in MODES:
        raise ValueError(f"unknown framework {framework!r}; known: {', '.join(MODES)}")
    if mode not in MODES[framework] and not is_compiled_variant(framework, mode):
        known = ", ".join(MODES[framework])
        raise ValueError(f"mode {mode!r} does not exist for {framework}; its modes: {known}")


def refuse_compile_options(framework: str, options: dict | None) -> None:
    """For adapters whose modes take no compiler options: raise naming any given."""
    if options:
        raise ValueError(f"{framework} modes take no compile options, got {sorted(options)}")


def check_threads(threads: int) -> None:
    """A thread count is a positive integer (not a bool); raise naming anything else."""
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ValueError(f"threads must be a positive integer, got {threads!r}")


def load(framework: str, part: str = "infer") -> ModuleType:
    """Import `fwbench.frameworks.<framework>.<part>` (this imports the framework itself)."""
    if framework not in MODES:
        raise ValueError(f"unknown framework {framework!r}; known: {', '.join(MODES)}")
    if part not in PARTS:
        raise ValueError(f"unknown part {part!r} of a framework package; known: {', '.join(PARTS)}")
    return importlib.import_module(f"fwbench.frameworks.{framework}.{part}")


def pre_import_env(framework: str, device: str) -> dict[str, str]:
    """Environment a framework must see before its import for `device` (set by the job)."""
    env: dict[str, str] = {}
    if framework == "jax":
        env["JAX_PLATFORMS"] = "cuda" if device == "cuda" else "cpu"
        env["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"
    elif framework == "tensorflow":
        env["TF_CPP_MIN_LOG_LEVEL"] = "2"
        env["TF_FORCE_GPU_ALLOW_GROWTH"] = "true"
        if device == "cpu":
            env["CUDA_VISIBLE_DEVICES"] = ""
    return env
