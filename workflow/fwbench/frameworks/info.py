"""What differs per framework, as data: a FrameworkInfo record in each framework package's
`__init__.py`, readable without importing the framework."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

# The precisions a model computes in (fwbench.precisions, re-exported): a FrameworkInfo names,
# per mode, the others than float32 it runs. Inputs always arrive as float32 and outputs leave
# as float32; a runner casts in between.
from fwbench.precisions import BFLOAT16 as BFLOAT16
from fwbench.precisions import FLOAT32 as FLOAT32
from fwbench.precisions import INT8 as INT8
from fwbench.precisions import INT8_STATIC as INT8_STATIC
from fwbench.precisions import PRECISIONS as PRECISIONS


@dataclass(frozen=True)
class FrameworkInfo:
    """One framework as the rest of fwbench sees it before (or without) importing it."""

    name: str
    modes: tuple[str, ...]
    # The distributions that may provide the framework: the first installed one's version
    # names its results. `recorded`: others whose versions are recorded with them (and rerun
    # its cells when they change).
    distributions: tuple[str, ...]
    recorded: tuple[str, ...] = ()
    # Environment the framework must see before its import, per device ("cpu", "cuda").
    pre_import_env: Mapping[str, Mapping[str, str]] = field(
        default_factory=lambda: {"cpu": {}, "cuda": {}}
    )
    # The compiler options a compiled mode takes (config `<framework>_compile`); empty: the
    # framework's modes take none.
    compile_options: tuple[str, ...] = ()
    # The modes that take those options, and the pattern of further compiled variants
    # (`compiled_<name>`, each with its own options) or None where there are none.
    compile_modes: tuple[str, ...] = ()
    compiled_variant: str | None = None
    # Environment variables naming the framework's on-disk compile caches (a cell sets each to
    # a directory of its own); empty: it keeps none.
    compile_cache_env: tuple[str, ...] = ()
    # A module (run as `python -m`, with those variables set) that fills empty cache
    # directories with what the framework probes of the host, not of a model, the first
    # time it compiles into them (torch: inductor's CPU vector ISA, a C++ build per ISA), and
    # the modes that compile into them (a compiled variant: as its mode): their cold caches
    # start from that seed (fwbench.measure.compile_cache); empty: none.
    cache_seed_module: str = ""
    cache_seed_modes: tuple[str, ...] = ()
    # The modes whose cells run an exported artifact (the framework's `export` part writes it
    # in an export job; the cell loads and times it): the deployment paths.
    export_modes: tuple[str, ...] = ()
    # The export modes whose cells run in a deployment runtime rather than the framework
    # (mode -> the runtime package fwbench.runtimes.<runtime>; its cells never import the
    # framework), and per mode the distributions its artifacts and cells depend on besides
    # the framework's own: recorded with them, and only that mode's cells rerun when they
    # change.
    runtime_modes: Mapping[str, str] = field(default_factory=dict)
    mode_distributions: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # The same for one precision of a mode (mode -> precision -> distributions): what that
    # precision's cells and artifacts are made with (torch's int8_static in compiled and aoti:
    # torchao's quantizer), so that its upgrade reruns those alone.
    precision_distributions: Mapping[str, Mapping[str, tuple[str, ...]]] = field(
        default_factory=dict
    )
    # Per mode, the precisions beyond float32 it runs (each one of PRECISIONS); a compiled
    # variant takes its compiled mode's (the first of compile_modes). A mode's quantizations
    # (QUANTIZED) come in the order its users pick them: the first is the one the default
    # sweep runs (config precision.quantization: first; frameworks.first_quantization).
    precisions: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # Its hardware probe is a frameworks.protocols.StreamProbe: it runs STREAM and the
    # working-set sweep on CUDA, and names the GPU.
    stream_probe: bool = False
