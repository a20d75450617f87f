"""A small synthetic sweep built by the real code, for the figure and report tests.

`synthetic_results` writes cells with fwbench.io.cell_file, aggregates and summarizes them with
fwbench.analysis.aggregate and fwbench.analysis.stats, and writes a hardware JSON shaped like
fwbench.hardware.characterize's. The cells hold one of each thing a figure or the report must
survive: a failed cell, a noisy one, one faster than the roofline allows, one that ran
uncompiled. `training_runs` writes two stacked training runs, one failed.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import xarray as xr

from fwbench.analysis.aggregate import aggregate_cells
from fwbench.analysis.roofline import read_hardware_limits
from fwbench.analysis.stats import StatsSettings, summarize, write_outputs
from fwbench.io.bench_file import write_bench
from fwbench.io.cell_file import Cell, write_cell
from fwbench.io.dims import STATUS_FAILED, STATUS_OK
from fwbench.io.rounds_file import SAMPLES
from fwbench.io.stats_file import StatsView
from fwbench.io.train_file import RunRecord
from fwbench.io.variables import R
from fwbench.model.cost import cost
from fwbench.model.specs import build_spec
from fwbench.present.tables import TABLES, write_tables
from fwbench.training.summary import run_totals, stack_runs

MODES = {"torch": ("eager", "compiled"), "jax": ("eager", "jit"), "tensorflow": ("eager", "xla")}
ARCHS = {"mlp": {"input": 64, "hidden": [32], "classes": 10}, "lstm": {"input": 8, "hidden": 16}}
BATCHES = (1, 8, 32)
REPEATS = 12
PEAK_FLOPS, TRIAD_BPS = 4.0e11, 2.9e10
# The working-set sweep's plateaus: (capacity in bytes, bandwidth, fastest kernel) per level;
# DRAM's roof is the STREAM triad's (two measurements of one figure).
MEMORY_LEVELS = {
    "L1": (65536, 5.0e11, "triad"),
    "L2": (2097152, 2.3e11, "read"),
    "L3": (33554432, 1.9e11, "read"),
    "DRAM": (None, TRIAD_BPS, "triad"),
}
FAILED = ("jax", "jit", "lstm", 8)
NOISY = ("tensorflow", "eager", "mlp", 1)
TOO_FAST = ("torch", "compiled", "mlp", 32)
UNCOMPILED = ("torch", "compiled", "lstm", 1)


def hardware_document() -> dict:
    """A hardware JSON with the keys fwbench.hardware.characterize writes (trimmed)."""
    kernels = {"copy": 3.1e10, "scale": 3.0e10, "add": 2.95e10, "triad": TRIAD_BPS}
    return {
        "schema_version": 2,
        "host": "testhost",
        "device": "cpu",
        "identity": {"cpu": {"model": "Test CPU 9000"}, "gpu": None},
        "bandwidth": {
            "runner": "torch",
            "kernels": {k: {"best_bandwidth_Bps": v} for k, v in kernels.items()},
        },
        "memory": {
            "runner": "native",
            "levels": {
                name: {
                    "capacity_bytes": capacity,
                    "bandwidth_Bps": bandwidth,
                    "roof_kernel": kernel,
                }
                for name, (capacity, bandwidth, kernel) in MEMORY_LEVELS.items()
            },
        },
        "compute": {
            "gemm_n": 512,
            "dtypes": {
                "float32": {
                    "skipped_reason": None,
                    "per_framework": {
                        "torch": {"flops_per_s": PEAK_FLOPS},
                        "jax": {"flops_per_s": 3.5e11},
                        "numpy": {"flops_per_s": 3.7e11},
                    },
                    "best_framework": "torch",
                    "best_flops_per_s": PEAK_FLOPS,
                },
                "bfloat16": {
                    "skipped_reason": None,
                    "per_framework": {"torch": {"flops_per_s": 2.2e12}},
                    "best_framework": "torch",
                    "best_flops_per_s": 2.2e12,
                },
            },
        },
        "theoretical": {
            "device_name": "Test CPU 9000",
            "flops_per_s": {"float32": 6.4e11, "bfloat16": 4.1e12, "float16": None},
            "flops_source": {"float32": "ISA model × 2 cores", "bfloat16": "ISA model × 2 cores"},
            "bandwidth_Bps": None,
            "bandwidth_source": "not derivable: DRAM channels and speed are not readable",
        },
        "ridge": {
            "per_dtype": {
                "float32": {
                    "measured_flop_per_byte": PEAK_FLOPS / TRIAD_BPS,
                    "theoretical_flop_per_byte": None,
                }
            }
        },
        "provenance": {"threads": {"threads": 2}},
    }


def _latency(framework: str, mode: str, arch: str, batch: int, rng) -> np.ndarray:
    """Latencies a few times the roofline lower bound, varied per variant."""
    analytic = cost(build_spec(arch, ARCHS[arch]), batch)
    level_Bps = next(
        bandwidth
        for capacity, bandwidth, _ in MEMORY_LEVELS.values()
        if capacity is None or analytic.working_set_bytes <= capacity
    )
    lower = max(analytic.flops / PEAK_FLOPS, analytic.bytes / level_Bps)  # the cache-aware bound
    slowness = {"eager": 40.0, "compiled": 12.0, "jit": 15.0, "xla": 25.0}[mode]
    slowness *= {"torch": 1.0, "jax": 1.4, "tensorflow": 2.2}[framework]
    if (framework, mode, arch, batch) == TOO_FAST:
        slowness = 0.6
    spread = 0.3 if (framework, mode, arch, batch) == NOISY else 0.02
    return lower * slowness * rng.lognormal(0.0, spread, REPEATS)


def _cell(framework: str, mode: str, arch: str, batch: int, rng) -> Cell:
    analytic = cost(build_spec(arch, ARCHS[arch]), batch)
    cell = Cell(framework, mode, arch, batch, REPEATS)
    cell.attrs = {
        "framework_version": {"torch": "2.13.0", "jax": "0.10.2", "tensorflow": "2.21.0"}[
            framework
        ],
        "versions": {"python": "3.11"},
        "host": "testhost",
        "device": "cpu",
        "contended": 0,
        "compile_how": "op by op" if mode == "eager" else f"{framework} {mode} (test)",
        "threads": {"threads": 2},
        "config_hash": "cafe",
        "git_commit": "abc123",
    }
    compiled = mode != "eager" and (framework, mode, arch, batch) != UNCOMPILED
    cell.scalars = {
        "flops": analytic.flops,
        "bytes": analytic.bytes,
        "working_set_bytes": analytic.working_set_bytes,
        "first_call_s": 2.0 if mode != "eager" else 0.01,
        "compiled": float(compiled),
        "graph_count": float(compiled),
    }
    if (framework, mode, arch, batch) == FAILED:
        cell.attrs |= {
            "status": STATUS_FAILED,
            "error_type": "XlaRuntimeError",
            "error_message": "RESOURCE_EXHAUSTED: test failure",
        }
    else:
        cell.latency_s = _latency(framework, mode, arch, batch, rng)
    return cell


def training_runs(tmp_path: Path) -> Path:
    """Two stacked training runs (train-file variables), the jax one failed; its path."""
    runs = []
    for framework, mode, status in (("torch", "compiled", "ok"), ("jax", "jit", "failed")):
        record = RunRecord(epochs=3)
        record.per_epoch["epoch_time_s"] = np.array([5.0, 2.0, 2.2])
        record.per_epoch["val_accuracy"] = np.array([0.5, 0.8, 0.91])
        record.per_epoch["samples_per_s"] = np.array([300.0, 800.0, 780.0])
        record.scalars |= {"steady_epoch_time_s": 2.1, "first_epoch_overhead_s": 2.9}
        record.scalars |= {"time_to_target_s": 9.2, "target_accuracy": 0.9, "compiled": 1.0}
        record.attrs |= {"framework": framework, "mode": mode, "model": "resnet8"}
        record.attrs |= {"dataset": "digits", "status": status}
        runs.append(record.to_dataset())
    path = tmp_path / "train.nc"
    stacked = stack_runs(runs)
    stacked.assign(run_totals(stacked)).to_netcdf(path, engine="h5netcdf")
    return path


@dataclass
class SyntheticResults:
    root: Path
    bench: Path
    stats: Path
    stats_csv: Path
    tables: Path
    hardware: Path


def synthetic_results(root: Path) -> SyntheticResults:
    """Cells → aggregate → stats (bench.nc, stats.nc, stats.csv, tables) and the hardware JSON."""
    rng = np.random.default_rng(0)
    paths = []
    for framework, modes in MODES.items():
        for mode in modes:
            for arch in ARCHS:
                for batch in BATCHES:
                    paths.append(root / "cells" / f"{framework}-{mode}-{arch}-{batch}.nc")
                    write_cell(_cell(framework, mode, arch, batch, rng), paths[-1])
    bench = aggregate_cells(paths)
    bench_path = root / "aggregate" / "bench.nc"
    write_bench(bench, bench_path)
    hardware_path = root / "hardware" / "testhost-cpu.json"
    hardware_path.parent.mkdir(parents=True)
    hardware_path.write_text(json.dumps(hardware_document()))
    limits = read_hardware_limits(hardware_path)  # the memory levels included
    summary = summarize(bench, limits, StatsSettings(bootstrap_resamples=200, table_batch=32))
    out = root / "summary"
    # Named as the stats rule names them: the latency table carries its batch.
    tables = {name: out / "tables" / f"{name}.md" for name in TABLES}
    tables["latency"] = out / "tables" / "latency_b32.md"
    write_outputs(summary, out / "stats.nc", out / "stats.csv", out / "comparisons.csv")
    write_tables(StatsView(summary), tables)
    return SyntheticResults(
        root, bench_path, out / "stats.nc", out / "stats.csv", out / "tables", hardware_path
    )


def copy_of(results: SyntheticResults, root: Path) -> SyntheticResults:
    """A private copy of `results` under `root` (a test module that adds files to its copy
    leaves the others' alone): the session builds the synthetic sweep once (conftest's
    `synthetic_sweep`), each module takes a copy."""
    shutil.copytree(results.root, root, dirs_exist_ok=True)
    moved = {
        name: root / getattr(results, name).relative_to(results.root)
        for name in ("bench", "stats", "stats_csv", "tables", "hardware")
    }
    return SyntheticResults(root, **moved)


def aggregate_of(tmp_path: Path, cells: list[Cell]):
    """The one-system aggregate of these cells, written as cell files under `tmp_path`."""
    paths = []
    for i, cell in enumerate(cells):
        paths.append(tmp_path / f"c{i}.nc")
        write_cell(cell, paths[-1])
    return aggregate_cells(paths).sel(system="local")


def rounds_dataset(
    variants: list[tuple[str, str]],
    medians_s: list[float],
    process_sd: list[float],
    sets: int = 3,
    rounds: int = 20,
    set_drift: tuple[float, ...] = (0.0, 0.0, 0.0),
    sample_sd: float = 0.03,
    seed: int = 0,
    arch: str = "mlp",
    batch: int = 32,
    first_call_s: float | None = None,
    sensitivity: list[float] | None = None,
) -> xr.Dataset:
    """A rounds file's dataset (fwbench.io.rounds_file): variant v's samples in set s are
    lognormal around medians_s[v] · exp(sensitivity[v] · set_drift[s] + a process effect of
    sd process_sd[v]) (sensitivity 1 where not given); a turn's first sample 5% slower than its
    second; every worker's first call `first_call_s` + 0.1 s per set, where given."""
    rng = np.random.default_rng(seed)
    n = len(variants)
    process = rng.normal(0, 1, (n, sets)) * np.asarray(process_sd)[:, None]
    gamma = np.ones(n) if sensitivity is None else np.asarray(sensitivity)
    drift = gamma[:, None] * np.asarray(set_drift)[None, :sets]
    center = np.log(medians_s)[:, None] + drift + process
    noise = rng.normal(0, sample_sd, (n, sets, rounds, len(SAMPLES)))
    latency = np.exp(center[:, :, None, None] + noise)
    latency[..., 0] *= 1.05
    first = {}
    if first_call_s is not None:
        first[R.first_call_warm_s] = (
            ("variant", "set"),
            first_call_s + np.tile(0.1 * np.arange(sets), (n, 1)),
        )
    return xr.Dataset(
        {
            "latency_s": (("variant", "set", "round", "sample"), latency),
            "status": (("variant", "set"), np.full((n, sets), STATUS_OK)),
            **first,
        },
        coords={
            "variant": [f"{fw}/{mode}" for fw, mode in variants],
            "framework": ("variant", [fw for fw, _ in variants]),
            "mode": ("variant", [mode for _, mode in variants]),
            "sample": list(SAMPLES),
        },
        attrs={"arch": arch, "batch": batch, "system": "local"},
    )
