"""The registry of framework packages: what differs per framework, as data, and the loader.

Each framework lives in its own package `frameworks/<framework>/` with the same modules in
each (`infer.py`, `models.py`, `train.py`, `hardware.py`; the interfaces they provide are in
`frameworks.protocols`), and only those modules import it. Each package's `__init__` holds its
FrameworkInfo (modes, distributions, pre-import environment, compile options, the precisions
each mode runs beside float32); this module
collects them and imports no framework, so a JAX job never imports torch or tensorflow. The
rest of fwbench asks these functions and never branches on a framework's name.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterable, Mapping
from types import ModuleType

from fwbench.frameworks.info import BFLOAT16 as BFLOAT16  # the precisions, re-exported
from fwbench.frameworks.info import FLOAT32, FrameworkInfo
from fwbench.frameworks.info import INT8 as INT8
from fwbench.frameworks.info import INT8_STATIC as INT8_STATIC
from fwbench.frameworks.info import PRECISIONS as PRECISIONS
from fwbench.frameworks.jax import INFO as JAX
from fwbench.frameworks.tensorflow import INFO as TENSORFLOW
from fwbench.frameworks.torch import INFO as TORCH
from fwbench.precisions import QUANTIZED

FRAMEWORKS: dict[str, FrameworkInfo] = {info.name: info for info in (TORCH, JAX, TENSORFLOW)}

MODES: dict[str, tuple[str, ...]] = {name: info.modes for name, info in FRAMEWORKS.items()}

# The modules every framework package has (frameworks.protocols says what each provides),
# and `export` in the packages that have export modes.
PARTS = ("infer", "models", "train", "hardware", "profiling")
EXPORT_PART = "export"


def _part_distributions(info: FrameworkInfo) -> dict[str, None]:
    """The distributions some of a framework's modes or precisions depend on, in order."""
    of_precisions = (ds for by in info.precision_distributions.values() for ds in by.values())
    every = (*info.mode_distributions.values(), *of_precisions)
    return dict.fromkeys(d for ds in every for d in ds)


# Per framework: (the distributions whose first installed one's version names its results,
# the others whose versions are recorded with them).
DISTRIBUTIONS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    name: (info.distributions, (*info.recorded, *_part_distributions(info)))
    for name, info in FRAMEWORKS.items()
}


def mode_versions(
    framework: str, mode: str, versions: dict[str, str], precision: str = FLOAT32
) -> dict[str, str]:
    """The part of a framework's recorded versions that a mode's cells and artifacts in
    `precision` depend on: all but the distributions only its other modes or precisions use
    (an ONNX Runtime upgrade reruns the onnxrt cells alone, a torchao upgrade torch's
    int8_static ones)."""
    info = framework_info(framework)
    own = {*info.mode_distributions.get(mode, ())}
    base = info.compile_modes[0] if is_compiled_variant(framework, mode) else mode
    own |= {*info.precision_distributions.get(base, {}).get(precision, ())}
    others = set(_part_distributions(info)) - own
    return {name: version for name, version in versions.items() if name not in others}


def runtime_of(framework: str, mode: str) -> str | None:
    """The deployment runtime package (fwbench.runtimes.<name>) a mode's cells run in; None
    for the modes the framework itself runs."""
    return framework_info(framework).runtime_modes.get(mode)


# The deployment runtimes with a part in the hardware stage (fwbench.runtimes.<runtime>_hardware,
# a frameworks.protocols.HardwareProbe on the CPU) and the GEMM dtypes it measures.
RUNTIME_GEMMS: dict[str, tuple[str, ...]] = {"onnxrt": ("int8",)}


def gemm_runtimes(modes: Mapping[str, Iterable[str]]) -> list[str]:
    """The runtimes that the configured modes (framework -> modes) run cells in and that
    measure a GEMM peak in the hardware stage, in RUNTIME_GEMMS's order."""
    used = {runtime_of(framework, mode) for framework, names in modes.items() for mode in names}
    return [runtime for runtime in RUNTIME_GEMMS if runtime in used]


def framework_info(framework: str) -> FrameworkInfo:
    """The FrameworkInfo of `framework`; raises naming it and the known ones."""
    if framework not in FRAMEWORKS:
        raise ValueError(f"unknown framework {framework!r}; known: {', '.join(FRAMEWORKS)}")
    return FRAMEWORKS[framework]


def is_compiled_variant(framework: str, mode: str) -> bool:
    """Whether `mode` is one of the framework's compiled variants (torch's `compiled_<name>`,
    each with its own compile options)."""
    pattern = FRAMEWORKS[framework].compiled_variant if framework in FRAMEWORKS else None
    return pattern is not None and re.fullmatch(pattern, mode) is not None


def check_framework_mode(framework: str, mode: str) -> None:
    if mode not in framework_info(framework).modes and not is_compiled_variant(framework, mode):
        known = ", ".join(MODES[framework])
        raise ValueError(f"mode {mode!r} does not exist for {framework}; its modes: {known}")


def mode_precisions(framework: str, mode: str) -> tuple[str, ...]:
    """The precisions `mode` runs: float32, then the others its FrameworkInfo names (a
    compiled variant's are its compiled mode's)."""
    check_framework_mode(framework, mode)
    record = FRAMEWORKS[framework]
    if is_compiled_variant(framework, mode):
        mode = record.compile_modes[0]
    return (FLOAT32, *record.precisions.get(mode, ()))


def first_quantization(framework: str, mode: str, among: Iterable[str] = QUANTIZED) -> str | None:
    """The quantization `mode`'s users pick first of those `among` names (the first its
    FrameworkInfo names: a mode lists its quantizations in that order), or None where it runs
    none of them."""
    chosen = set(among) & set(QUANTIZED)
    return next((p for p in mode_precisions(framework, mode) if p in chosen), None)


def check_precision(framework: str, mode: str, precision: str) -> str:
    """`precision`, if `mode` runs it; else raises naming it, the mode and the ones it runs."""
    known = mode_precisions(framework, mode)
    if precision not in known:
        raise ValueError(
            f"precision {precision!r} is not one of {framework}/{mode}'s: {', '.join(known)}"
        )
    return precision


def is_export_mode(framework: str, mode: str) -> bool:
    """Whether `mode`'s cells run an artifact the framework's export job wrote."""
    return framework in FRAMEWORKS and mode in FRAMEWORKS[framework].export_modes


def takes_compile_options(framework: str) -> bool:
    """Whether any mode of `framework` takes compiler options (config `<framework>_compile`)."""
    return bool(framework_info(framework).compile_options)


def compile_option_names(framework: str) -> tuple[str, ...]:
    """The compiler options the framework's compiled modes take; () where they take none."""
    return framework_info(framework).compile_options


def mode_takes_compile_options(framework: str, mode: str) -> bool:
    """Whether `mode` is a compiled mode that takes the framework's compile options."""
    record = framework_info(framework)
    return bool(record.compile_options) and (
        mode in record.compile_modes or is_compiled_variant(framework, mode)
    )


def refuse_compile_options(framework: str, options: dict | None) -> None:
    """For frameworks whose modes take no compiler options: raise naming any given."""
    if options:
        raise ValueError(f"{framework} modes take no compile options, got {sorted(options)}")


def check_compile_options(framework: str, mode: str, options: dict | None) -> dict:
    """The compile options of `mode`, checked: a mode that takes none refuses any, and an
    option the framework does not know is named with the known ones."""
    options = dict(options or {})
    if not takes_compile_options(framework):
        refuse_compile_options(framework, options)
        return options
    known = compile_option_names(framework)
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise ValueError(
            f"unknown {framework} compile options {unknown}; known: {', '.join(known)}"
        )
    if options and not mode_takes_compile_options(framework, mode):
        raise ValueError(f"{mode} takes no compile options, got {sorted(options)}")
    return options


def check_threads(threads: int) -> None:
    """A thread count is a positive integer (not a bool); raise naming anything else."""
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ValueError(f"threads must be a positive integer, got {threads!r}")


def stream_probes() -> tuple[str, ...]:
    """The frameworks whose hardware probe runs STREAM, the CUDA working-set sweep and names
    the GPU (a frameworks.protocols.StreamProbe)."""
    return tuple(name for name, record in FRAMEWORKS.items() if record.stream_probe)


def stream_probe(frameworks: Iterable[str]) -> str | None:
    """The first of `frameworks` whose hardware probe is a StreamProbe; None if none is."""
    return next((name for name in frameworks if name in stream_probes()), None)


def load(framework: str, part: str = "infer") -> ModuleType:
    """Import `fwbench.frameworks.<framework>.<part>` (this imports the framework itself)."""
    record = framework_info(framework)
    if part == EXPORT_PART and not record.export_modes:
        raise ValueError(f"{framework} has no export modes, so no {EXPORT_PART} part")
    if part not in (*PARTS, EXPORT_PART):
        raise ValueError(f"unknown part {part!r} of a framework package; known: {', '.join(PARTS)}")
    return importlib.import_module(f"fwbench.frameworks.{framework}.{part}")


def load_hardware(runner: str) -> ModuleType:
    """A framework's `hardware` part, or a runtime's (fwbench.runtimes.<runtime>_hardware)."""
    if runner in RUNTIME_GEMMS:
        return importlib.import_module(f"fwbench.runtimes.{runner}_hardware")
    return load(runner, "hardware")


def quantizer(framework: str, mode: str, precision: str) -> ModuleType | None:
    """The runtime module whose `quantize` makes an export mode's artifact in `precision`
    from the framework's float32 export (a QUANTIZED precision); None where the framework's
    own export writes that precision (a runtime module without `quantize`: LiteRT's
    quantization is the TFLite converter's, run while converting; a mode of no runtime: torch's
    aoti, quantized by PT2E before packaging)."""
    if precision not in QUANTIZED:
        return None
    check_precision(framework, mode, precision)
    runtime = runtime_of(framework, mode)
    if runtime is None:
        return None
    module = importlib.import_module(f"fwbench.runtimes.{runtime}")
    return module if hasattr(module, "quantize") else None


def load_inference(framework: str, mode: str) -> object:
    """The inference adapter (frameworks.protocols.InferenceAdapter) a mode's cells run: the
    framework's `infer` part, or for a runtime mode the runtime's adapter for that framework's
    artifacts (which imports the runtime and not the framework)."""
    check_framework_mode(framework, mode)
    runtime = runtime_of(framework, mode)
    if runtime is None:
        return load(framework)
    return importlib.import_module(f"fwbench.runtimes.{runtime}").adapter(framework)


def compile_cache_env(framework: str) -> tuple[str, ...]:
    """The environment variables naming a framework's on-disk compile caches."""
    return FRAMEWORKS[framework].compile_cache_env if framework in FRAMEWORKS else ()


def cache_seed_module(framework: str, mode: str) -> str:
    """The module that seeds the mode's empty compile caches with the framework's host probe
    ("": none)."""
    info = FRAMEWORKS.get(framework)
    if info is None:
        return ""
    base = "compiled" if is_compiled_variant(framework, mode) else mode
    return info.cache_seed_module if base in info.cache_seed_modes else ""


def pre_import_env(framework: str, device: str) -> dict[str, str]:
    """Environment a framework must see before its import for `device` (set by the job);
    nothing for a runner that is no framework package (numpy, the native kernels)."""
    if framework not in FRAMEWORKS:
        return {}
    per_device = FRAMEWORKS[framework].pre_import_env
    if device not in per_device:
        raise ValueError(f"unknown device {device!r}; known: {', '.join(per_device)}")
    return dict(per_device[device])
