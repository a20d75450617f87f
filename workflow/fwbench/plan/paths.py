"""Where every file of a sweep lives, relative to the working directory: one author per path.

A cell's path names its system, framework, framework version, mode, architecture, batch and
precision, so an upgrade of one framework writes new cells beside the old ones and reruns
nothing else. The precision is a tag after the batch (`b32-bf16`), empty for float32: the
paths of float32 results are those of the versions before precision was a dimension, so
upgrading to this one reruns none of them.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Iterable, Mapping
from typing import Any

from fwbench.io.dims import BFLOAT16, FLOAT32
from fwbench.io.hardware_file import PEAK_FILE
from fwbench.precisions import INT8, INT8_STATIC

HARDWARE = "results/hardware/{system}.json"
# A dtype's GEMM peak measured by a job of its own (io.hardware_file.OWN_JOB_DTYPES), where the
# hardware file's reader finds it (io.hardware_file.peak_file).
HARDWARE_PEAK = HARDWARE.removesuffix(".json") + "/" + PEAK_FILE
CELL = "results/cells/{system}/{framework}/{version}/{mode}/{arch}/b{batch}{precision_tag}"
# Process 0's on-disk compile caches, which the cell's later processes start from.
COMPILE_CACHE = (
    "results/compile_cache/{system}/{framework}/{version}/{mode}/{arch}/b{batch}{precision_tag}"
)
# What a framework probes of the host in an empty compile cache, done once per (system,
# framework version): every cold cache starts from a copy (fwbench.measure.compile_cache).
COMPILE_CACHE_SEED = "results/compile_cache/{system}/{framework}/{version}/_host_probe"
# An export mode's artifact and its manifest (fwbench.io.artifact_file): one per architecture,
# any batch; the artifact file lies beside the manifest, named by the architecture.
ARTIFACT = "results/artifacts/{system}/{framework}/{version}/{mode}/{arch}{precision_tag}"
ARTIFACT_LOG = "results/logs/export/{system}/{framework}/{version}/{mode}/{arch}{precision_tag}"
CELL_LOG = "results/logs/bench/{system}/{framework}/{version}/{mode}/{arch}/b{batch}{precision_tag}"
# One set of the rounds of one (arch, batch): every variant measured in alternation by fresh
# processes (fwbench.measure.rounds); one job measures an architecture's set at every rounds
# batch (a file per batch), its sets jobs of their own, spread over the sweep
# (fwbench.plan.sweep.Plan.order).
ROUNDS = "results/rounds/{system}/{arch}/b{batch}/set{set}.nc"
ROUNDS_LOG = "results/logs/rounds/{system}/{arch}/set{set}.log"  # one job: every rounds batch
CHECKS = "results/checks/{system}/{framework}/{version}/{name}.csv"
TRAIN_RUN = (
    "results/train/{system}/{framework}/{version}/{mode}/{model}-{dataset}{precision_tag}.nc"
)
TABLE = "results/summary/{system}/tables/{stem}.md"
COMPARE_TABLE = "results/compare/{system}/{framework}.csv"
STAGES_BEFORE_SYSTEMS = ("cells", "train", "checks")


# Each precision's tag in paths: float32 has none (its paths predate the dimension).
PRECISION_TAGS = {FLOAT32: "", BFLOAT16: "-bf16", INT8: "-int8", INT8_STATIC: "-int8-static"}


def precision_tag(precision: str) -> str:
    """The tag `precision` adds to a cell's, artifact's, cache's and log's path."""
    if precision not in PRECISION_TAGS:
        raise ValueError(f"unknown precision {precision!r}; known: {', '.join(PRECISION_TAGS)}")
    return PRECISION_TAGS[precision]


def precision_of_tag(tag: str) -> str:
    """The precision a path's tag names (the `precision_tag` wildcard)."""
    named = {t: p for p, t in PRECISION_TAGS.items()}
    if tag not in named:
        raise ValueError(f"unknown precision tag {tag!r}; known: {sorted(named)}")
    return named[tag]


def with_tag(item: Mapping[str, Any]) -> dict[str, Any]:
    """`item` (a cell, an export or a training run) with its precision's path tag, to format
    a path."""
    return {**item, "precision_tag": precision_tag(item.get("precision", FLOAT32))}


def process_suffix(process: int) -> str:
    """Process 0 is the cell file of a one-process sweep; process k adds `-p<k>`."""
    return f"-p{process}" if process else ""


def cell_file(cell: Mapping[str, Any], process: int = 0) -> str:
    return CELL.format(**with_tag(cell)) + f"{process_suffix(process)}.nc"


def artifact_manifest(export: Mapping[str, Any]) -> str:
    """The manifest of the artifact of `export` (system, framework, version, mode, arch)."""
    named = {key: export[key] for key in ARTIFACT_KEYS if key in export}
    return ARTIFACT.format(**with_tag(named)) + ".json"


ARTIFACT_KEYS = ("system", "framework", "version", "mode", "arch", "precision")


def checks_file(system: str, framework: str, version: str, name: str) -> str:
    return CHECKS.format(system=system, framework=framework, version=version, name=name)


def table_file(name: str, table_batch: int, system: str = "{system}") -> str:
    """A summary table of a system; the latency table is the one of the table batch."""
    stem = f"latency_b{table_batch}" if name == "latency" else name
    return TABLE.format(system=system, stem=stem)


def cells_on_disk(system: str, framework: str, version: str) -> list[str]:
    """Every cell file of one version of a framework on a system (every precision and
    process)."""
    return sorted(
        glob.glob(
            CELL.format(
                system=system,
                framework=framework,
                version=version,
                mode="*",
                arch="*",
                batch="*",
                precision_tag="",
            )
            + ".nc"
        )
    )


def versions_on_disk(system: str, framework: str) -> list[str]:
    """The versions of a framework that have cell files on a system."""
    root = f"results/cells/{system}/{framework}"
    names = sorted(os.listdir(root)) if os.path.isdir(root) else []
    return [name for name in names if cells_on_disk(system, framework, name)]


def refuse_layout_before_systems(frameworks: Iterable[str]) -> None:
    """Results named by a framework where a system name belongs now stop the workflow with
    the command that moves them."""
    old = sorted(
        f"results/{stage}/{fw}"
        for stage in STAGES_BEFORE_SYSTEMS
        for fw in frameworks
        if os.path.isdir(f"results/{stage}/{fw}")
    )
    if old:
        raise ValueError(
            f"{', '.join(old)}: results of the layout before systems "
            "(results/<stage>/<framework>/...). Move them under the system that measured them "
            "with `python -m fwbench.io.migrate --system <name>` (the default config's machine: "
            "`--system local`; see README), or move them away."
        )
