"""Where a cell's time goes: its clean median split into four parts that add up to it, from the
attribution pass (fwbench.measure.attribution) and the roofline (fwbench.analysis.roofline).

- roof_s: the cache-aware lower bound, the least time the cell's work can take here;
- kernel_excess_s: the kernel time the profiler saw beyond that bound (0 where it saw less:
  kernels it cannot see, such as inductor's generated C++, are then in the residual), the
  kernel time taken as its share of the profiled run's work, times the clean median
  (clean_kernel_s: the profiled run is another moment than the clean samples);
- dispatch_s: the ops or launches per call × the mode's own launch floor;
- residual_s: the rest of the median: allocation, glue, synchronization, idle; of it,
  `rest_outside_s` is the time outside the framework (no event of it open: the caller's Python
  between ops), the remainder is inside its ops beyond the floor and the kernels.

The parts add up to the median exactly while the residual is not negative; where kernel time and
dispatch together exceed the median (a profiled run's kernels inflated, a floor above what the
call pays) the residual is 0 and `attribution_closure` (the parts' sum over the median) says by
how much they overshoot: within CLOSURE_TOLERANCE the breakdown holds. `explained_share` is the
share of the median the first three parts explain. Where the profiler cannot see the kernels at
all (kernel time NaN), the kernel excess is unknown and the residual holds it.

Three cross-checks: `per_step` (an rnn or lstm cell's median, dispatch, roof and α per
recurrent step); `batch_fit` (latency = α + β·batch over a variant's batches; α, the cost
whatever the batch, set against the dispatch part without the profiler) and `compile_gain` (a
compiled or exported mode's time against its eager cell, split into dispatch removed, kernel
time changed and the rest).
"""

from __future__ import annotations

import numpy as np

from fwbench.io.dims import CELL_DIMS, EAGER_MODE
from fwbench.io.variables import V

PARTS = ("roof_s", "kernel_excess_s", "dispatch_s", "residual_s")
PART_LABELS = {
    "roof_s": "roofline bound",
    "kernel_excess_s": "kernel excess",
    "dispatch_s": "dispatch",
    "residual_s": "the rest",
}
CLOSURE_TOLERANCE = 0.10
SHARE_OF = {part: part.removesuffix("_s") + "_share" for part in PARTS}


def clean_kernel_s(
    median_s: np.ndarray, kernel_s: np.ndarray, work_s: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The kernel time in the clean median's terms: the profiled run's kernel time as its share
    of that run's work (its wall less the profiler's calibrated cost), times the median; and
    the stretch, that work over the median (1: the profiled run's work took the clean time;
    the machine's state between the two runs and events dearer than calibrated move it).
    Where a cell has no work recorded (written before it was), its kernel time as it is."""
    with np.errstate(invalid="ignore", divide="ignore"):
        stretch = work_s / median_s
        return np.where(np.isnan(work_s), kernel_s, kernel_s / stretch), stretch


def time_parts(
    median_s: np.ndarray,
    lower_bound_s: np.ndarray,
    kernel_s: np.ndarray,
    dispatches: np.ndarray,
    floor_s: np.ndarray,
    work_s: np.ndarray,
) -> dict[str, np.ndarray]:
    """The four parts, the share they explain, their closure and the profiled run's stretch,
    per cell (NaN where the cell has no median, roof or pass; the kernel excess alone NaN where
    kernels were not seen). `kernel_s` and `work_s` are the profiled run's (clean_kernel_s)."""
    dispatch = dispatches * floor_s
    kernel_s, stretch = clean_kernel_s(median_s, kernel_s, work_s)
    complete = ~(np.isnan(median_s) | np.isnan(lower_bound_s) | np.isnan(dispatch))
    seen = complete & ~np.isnan(kernel_s)
    kernel = np.where(seen, np.fmax(kernel_s, lower_bound_s), lower_bound_s)
    residual = median_s - kernel - dispatch
    with np.errstate(invalid="ignore", divide="ignore"):
        parts = {
            "roof_s": lower_bound_s,
            "kernel_excess_s": np.where(seen, kernel - lower_bound_s, np.nan),
            "dispatch_s": dispatch,
            "residual_s": np.fmax(residual, 0.0),
            "explained_share": (kernel + dispatch) / median_s,
            "attribution_closure": (kernel + dispatch + np.fmax(residual, 0.0)) / median_s,
            "attr_stretch": stretch,
        }
    return {name: np.where(complete, values, np.nan) for name, values in parts.items()}


def dominant_part(parts: dict[str, np.ndarray]) -> np.ndarray:
    """Per cell, the label of its largest part ('' where the breakdown is missing)."""
    stacked = np.stack([np.nan_to_num(parts[p], nan=-1.0) for p in PARTS], axis=-1)
    complete = ~np.isnan(parts["roof_s"])
    labels = np.array([PART_LABELS[p] for p in PARTS], dtype=object)
    return np.where(complete, labels[np.argmax(stacked, axis=-1)], "").astype(object)


def batch_fit(median_s: np.ndarray, batches: np.ndarray) -> dict[str, np.ndarray]:
    """Per (framework, mode, arch), latency = α + β·batch fitted by least squares over the
    batches measured (the last axis), broadcast back over them: α is the cost a call pays
    whatever its batch (dispatch and fixed overhead), set against `dispatch_s`. NaN with
    fewer than two batches."""
    x = np.broadcast_to(np.asarray(batches, dtype=float), median_s.shape)
    seen = np.isfinite(median_s)
    count = seen.sum(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_x = np.where(seen, x, 0).sum(axis=-1, keepdims=True) / count
        mean_y = np.where(seen, median_s, 0).sum(axis=-1, keepdims=True) / count
        dx = np.where(seen, x - mean_x, 0)
        beta = (dx * np.where(seen, median_s - mean_y, 0)).sum(axis=-1, keepdims=True) / (
            dx**2
        ).sum(axis=-1, keepdims=True)
    alpha = mean_y - beta * mean_x
    enough = count >= 2
    shape = median_s.shape
    return {
        "batch_fit_alpha_s": np.broadcast_to(np.where(enough, alpha, np.nan), shape).copy(),
        "batch_fit_beta_s": np.broadcast_to(np.where(enough, beta, np.nan), shape).copy(),
    }


def rest_outside(parts: dict[str, np.ndarray], cells: dict[str, np.ndarray]) -> np.ndarray:
    """Of the rest, the part outside the framework: the profiled call's time in which no
    event of the framework was open (the caller's Python between ops: the model's code, a
    layer library's machinery, the harness), at the clean pace (times the median over the same
    calls unprofiled right after the profile). An upper bound: the profiler's own cost between
    its events lands here too. NaN where the profile records no events, and where its kernel
    time was not resolved (a trace that dense spends much of the call between events)."""
    idle = np.maximum(cells["attr_profiled_call_s"] - cells["attr_in_framework_s"], 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        outside = idle * cells[V.median_s] / cells["attr_unprofiled_call_s"]
    outside = np.where(np.isnan(cells["attr_kernel_s"]), np.nan, outside)
    return np.minimum(parts["residual_s"], outside)


def per_step(parts: dict[str, np.ndarray], cells: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """For rnn and lstm (`recurrent_steps`: cell steps per call, each waiting on the one
    before), the median, the ops or launches, their dispatch, the roof and the batch fit's α
    per step: what one step costs against what its ops' floor and its share of the roof
    explain. NaN for the other architectures."""
    steps = cells["recurrent_steps"]
    with np.errstate(invalid="ignore", divide="ignore"):
        return {
            "step_s": cells[V.median_s] / steps,
            "step_dispatches": cells["attr_dispatches"] / steps,
            "step_dispatch_s": parts["dispatch_s"] / steps,
            "step_roof_s": parts["roof_s"] / steps,
            "step_alpha_s": parts["batch_fit_alpha_s"] / steps,
        }


def eager_index(modes: list[str]) -> int | None:
    return modes.index(EAGER_MODE) if EAGER_MODE in modes else None


def compile_gain(parts: dict[str, np.ndarray], eager: int | None) -> dict[str, np.ndarray]:
    """Per cell against its framework's eager cell (mode index `eager`, axis 1): how much of
    the time the mode saves is dispatch removed, kernel time changed (roof + excess) and the
    rest; positive: this mode spends less there. NaN without an eager cell."""
    kernel = parts["roof_s"] + parts["kernel_excess_s"]  # NaN where kernels were not seen
    kinds = {"gain_dispatch_s": parts["dispatch_s"], "gain_kernel_s": kernel}
    kinds["gain_rest_s"] = parts["residual_s"]
    if eager is None:
        return {name: np.full(kernel.shape, np.nan) for name in kinds}
    return {name: values[:, eager : eager + 1] - values for name, values in kinds.items()}


def attribution_variables(cells: dict[str, np.ndarray], coords: tuple[list, ...]) -> dict:
    """stats.nc's breakdown of every cell (`cells`: the statistics so far, the pass's readings
    and the roofline's bound; `coords`: each of CELL_DIMS' values, in that order)."""
    names = (V.median_s, "lower_bound_s", "attr_kernel_s", "attr_dispatches", "attr_floor_s")
    names += ("attr_profiled_work_s",)
    parts = time_parts(*(cells[name] for name in names))
    named = dict(zip(CELL_DIMS, coords, strict=True))
    parts |= batch_fit(cells[V.median_s], np.array(named["batch"], dtype=float))
    parts |= per_step(parts, cells)
    parts["rest_outside_s"] = rest_outside(parts, cells)
    parts |= shares(parts, cells[V.median_s])
    return parts | compile_gain(parts, eager_index(list(named["mode"])))


def shares(parts: dict[str, np.ndarray], median_s: np.ndarray) -> dict[str, np.ndarray]:
    """Each of the four parts over the median, and a step's dispatch and roof over its time."""
    with np.errstate(invalid="ignore", divide="ignore"):
        found = {SHARE_OF[part]: parts[part] / median_s for part in PARTS}
        explained = (parts[V.step_dispatch_s] + parts[V.step_roof_s]) / parts[V.step_s]
    return found | {V.step_explained_share: explained}
