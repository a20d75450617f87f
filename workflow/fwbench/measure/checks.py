"""Cross-checks run once per framework, in that framework's own process.

- equivalence: each (architecture, mode, precision) output against the float64 numpy reference,
  from the same seeded weights and input, held to its error bound (the row's `bound`):
  float32's is the configured tolerance, a low precision's its rounding-error bound
  (fwbench.model.precision_bound, whose derivation the row's `basis` names); a static
  quantization's row also counts the stored activation values at a limit of their integer
  range (`saturated` of `saturated_of`: clipped at the calibrated range, which the bound does
  not cover); `seconds` is what the row cost the job (build, the scales' reading, the run);
- FLOPs: the framework's own counter against the analytic cost model (fwbench.model.cost).

The equivalence rows have the columns of fwbench.io.checks_file, which writes, merges and
reads their file; the FLOP rows are written and merged by write_csv and merge_csv below.

A model that fails to build or run becomes a row that says so (pass False, the message in
`error` or `note`), never a crashed job. The framework is imported through frameworks.load
only (an artifact of a runtime mode runs in its runtime, frameworks.load_inference).
"""

from __future__ import annotations

import csv
import math
import os
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from fwbench import frameworks
from fwbench.io.artifact_file import artifact_of, read_manifest
from fwbench.io.atomic import atomic_open
from fwbench.io.checks_file import BOUND
from fwbench.model import reference
from fwbench.model.cost import cost
from fwbench.model.precision_bound import error_bound, quantization_bound
from fwbench.model.specs import build_spec
from fwbench.model.weights import make_input, make_weights
from fwbench.precisions import FLOAT32, QUANTIZED

TOLERANCE_BASIS = "equivalence.tolerance (config)"  # float32's bound: the configured tolerance
FLOPS_COLUMNS = (
    "arch",
    "framework",
    "mode",
    "batch",
    "analytic_flops",
    "analytic_total_flops",
    "counter_flops",
    "ratio",
    "ratio_total",
    "compared_with",
    "within_5pct",
    "note",
)
# A counter within this fraction of the analytic matmul FLOPs agrees with the cost model.
FLOPS_AGREEMENT = 0.05
CHECK_DEVICE = "cpu"
# A deployment runtime takes its threads explicitly (never its default); a check is not timed.
CHECK_RUNTIME_THREADS = 1


def _error_text(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


def _check_request(framework: str, modes: Sequence[str], batch: int) -> None:
    """Bad configuration is an error of the caller, not a failed row."""
    if not modes:
        raise ValueError(f"no modes given for {framework}")
    for mode in modes:
        frameworks.check_framework_mode(framework, mode)
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise ValueError(f"batch must be a positive integer, got {batch!r}")


def _run_once(runner: Any, x: np.ndarray) -> np.ndarray:
    output = runner(runner.prepare(x))
    runner.sync(output)
    return runner.to_numpy(output)


def _runner(
    framework: str,
    adapter: Any,
    spec: Any,
    weights: Any,
    mode: str,
    artifacts: Mapping[tuple[str, ...], str] | None,
    arch: str,
    precision: str = FLOAT32,
) -> Any:
    """The mode's runner in `precision`: built from the weights, or an export mode's artifact
    of that precision loaded."""
    if not frameworks.is_export_mode(framework, mode):
        return adapter.build(spec, weights, mode, CHECK_DEVICE, precision=precision)
    manifest = (artifacts or {}).get((arch, mode, precision))
    if manifest is None:
        raise ValueError(f"{framework}/{mode} on {arch} in {precision}: no artifact manifest given")
    device = read_manifest(manifest)["device"]
    if frameworks.runtime_of(framework, mode):  # a deployment runtime runs the artifact
        adapter = frameworks.load_inference(framework, mode)
        adapter.set_threads(CHECK_RUNTIME_THREADS)
    # A quantized artifact's runner holds the weights too: where its constants cannot be read
    # back (torch's AOTInductor package), its bound's steps redo the quantization from them.
    held = weights if precision in QUANTIZED else None
    return adapter.build(
        spec, held, mode, device, artifact=artifact_of(manifest), precision=precision
    )


def artifacts_by_cell(manifests: Iterable[str]) -> dict[tuple[str, str, str], str]:
    """(arch, mode, precision) → the artifact manifest's path, from the manifests themselves
    (a manifest before precision is float32's)."""
    found = {}
    for path in manifests:
        manifest = read_manifest(path)
        key = (manifest["arch"], manifest["mode"], manifest.get("precision", FLOAT32))
        found[key] = str(path)
    return found


def equivalence_rows(
    framework: str,
    archs: Sequence[str],
    dims: Mapping[str, Mapping[str, Any]],
    seed: int,
    batch: int,
    tolerance: float,
    modes: Sequence[str],
    artifacts: Mapping[tuple[str, ...], str] | None = None,
    precisions: Mapping[str, Mapping[str, Sequence[str]]] | None = None,
) -> list[dict[str, Any]]:
    """One row per (arch, mode, precision): the framework's output vs the reference; float32
    for every mode, and the low precisions `precisions[arch][mode]` names.

    An export mode runs its artifact, `artifacts[(arch, mode, precision)]` (the manifest's
    path), on the device it was exported for; a failed export is a failed row with the
    export's error. `pass` is True when the normwise relative error (reference.max_errors) is
    at most the row's `bound`: `tolerance` in float32, the rounding-error bound of the model
    in a low precision (its `basis` says how it was made); a NaN/inf output or a failure to
    build or run never passes. The rows' columns: fwbench.io.checks_file.COLUMNS.
    """
    _check_request(framework, modes, batch)
    if not tolerance > 0:
        raise ValueError(f"tolerance must be positive, got {tolerance!r}")
    try:
        adapter, load_error = frameworks.load(framework), ""
    except Exception as error:  # e.g. the framework is not installed: every row says so
        adapter, load_error = None, _error_text(error)
    rows = []
    for arch in archs:
        spec = build_spec(arch, dict(dims.get(arch, {})))
        weights = make_weights(spec, seed)
        x = make_input(spec, batch, seed)
        expected = reference.forward(spec, weights, x)
        for mode in modes:
            for precision in (FLOAT32, *(precisions or {}).get(arch, {}).get(mode, ())):
                row = {"arch": arch, "framework": framework, "mode": mode}
                row |= _bound(spec, precision, tolerance, expected.size)
                start = time.perf_counter()
                try:
                    if adapter is None:
                        raise RuntimeError(f"loading the {framework} adapter failed: {load_error}")
                    runner = _runner(
                        framework, adapter, spec, weights, mode, artifacts, arch, precision
                    )
                    if precision in QUANTIZED:  # its bound comes from the artifact's scales
                        row |= _quantized_bound(runner, x, expected.size)
                    row |= _compared(_run_once(runner, x), expected, row[BOUND])
                except Exception as error:
                    row |= {"max_abs_err": math.nan, "max_rel_err": math.nan, "pass": False}
                    row["error"] = _error_text(error)
                row["seconds"] = time.perf_counter() - start  # what the row cost the job
                rows.append(row)
    return rows


def _bound(spec: Any, precision: str, tolerance: float, outputs: int) -> dict[str, Any]:
    """A row's precision, error bound and its basis: the configured tolerance in float32, the
    model's rounding-error bound over its `outputs` values in a low precision."""
    row = {"precision": precision, "saturated": math.nan, "saturated_of": math.nan}
    if precision == FLOAT32:
        return row | {BOUND: tolerance, "basis": TOLERANCE_BASIS}
    if precision in QUANTIZED:
        unread = "the quantization scales: not read (the artifact did not load)"
        return row | {BOUND: math.nan, "basis": unread}
    bound = error_bound(spec, precision, outputs)
    return row | {BOUND: bound.value, "basis": bound.basis()}


def _quantized_bound(runner: Any, x: np.ndarray, outputs: int) -> dict[str, Any]:
    """A quantized artifact's bound, from its own scales at the check's input, and its stored
    activations' values at a limit (none stored by a dynamic quantization: 0 of 0)."""
    found = runner.quantization_roundings(runner.prepare(x))
    bound = quantization_bound(found.steps, outputs)
    return {
        BOUND: bound.value,
        "basis": bound.basis(),
        "saturated": found.saturated,
        "saturated_of": found.stored,
    }


def _compared(output: np.ndarray, expected: np.ndarray, bound: float) -> dict[str, Any]:
    abs_err, rel_err = reference.max_errors(output, expected)
    passed = bool(math.isfinite(rel_err) and rel_err <= bound)
    return {"max_abs_err": abs_err, "max_rel_err": rel_err, "pass": passed, "error": ""}


def within_agreement(counter: float, analytic: float) -> bool:
    """Whether a counter's FLOPs are within FLOPS_AGREEMENT (5%, inclusive) of the analytic
    count; the 1e-9 slack keeps a count of exactly 1.05x from failing on float rounding."""
    return abs(counter - analytic) <= FLOPS_AGREEMENT * analytic * (1 + 1e-9)


def _counter_columns(
    runner: Any, x: np.ndarray, matmul: int, total: int, scope: str
) -> dict[str, Any]:
    """`scope` is what the framework's counter counts ("matmul": GEMMs and convolutions only;
    "all": elementwise ops too); the 5% agreement is judged against the matching figure."""
    counted, note = runner.counter_flops(runner.prepare(x))
    if counted is None:
        return {"note": note or "the framework reports no FLOP count"}
    if not math.isfinite(counted) or counted <= 0:
        return {"note": f"counter returned {counted!r}: not comparable; {note}"}
    return {
        "counter_flops": float(counted),
        "ratio": counted / matmul,
        "ratio_total": counted / total,
        "compared_with": scope,
        "within_5pct": within_agreement(counted, matmul if scope == "matmul" else total),
        "note": note,
    }


def flops_rows(
    framework: str,
    archs: Sequence[str],
    dims: Mapping[str, Mapping[str, Any]],
    seed: int,
    batch: int,
    modes: Sequence[str],
) -> list[dict[str, Any]]:
    """One row per (arch, mode): the framework's FLOP counter vs the analytic cost.

    `ratio` compares the counter with the analytic matmul FLOPs, `ratio_total` with all
    analytic FLOPs; `within_5pct` uses the one the adapter's COUNTER_SCOPE says its counter
    counts (`compared_with`). Where there is no comparable count,
    those columns are None (empty in the CSV) and `note` says why. Export modes have no row:
    an artifact has no counter of its own, and computes the function the other modes count.
    """
    _check_request(framework, modes, batch)
    try:
        adapter, load_error = frameworks.load(framework), ""
    except Exception as error:
        adapter, load_error = None, _error_text(error)
    rows = []
    for arch in archs:
        spec = build_spec(arch, dict(dims.get(arch, {})))
        analytic = cost(spec, batch)
        weights = make_weights(spec, seed)
        x = make_input(spec, batch, seed)
        for mode in (m for m in modes if not frameworks.is_export_mode(framework, m)):
            row: dict[str, Any] = dict.fromkeys(FLOPS_COLUMNS)
            row |= {"arch": arch, "framework": framework, "mode": mode, "batch": batch}
            row |= {"analytic_flops": analytic.matmul_flops}
            row["analytic_total_flops"] = analytic.flops
            try:
                if adapter is None:
                    raise RuntimeError(f"loading the {framework} adapter failed: {load_error}")
                runner = adapter.build(spec, weights, mode, CHECK_DEVICE)
                scope = adapter.COUNTER_SCOPE
                row |= _counter_columns(runner, x, analytic.matmul_flops, analytic.flops, scope)
            except Exception as error:
                row["note"] = f"no count: {_error_text(error)}"
            rows.append(row)
    return rows


def write_csv(
    rows: Iterable[Mapping[str, Any]], path: str | os.PathLike, columns: Sequence[str]
) -> None:
    """Rows as CSV with exactly `columns` (None and NaN are written as an empty field),
    atomically."""
    rows = [{key: _field(value) for key, value in row.items()} for row in rows]
    for row in rows:
        if set(row) != set(columns):
            raise ValueError(f"row keys {sorted(row)} are not the columns {list(columns)}")

    with atomic_open(path, newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(columns))
        writer.writeheader()
        writer.writerows(rows)


def _field(value: Any) -> Any:
    return None if isinstance(value, float) and math.isnan(value) else value


def merge_csv(
    paths: Sequence[str | os.PathLike],
    out: str | os.PathLike,
    systems: Sequence[str] | None = None,
) -> None:
    """Concatenate CSVs into `out` (one header), atomically; with `systems` (one per path), each
    row starts with its file's system. The header is the widest input's; a file written before
    a column existed (its columns a subset of it: one framework's checks rerun after an
    upgrade) leaves that column empty; any other difference is refused, naming the file."""
    if not paths:
        raise ValueError("merge_csv needs at least one input CSV")
    if systems is not None and len(systems) != len(paths):
        raise ValueError(f"{len(systems)} systems for {len(paths)} check files")
    tables = []
    for path in paths:
        with open(path, newline="") as handle:
            rows = list(csv.reader(handle))
        if not rows:
            raise ValueError(f"{path} is empty: not even a header")
        tables.append(rows)
    header = max((rows[0] for rows in tables), key=len)
    data: list[list[str]] = []
    for index, (path, rows) in enumerate(zip(paths, tables, strict=True)):
        if not set(rows[0]) <= set(header):
            raise ValueError(f"{path} has columns {rows[0]}, not a subset of {header}")
        prefix = [systems[index]] if systems is not None else []
        for row in rows[1:]:
            by_name = dict(zip(rows[0], row, strict=False))
            data.append(prefix + [by_name.get(column, "") for column in header])

    with atomic_open(out, newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow((["system"] if systems is not None else []) + header)
        writer.writerows(data)
