"""What the report prints of many cells at once, computed here once: per variant (framework,
mode) its measurement quality and compile evidence, per framework its dispatch floor, per system
its counts and the attribution's closure (the variables: fwbench.io.variables.AGGREGATES).

Every value is over the float32 cells that ran (status ok) at every arch and batch, which the
report's sections before its precision section show; a variant without one is NaN (or '').
"""

from __future__ import annotations

import warnings
from collections import Counter
from collections.abc import Callable

import numpy as np
import xarray as xr

from fwbench import frameworks
from fwbench.analysis.attribution import CLOSURE_TOLERANCE
from fwbench.analysis.flags import untrusted
from fwbench.analysis.machine import MACHINE, OWN
from fwbench.io.comparisons_file import (
    DECIDED,
    EQUIVALENT,
    FASTER,
    PRECISION,
    PREFIX,
    SLOWER,
    UNDETERMINED,
    WINNER_RIVALRY,
)
from fwbench.io.dims import CELL_DIMS, FLOAT32, STATUS_FAILED, STATUS_OK, CellKey, keys_where
from fwbench.io.variables import AGGREGATES, BY_NAME, VARIANT_DIMS, V

Reducer = Callable[[np.ndarray], float]
ONNX_MODE = "onnxrt"  # the runtime mode several frameworks export to


def _finite(values: np.ndarray) -> np.ndarray:
    values = np.asarray(values, dtype=float).ravel()
    return values[np.isfinite(values)]


def median(values: np.ndarray) -> float:
    found = _finite(values)
    return float(np.median(found)) if found.size else np.nan


def largest(values: np.ndarray) -> float:
    found = _finite(values)
    return float(found.max()) if found.size else np.nan


def smallest(values: np.ndarray) -> float:
    found = _finite(values)
    return float(found.min()) if found.size else np.nan


def total(values: np.ndarray) -> float:
    return float(_finite(values).sum())


def count_of(value: float) -> Reducer:
    return lambda values: float(np.sum(np.asarray(values, dtype=float) == value))


def _text_of(values: np.ndarray) -> str:
    return "; ".join(sorted({str(v) for v in np.ravel(values) if str(v)}))


def _noise(label: str) -> Callable[[xr.Dataset], float]:
    return lambda cells: float(np.sum(cells[V.noise].values.astype(str) == label))


def _spread_pct(cells: xr.Dataset) -> float:
    sigma = median(cells[V.process_sigma].values)
    return 100 * (np.exp(sigma) - 1) if np.isfinite(sigma) else np.nan


# Per variant: the variable and how it is made from the variant's cells that ran.
VARIANT_RULES: dict[str, Callable[[xr.Dataset], float | str]] = {
    V.variant_cells: lambda c: float(c[V.status].size),
    V.variant_multi_process_cells: lambda c: float(np.sum(c[V.process_count].values >= 2)),
    V.variant_cv_pct: lambda c: median(c[V.cv_pct].values),
    V.variant_canary_cv_pct: lambda c: median(c[V.canary_cv_pct].values),
    V.variant_canary_factor: lambda c: median(c[V.canary_factor].values),
    V.variant_canary_factor_max: lambda c: largest(c[V.canary_factor].values),
    V.variant_read_factor: lambda c: median(c[V.canary_read_factor].values),
    V.variant_on_cpu: lambda c: median(c[V.on_cpu_median].values),
    V.variant_on_cpu_min: lambda c: smallest(c[V.on_cpu_median].values),
    V.variant_slow_samples: lambda c: total(c[V.slow_samples].values),
    V.variant_slow_samples_dropped: lambda c: total(c[V.slow_samples_dropped].values),
    V.variant_slow_machine_cells: lambda c: count_of(1)(c[V.slow_machine].values),
    V.variant_slow_processes_machine: lambda c: total(c[V.slow_processes_machine].values),
    V.variant_slow_processes_own: lambda c: total(c[V.slow_processes_own].values),
    V.variant_contended_cells: lambda c: count_of(1)(c[V.contended].values),
    V.variant_process_spread_pct: _spread_pct,
    V.variant_noise_machine_cells: _noise(MACHINE),
    V.variant_noise_own_cells: _noise(OWN),
    V.variant_compiled_cells: lambda c: count_of(1)(c[V.compiled].values),
    V.variant_graphs_min: lambda c: smallest(c[V.graph_count].values),
    V.variant_graphs_max: lambda c: largest(c[V.graph_count].values),
    V.variant_graph_breaks: lambda c: total(c[V.graph_breaks].values),
    V.variant_fallbacks: lambda c: total(c[V.fallbacks].values),
    V.variant_compile_how: lambda c: _text_of(c[V.compile_how].values),
    V.variant_eager_ops: lambda c: _text_of(c[V.eager_ops].values),
}


def _verdict(cells: xr.Dataset, verdict: str) -> np.ndarray:
    return cells[V.speedup_verdict].values.astype(str) == verdict


def _speedups_of(verdict: str, reduce: Reducer) -> Callable[[xr.Dataset], float]:
    return lambda c: reduce(c[V.speedup_vs_eager].values[_verdict(c, verdict)])


def _break_even(reduce: Reducer) -> Callable[[xr.Dataset], float]:
    return lambda c: reduce(c[V.break_even_iterations].values[_verdict(c, FASTER)])


VARIANT_RULES |= {
    V.compile_faster_cells: lambda c: float(_verdict(c, FASTER).sum()),
    V.compile_slower_cells: lambda c: float(_verdict(c, SLOWER).sum()),
    V.compile_equivalent_cells: lambda c: float(_verdict(c, EQUIVALENT).sum()),
    V.compile_undetermined_cells: lambda c: float(_verdict(c, UNDETERMINED).sum()),
    V.compile_faster_min: _speedups_of(FASTER, smallest),
    V.compile_faster_max: _speedups_of(FASTER, largest),
    V.compile_slower_min: _speedups_of(SLOWER, smallest),
    V.compile_slower_max: _speedups_of(SLOWER, largest),
    V.break_even_min: _break_even(smallest),
    V.break_even_max: _break_even(largest),
}


def _ran(summary: xr.Dataset) -> xr.Dataset:
    """The summary's cells that ran, stacked into one `cell` dimension."""
    stacked = summary.stack(cell=[d for d in summary[V.status].dims])
    return stacked.isel(cell=np.flatnonzero(stacked[V.status].values == STATUS_OK))


def per_variant(summary: xr.Dataset) -> dict[str, tuple]:
    frameworks, modes = (summary[d].values.tolist() for d in VARIANT_DIMS)
    out = {
        name: np.full(
            (len(frameworks), len(modes)),
            "" if BY_NAME[name].text else np.nan,
            dtype=object if BY_NAME[name].text else float,
        )
        for name in VARIANT_RULES
    }
    for f, framework in enumerate(frameworks):
        for m, mode in enumerate(modes):
            cells = _ran(summary.sel(framework=framework, mode=mode))
            if cells.sizes["cell"] == 0:
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                for name, rule in VARIANT_RULES.items():
                    out[name][f, m] = rule(cells)
    return {name: (VARIANT_DIMS, values) for name, values in out.items()}


def per_framework(summary: xr.Dataset, batch: int) -> dict[str, tuple]:
    """Per framework: its dispatch floor over every cell that ran, and, over its cells with
    the four parts at the table `batch`, the part largest in most and the largest rest."""
    ok = summary[V.status] == STATUS_OK
    at_batch = summary.sel(batch=batch)
    archs = at_batch["arch"].values.tolist()
    rows = []
    for framework in summary["framework"].values:
        floor = median(summary[V.null_call_s].where(ok).sel(framework=framework).values)
        parts = _framework_parts(_ran(at_batch.sel(framework=framework)), archs)
        rows.append([floor, *parts])
    columns = list(zip(*rows, strict=True))
    names = (
        V.framework_null_call_s,
        V.framework_attributed_cells,
        V.framework_top_part,
        V.framework_top_part_cells,
        V.framework_largest_rest_cell,
        V.framework_largest_rest_s,
        V.framework_largest_rest_outside_s,
    )
    return {
        name: (("framework",), np.array(column, dtype=object if BY_NAME[name].text else float))
        for name, column in zip(names, columns, strict=True)
    }


def _framework_parts(cells: xr.Dataset, archs: list[str]) -> list:
    """[cells with parts, the part largest in most, in how many, the cell with the largest
    rest whose outside share is known, that rest, its outside share]."""
    cells = cells.isel(cell=np.flatnonzero(np.isfinite(cells[V.roof_s].values)))
    if cells.sizes["cell"] == 0:
        return [0.0, "", np.nan, "", np.nan, np.nan]
    # The most common part; of two as common, the first in (arch, variant) order.
    order = sorted(range(cells.sizes["cell"]), key=lambda i: archs.index(cells["arch"].values[i]))
    top, count = Counter(str(cells[V.dominant_part].values[i]) for i in order).most_common(1)[0]
    known = np.flatnonzero(np.isfinite(cells[V.rest_outside_s].values))
    rest = ["", np.nan, np.nan]
    if known.size:
        at = known[int(np.argmax(cells[V.residual_s].values[known]))]
        one = cells.isel(cell=at)
        name = CellKey.of({d: one[d].item() for d in CELL_DIMS}).name
        rest = [name, float(one[V.residual_s]), float(one[V.rest_outside_s])]
    return [float(cells.sizes["cell"]), top, float(count), *rest]


def _efficiency_ends(summary: xr.Dataset) -> dict[str, float | str]:
    """The lowest and highest efficiency of the trusted cells that ran, with their cells."""
    efficiency = summary[V.efficiency].transpose(*CELL_DIMS).values
    trusted = ~untrusted(summary[V.flags].transpose(*CELL_DIMS).values.astype(str))
    found = (
        np.isfinite(efficiency)
        & (summary[V.status].transpose(*CELL_DIMS).values == STATUS_OK)
        & trusted
    )
    if not found.any():
        return {
            V.efficiency_low: np.nan,
            V.efficiency_low_cell: "",
            V.efficiency_high: np.nan,
            V.efficiency_high_cell: "",
        }
    values = np.where(found, efficiency, np.nan)
    ends = {}
    for name, cell_name, flat in (
        (V.efficiency_low, V.efficiency_low_cell, np.nanargmin(values)),
        (V.efficiency_high, V.efficiency_high_cell, np.nanargmax(values)),
    ):
        index = np.unravel_index(flat, values.shape)
        mask = np.zeros(values.shape, dtype=bool)
        mask[index] = True
        (key,) = keys_where(summary, mask)
        ends |= {name: float(values[index]), cell_name: key.name}
    return ends


def _flag_counts(summary: xr.Dataset) -> str:
    flags = [f for text in summary[V.flags].values.ravel() for f in str(text).split(",") if f]
    names, counts = np.unique(np.array(flags, dtype=str), return_counts=True)
    return ", ".join(f"{count} {name}" for name, count in zip(names, counts, strict=True))


def _parts_spread(summary: xr.Dataset, batch: int) -> float:
    """The slowest over the fastest median of the cells with parts at `batch`."""
    at = summary.sel(batch=batch)
    with_parts = (at[V.status] == STATUS_OK) & np.isfinite(at[V.roof_s])
    medians = _finite(at[V.median_s].where(with_parts).values)
    return float(medians.max() / medians.min()) if medians.size else np.nan


def per_system(summary: xr.Dataset, batch: int) -> dict[str, tuple]:
    status = summary[V.status].values
    ok = status == STATUS_OK

    def where_ok(name: str) -> np.ndarray:
        return summary[name].values[ok]

    closure = _finite(summary[V.attribution_closure].values)
    stretch = summary[V.attr_stretch].values
    values = {
        V.cells_ok: float(ok.sum()),
        V.cells_failed: float((status == STATUS_FAILED).sum()),
        V.system_cv_pct: median(where_ok(V.cv_pct)),
        V.system_contended_cells: count_of(1)(where_ok(V.contended)),
        V.samples_min: smallest(where_ok(V.n)),
        V.samples_max: largest(where_ok(V.n)),
        V.calls_per_sample_min: smallest(where_ok(V.calls_per_sample)),
        V.calls_per_sample_max: largest(where_ok(V.calls_per_sample)),
        V.closure_cells: float(closure.size),
        V.closure_held: float((closure <= 1 + CLOSURE_TOLERANCE).sum()),
        V.stretch_median: median(stretch),
        V.stretch_min: smallest(stretch),
        V.stretch_max: largest(stretch),
        V.parts_median_spread: _parts_spread(summary, batch),
        **_efficiency_ends(summary),
        V.flag_counts: _flag_counts(summary),
        **_comparison_counts(summary, batch),
    }
    return {name: ((), value) for name, value in values.items()}


def _comparison_counts(summary: xr.Dataset, batch: int) -> dict[str, float]:
    """How many of the float32 comparisons at the table batch were decided, and how wide the winner
    rivalries' CIs are (the records: fwbench.io.comparisons_file)."""
    records = {c: summary[PREFIX + c].values for c in ("kind", "batch", "precision", "verdict")}
    at = (records["kind"].astype(str) != "") & (records["batch"] == batch)
    at &= records["precision"] == FLOAT32
    verdicts = records["verdict"][at]
    rival = at & (records["kind"] == WINNER_RIVALRY)
    low, high = (summary[PREFIX + end].values[rival] for end in ("ci_low", "ci_high"))
    with np.errstate(invalid="ignore", divide="ignore"):
        half_widths = np.expm1(np.log(np.asarray(high / low, dtype=float)) / 2) * 100
    return {
        V.comparisons_total: float(at.sum()),
        V.comparisons_different: float(np.isin(verdicts, (FASTER, SLOWER)).sum()),
        V.comparisons_equivalent: float((verdicts == EQUIVALENT).sum()),
        V.comparisons_undetermined: float((verdicts == UNDETERMINED).sum()),
        V.rivalries_total: float(rival.sum()),
        V.rivalries_decided: float(np.isin(records["verdict"][rival], DECIDED).sum()),
        V.rivalry_half_width_pct: median(half_widths),
    }


def precision_counts(summary: xr.Dataset) -> dict[str, tuple]:
    """How the low-precision cells fared against float32, at every batch: the verdicts of the
    precision comparisons, and the cells that failed."""
    kinds = summary[PREFIX + "kind"].values.astype(str)
    verdicts = summary[PREFIX + "verdict"].values.astype(str)[kinds == PRECISION]
    low = [p for p in summary["precision"].values.tolist() if p != FLOAT32]
    failed = (summary[V.status].sel(precision=low).values == STATUS_FAILED).sum() if low else 0
    values = {
        V.precision_compared: float(verdicts.size),
        V.precision_faster: float((verdicts == FASTER).sum()),
        V.precision_slower: float((verdicts == SLOWER).sum()),
        V.precision_equivalent: float((verdicts == EQUIVALENT).sum()),
        V.precision_undetermined: float((verdicts == UNDETERMINED).sum()),
        V.precision_failed_cells: float(failed),
    }
    return {name: ((), value) for name, value in values.items()}


def per_row(summary: xr.Dataset) -> dict[str, tuple]:
    """Per (arch, batch): the spread of the frameworks' ONNX exports in the one runtime."""
    exporters = [
        f
        for f in summary["framework"].values.tolist()
        if ONNX_MODE in frameworks.MODES.get(str(f), ()) and ONNX_MODE in summary["mode"].values
    ]
    shape = (summary.sizes["arch"], summary.sizes["batch"])
    spread = np.full(shape, np.nan)
    if len(exporters) >= 2:
        medians = summary[V.median_s].sel(framework=exporters, mode=ONNX_MODE, precision=FLOAT32)
        medians = medians.transpose("framework", "arch", "batch").values
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            spread = np.where(
                np.isfinite(medians).all(axis=0), medians.max(axis=0) / medians.min(axis=0), np.nan
            )
    return {V.onnx_exporter_spread: (("arch", "batch"), spread)}


def over_cells(summary: xr.Dataset, batch: int) -> dict[str, tuple]:
    """Every variable of AGGREGATES for one system's summary (`batch`: its table batch), with
    its units or description."""
    fp32 = summary.sel(precision=[FLOAT32])
    values = per_variant(fp32) | per_framework(fp32, batch) | per_row(fp32)
    values |= per_system(fp32, batch) | precision_counts(summary)
    declared = {v.name for group in AGGREGATES.values() for v in group}
    missing = declared - set(values)
    if missing:  # pragma: no cover - a declaration without its computation
        raise ValueError(f"declared but not computed: {sorted(missing)}")
    out = {}
    for name, (dims, data) in values.items():
        variable = BY_NAME[name]
        attrs = {"description": variable.meaning} if variable.text else {"units": variable.unit}
        out[name] = (dims, data, attrs)
    return out
