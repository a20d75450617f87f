"""The flags a cell of stats.nc can carry, what each means, and which ones keep a cell out of
the winners' contests (facts about the measurement's conditions: contended, slow machine,
faster than the roofline, another node; not high_cv: a cell's own noise is in its CIs)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import xarray as xr

from fwbench.analysis.processes import NODE_SEPARATOR
from fwbench.analysis.roofline import INVALID_FAST
from fwbench.frameworks.kernel_precision import UPCAST_BELOW
from fwbench.io.dims import CELL_DIMS, EAGER_MODE, along

FLAG_HIGH_CV, FLAG_CONTENDED, FLAG_NOT_COMPILED = "high_cv", "contended", "not_compiled"
FLAG_PARTIAL = "partially_compiled"
FLAG_NODE_MISMATCH = "node_mismatch"
FLAG_SLOW_MACHINE = "slow_machine"
FLAG_UPCAST = "upcast"
UNTRUSTED_FLAGS = (
    FLAG_CONTENDED,
    FLAG_SLOW_MACHINE,
    INVALID_FAST,
    FLAG_NODE_MISMATCH,
)
NODE_MODELS = ("cpu_model", "gpu_model")
FLAG_MEANINGS = {
    FLAG_HIGH_CV: "coefficient of variation above stats.cv_threshold_pct and above "
    "stats.cv_machine_factor × the speed canary's CV beside it: noise of the framework's own, "
    "unusual on this machine (it widens the cell's CIs; the cell still competes)",
    FLAG_CONTENDED: "other processes used the CPU during the timed loop",
    FLAG_SLOW_MACHINE: "the speed canary ran slow in a process of the cell, also when measured "
    "again (bench.retries): the machine, not the framework, was slow",
    INVALID_FAST: (
        "faster than the cache-aware roofline lower bound even at the slow end of its median's "
        "CI (the roofs were measured at one moment of a machine whose speed moves): a missing "
        "sync or a wrong cost model"
    ),
    FLAG_NOT_COMPILED: "a compiled mode that the framework ran uncompiled (a silent fallback)",
    FLAG_PARTIAL: "a compiled mode whose graph calls eager kernels for some ops (eager_ops): "
    "its speedup is not the compiler's alone",
    FLAG_NODE_MISMATCH: "measured on a node whose CPU or GPU model differs from the one its "
    "system's hardware file measured: its roofline is another machine's",
    FLAG_UPCAST: f"a cell in a precision below float32 whose typed work ran less than "
    f"{UPCAST_BELOW:.0%} in it (low_precision_share): an upcast or a fallback kernel; "
    "kernel_precision says what ran instead (its speedup is not the precision's)",
}


def flag_cells(masks: dict[str, np.ndarray]) -> np.ndarray:
    """Comma-separated flag names per cell, in FLAG_MEANINGS order."""
    shape = next(iter(masks.values())).shape
    flags = np.full(shape, "", dtype=object)
    for flag, mask in masks.items():
        flags[mask] = [f"{old},{flag}" if old else flag for old in flags[mask]]
    return flags


def has_text(bench: xr.Dataset, name: str) -> np.ndarray:
    if name not in bench:
        return np.zeros(tuple(bench.sizes[d] for d in CELL_DIMS), dtype=bool)
    return np.vectorize(bool, otypes=[bool])(bench[name].transpose(*CELL_DIMS).values)


def node_mismatch(bench: xr.Dataset, node: dict[str, str]) -> np.ndarray:
    """Cells with a process whose node's CPU or GPU model differs from the hardware file's
    `node` (a pooled cell lists its processes' models, NODE_SEPARATOR between); a model either
    side does not record (cells and hardware files before systems) is not compared."""
    mismatch = np.zeros(tuple(bench.sizes[d] for d in CELL_DIMS), dtype=bool)
    for key in NODE_MODELS:
        expected = node.get(key, "")
        if not expected or key not in bench:
            continue
        models = bench[key].transpose(*CELL_DIMS).values
        differs = [
            any(model and model != expected for model in str(text).split(NODE_SEPARATOR))
            for text in models.ravel()
        ]
        mismatch |= np.array(differs, dtype=bool).reshape(models.shape)
    return mismatch


def cell_flags(
    bench: xr.Dataset,
    cells: Mapping[str, np.ndarray],
    invalid_fast: np.ndarray,
    ok: np.ndarray,
    node: dict[str, str],
    cv_threshold_pct: float,
    cv_machine_factor: float,
) -> np.ndarray:
    """Each cell's flags (as flag_cells gives them) from its statistics (`cells`: cv_pct,
    contended, compiled), the roofline's `invalid_fast`, which cells succeeded (`ok`), the
    pooled aggregate `bench` (modes, eager_ops, node models) and its system's hardware `node`."""
    modes = bench["mode"].values.tolist()
    compiled_mode = along([mode != EAGER_MODE for mode in modes], "mode")
    return flag_cells(
        {
            FLAG_HIGH_CV: high_cv(cells, cv_threshold_pct, cv_machine_factor),
            FLAG_CONTENDED: cells["contended"] == 1,
            FLAG_SLOW_MACHINE: cells["slow_machine"] == 1,
            INVALID_FAST: invalid_fast,
            FLAG_NOT_COMPILED: ok & compiled_mode & (cells["compiled"] == 0),
            FLAG_PARTIAL: ok & compiled_mode & has_text(bench, "eager_ops"),
            FLAG_NODE_MISMATCH: ok & node_mismatch(bench, node),
            FLAG_UPCAST: ok & (cells["low_precision_share"] < UPCAST_BELOW),
        }
    )


def high_cv(
    cells: Mapping[str, np.ndarray], threshold_pct: float, machine_factor: float
) -> np.ndarray:
    """Cells noisier than the threshold and than `machine_factor` × the machine's own noise
    measured beside them (the canary chain's CV over the cell's samples, same core); where no
    canary ran, the threshold alone."""
    cv, floor = cells["cv_pct"], cells["canary_cv_pct"]
    beside = np.where(np.isfinite(floor), machine_factor * floor, 0.0)
    return (cv > threshold_pct) & (cv > beside)


def has_flag(flags: np.ndarray, flag: str) -> np.ndarray:
    """Where the comma-separated `flags` hold `flag`."""
    hits = [flag in str(text).split(",") for text in np.ravel(flags)]
    return np.array(hits, dtype=bool).reshape(np.shape(flags))


def untrusted(flags: np.ndarray) -> np.ndarray:
    """The cells whose flags keep their timings out of the winners' contests (UNTRUSTED_FLAGS).
    not_compiled and partially_compiled are facts about the mode, not about the measurement:
    such a cell competes, flagged in its own table."""
    hits = [bool(set(text.split(",")) & set(UNTRUSTED_FLAGS)) for text in flags.ravel()]
    return np.array(hits).reshape(flags.shape)
