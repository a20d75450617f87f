"""A system's low precisions: each low-precision cell (bfloat16, int8, int8_static) against the
same variant in float32 (the speedup, its CI and verdict: stats.nc's precision comparisons,
fwbench.analysis.speedups), and what it cost in accuracy (the checks' normwise error against
the float64 reference beside the model's rounding-error bound, fwbench.model.precision_bound);
a cell that could not run says why. The findings say per precision whether it pays, where it
does not and why (its kernels ran in another dtype, or float32's time is mostly dispatch), and
its accuracy cost."""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import numpy as np
import pandas as pd

from fwbench import frameworks
from fwbench.analysis.flags import FLAG_UPCAST, has_flag
from fwbench.frameworks.kernel_precision import UPCAST_BELOW
from fwbench.io.checks_file import BOUND
from fwbench.io.comparisons_file import EQUIVALENT, FASTER, SLOWER, UNDETERMINED
from fwbench.io.dims import FLOAT32, STATUS_FAILED, STATUS_OK, CellKey
from fwbench.io.stats_file import StatsView
from fwbench.io.variables import V
from fwbench.precisions import BFLOAT16, INT8, INT8_STATIC, QUANTIZED, arithmetic_of
from fwbench.present.figure_data import precision_accuracy
from fwbench.present.format import MISSING, significant, speedup_with_ci
from fwbench.present.report.context import ReportContext, SystemPart
from fwbench.present.report.markdown import NAMED_AT_MOST, named
from fwbench.present.report.support import failure_text, refused_keys, unsupported
from fwbench.present.tables import markdown_table

SECTION = "Precision"
VERDICT_WORDS = (FASTER, SLOWER, EQUIVALENT, UNDETERMINED)
REASON_CHARS = 80  # a failed cell's message here; stats.csv holds it whole
SPEEDUP = (V.speedup_vs_float32, V.speedup_vs_float32_ci_low, V.speedup_vs_float32_ci_high)
# How each precision's model is made, as its users make it.
HOW = {
    BFLOAT16: "the model cast the way each framework's users cast it (torch: the module and "
    "input to `torch.bfloat16`; jax: bf16 parameters and input; tensorflow: Keras's "
    "`bfloat16` dtype policy; ONNX Runtime: the bf16 model its framework exported)",
    INT8: "the float32 model quantized in the export job, by ONNX Runtime's `quantize_dynamic` "
    "for the onnxrt paths (int8 weights, each call's activations in uint8 by that call's range, "
    "products in int32) and by the TFLite converter's dynamic-range quantization for litert "
    "(int8 weights per output channel, activations quantized per call by its hybrid kernels); "
    "operators they leave in float32 show in the kernel shares",
    INT8_STATIC: "the float32 model quantized statically in the export job, every scale "
    "fixed beforehand from a seeded calibration set of 128 inputs (never the check's): by ONNX "
    "Runtime's `quantize_static` in QDQ format for the onnxrt paths (int8 weights, uint8 "
    "activations, MinMax ranges; its optimizer fuses each quantize-dequantize group into an "
    "integer kernel, QLinearConv, QLinearMatMul) and by the TFLite converter's full-integer "
    "quantization with float fallback for litert (a representative dataset; int8 activations "
    "end to end, float32 input and output), and for torch's aoti by PT2E with the x86 "
    "Inductor quantizer (uint8 activations, int8 weights per channel) before AOTInductor "
    "packages it; an activation beyond its calibrated range is "
    "clipped, which the accuracy column shows and the rounding bound does not cover",
}
INTRO = (
    "Each mode that runs {precision} has a cell of its own beside float32's (config "
    "`precision`): {how}, timed as "
    "every other cell and held against its own precision's GEMM peak. Each entry: float32's "
    "median over {precision}'s (above 1, {precision} is faster), its CI at the report's "
    "level and the verdict (`comparisons.csv`, kind `precision`; from the rounds, which "
    "measure both in alternation, where the batch is theirs, else from the system's spread "
    "between processes: the `method` column says which). Accuracy: the largest "
    "error against the float64 reference at the check batch, normwise, beside the model's "
    "rounding-error bound (for int8 and int8_static, from the artifact's own quantization "
    "scales; Cross-checks); for int8_static, the share of the activation values it stored "
    "that sat at a limit of their integer range (clipped at the calibrated range, an error "
    "the bound does not cover, or within half a step of its edge)."
)


def precision_section(context: ReportContext, part: SystemPart) -> str:
    view = part.view
    lows = [p for p in view.precisions() if p != FLOAT32]
    if not lows:
        return ""
    text = f"## {SECTION}\n\n"
    for precision in lows:
        low = view.in_precision(precision)
        text += INTRO.format(precision=precision, how=HOW.get(precision, precision)) + "\n\n"
        text += quantization_choice() + "\n\n" if precision in QUANTIZED else ""
        for batch in _batches(low):
            text += f"**{precision} against float32, batch {batch}:**\n\n"
            text += _speedup_table(low, batch) + "\n"
            text += _kernels_table(low, batch) + "\n"
        text += _accuracy_table(context.equivalence, part.name, precision)
    return text


def quantization_choice() -> str:
    """Which quantization each deployment path runs by default (frameworks.first_quantization,
    config precision.quantization), and why."""
    firsts = [
        f"{framework} {mode}: {first}"
        for framework, modes in frameworks.MODES.items()
        for mode in modes
        if (first := frameworks.first_quantization(framework, mode))
    ]
    return (
        "Each deployment path runs, by default, the quantization its users pick first (config "
        "`precision.quantization: first`, in the order its framework lists them): "
        + ", ".join(firsts)
        + ". Dynamic for ONNX Runtime and LiteRT: one call, no calibration set (ONNX Runtime's "
        "docs advise it for RNNs and transformers; the TFLite post-training guide starts with "
        "it); torch's PT2E is static only. `quantization: all` (config/precision.yaml) runs "
        "both wherever a path has both."
    )


def _kernels_table(view: StatsView, batch: int) -> str:
    """Per variant and architecture: the share of the work that ran in the precision, and
    what the evidence is (the cell's kernel_precision)."""
    archs, rows, bases = view.archs(), [], {}
    for framework, mode in view.variants():
        keys = [CellKey(framework, mode, arch, batch, view.precision) for arch in archs]
        entries = [_share(view, key) for key in keys]
        if any(entry != MISSING for entry in entries):
            rows.append([f"{framework} {mode}", *entries])
            notes = [str(view.value(V.kernel_precision, key)) for key in keys]
            bases[f"{framework} {mode}"] = next((n for n in notes if n), "")
    if not rows:
        return ""
    how = "".join(f"- {variant}: {_how(note)}\n" for variant, note in bases.items() if note)
    return (
        f"**Share of the work that ran in {arithmetic_of(view.precision)}** "
        "(`low_precision_share`; "
        f"**upcast**: below {UPCAST_BELOW:.0%}, the flag `upcast`):\n\n"
        + markdown_table(["variant", *archs], rows)
        + ("\nHow each variant's was seen:\n\n" + how if how else "")
    )


def _share(view: StatsView, key: CellKey) -> str:
    if view.value(V.status, key) != STATUS_OK:
        return MISSING
    share = view.value(V.low_precision_share, key)
    if not math.isfinite(share):
        return "not seen" if view.value(V.kernel_precision, key) else "not examined"
    shown = f"{share:.0%}"
    return f"**upcast**: {shown}" if share < UPCAST_BELOW else shown


def _how(note: str) -> str:
    """The evidence's method and caveats (the parts of a kernel_precision note after its
    figures), the pass's time dropped."""
    parts = note.split("; ")[1:]
    return "; ".join(parts).split(" (the pass took")[0] or note


def _batches(view: StatsView) -> list[int]:
    status = view.ds[V.status]
    return [b for b in view.batches() if (status.sel(batch=b).values != "absent").any()]


def _speedup_table(view: StatsView, batch: int) -> str:
    archs = view.archs()
    rows = []
    for framework, mode in view.variants():
        keys = [CellKey(framework, mode, arch, batch, view.precision) for arch in archs]
        entries = [_entry(view, key) for key in keys]
        if any(entry != MISSING for entry in entries):
            rows.append([f"{framework} {mode}", *entries])
    return markdown_table(["variant", *archs], rows)


def _entry(view: StatsView, key: CellKey) -> str:
    status = view.value(V.status, key)
    if status == STATUS_FAILED:
        if rule := unsupported(*key.variant, key.precision, failure_text(view, key)):
            return f"not supported: {rule.reason}"
        return f"failed: {str(view.value(V.error, key))[:REASON_CHARS]}"
    if status != STATUS_OK:
        return MISSING
    speedup = view.value(V.speedup_vs_float32, key)
    if not math.isfinite(speedup):
        return "float32 did not run"
    ratio = speedup_with_ci(*(view.value(name, key) for name in SPEEDUP))
    return f"{ratio}× {view.value(V.precision_verdict, key)}"


def _accuracy_table(rows: pd.DataFrame | None, system: str | None, precision: str) -> str:
    """Per variant and architecture: the error against float64 and its bound, or FAIL."""
    rows = precision_accuracy(rows, system, precision)
    if rows is None:
        return ""
    archs = list(dict.fromkeys(rows["arch"]))
    table = []
    for (framework, mode), group in rows.groupby(["framework", "mode"], sort=False):
        by_arch = {r.arch: _accuracy(r) for r in group.itertuples()}
        table.append([f"{framework} {mode}", *(by_arch.get(a, MISSING) for a in archs)])
    header = ["variant", *(f"{a}: error (bound)" for a in archs)]
    return f"**{precision}: accuracy against float64**\n\n" + markdown_table(header, table) + "\n"


def _accuracy(row: Any) -> str:
    error = f"{significant(row.max_rel_err)} ({significant(row.bound)})"
    if math.isfinite(row.saturated_share):
        error += f", {_limit_share(row.saturated_share)} at a limit"
    if row.passed:
        return error
    if math.isfinite(float(row.max_rel_err)):
        return f"**beyond its bound**: {error}"
    if unsupported(row.framework, row.mode, row.precision, getattr(row, "error", None)):
        return "not supported"
    return "did not run"


def _limit_share(value: float) -> str:
    """A share of stored values: 0% only where none was at a limit."""
    return "0%" if value == 0 else f"{100 * value:.2g}%"


# ---- the findings: does each low precision pay ------------------------------------------

# A float32 cell whose median is mostly dispatch (ops or launches × the mode's floor) cannot
# gain much from narrower arithmetic: the attribution's dispatch share above this is the reason
# a slower low-precision cell is given.
DISPATCH_BOUND_SHARE = 0.5


def precision_findings(
    view: StatsView, equivalence: pd.DataFrame | None, system: str | None
) -> list[str]:
    """Per low precision, two findings: whether it pays against float32 (its cells' verdicts,
    its largest gain, where it does not pay and why, what could not run) and what it cost in
    accuracy (the Precision section's tables)."""
    lines = []
    for precision in (p for p in view.precisions() if p != FLOAT32):
        low = view.in_precision(precision)
        compared = _compared(low)
        failed = low.failed()
        if not compared and not failed:
            continue
        parts = [_verdicts(low, compared), _best(low, compared), _slower(view, low, compared)]
        parts.append(_not_run(low, failed))
        text = "; ".join(part for part in parts if part)
        lines.append(f"`{precision}` against float32: {text} ({SECTION}).")
        accuracy = _accuracy_finding(precision_accuracy(equivalence, system, precision))
        if accuracy:
            lines.append(f"`{precision}` accuracy: {accuracy} ({SECTION}).")
    return lines


def _not_run(low: StatsView, failed: list[CellKey]) -> str:
    """How many cells failed, and how many more their path does not support."""
    refused = len(refused_keys(low))
    real = len(failed) - refused
    parts = [f"{real} {'cell' if real == 1 else 'cells'} failed"] if real else []
    parts += [f"{refused} not supported by their path"] if refused else []
    return ", ".join(parts)


def _compared(low: StatsView) -> list[CellKey]:
    """The low precision's cells with a speedup over float32."""
    ok = low.status() == STATUS_OK
    return low.keys_where(ok & np.isfinite(low.values(V.speedup_vs_float32).astype(float)))


def _verdicts(low: StatsView, compared: list[CellKey]) -> str:
    """'faster in 5 of 30 cells, slower in 15, ...': the answer, first."""
    counts = Counter(str(low.value(V.precision_verdict, key)) for key in compared)
    words = [word for word in VERDICT_WORDS if counts[word]]
    if not words:
        return f"none of {len(compared)} cells decided"
    first, *rest = words
    shown = [f"{first} in {counts[first]} of {len(compared)} cells"]
    return ", ".join(shown + [f"{word} in {counts[word]}" for word in rest])


def _label(key: CellKey) -> str:
    return f"{key.framework} {key.mode} `{key.arch}` b{key.batch}"


def _best(low: StatsView, compared: list[CellKey]) -> str:
    faster = [k for k in compared if low.value(V.precision_verdict, k) == FASTER]
    if not faster:
        return ""
    best = max(faster, key=lambda k: low.value(V.speedup_vs_float32, k))
    ratio = speedup_with_ci(*(low.value(name, best) for name in SPEEDUP))
    return f"the largest gain {_label(best)}, {ratio}×"


def _slower(view: StatsView, low: StatsView, compared: list[CellKey]) -> str:
    """The slower cells with their reasons; where there are more than a finding names, how
    many have each reason."""
    slower = [k for k in compared if low.value(V.precision_verdict, k) == SLOWER]
    if not slower:
        return ""
    reasons = [_why_slower(view, low, k) for k in slower]
    if len(slower) <= NAMED_AT_MOST:
        return "slower: " + ", ".join(
            f"{_label(k)}{f' ({why})' if why else ''}"
            for k, (_, why) in zip(slower, reasons, strict=True)
        )
    counts = Counter(kind for kind, _ in reasons)
    why = ", ".join(f"{counts[kind]} {kind}" for kind in (UPCAST, DISPATCH_BOUND) if counts[kind])
    table = f"each: the {low.precision} against float32 tables"
    return "the slower ones" + (f": {why}" if why else "") + f" ({table})"


UPCAST, DISPATCH_BOUND = "upcast", "dispatch-bound"


def _why_slower(view: StatsView, low: StatsView, key: CellKey) -> tuple[str, str]:
    """Why a low-precision cell does not pay, where the data say: its kernels ran in another
    dtype (upcast), or float32's time is mostly dispatch, which no arithmetic narrows. The
    reason's kind and its words; ('', '') where the data do not say."""
    if has_flag(np.array([low.value(V.flags, key)]), FLAG_UPCAST)[0]:
        share = low.value(V.low_precision_share, key)
        return UPCAST, f"{UPCAST}: {share:.0%} of its work in {arithmetic_of(low.precision)}"
    twin = CellKey(key.framework, key.mode, key.arch, key.batch, FLOAT32)
    dispatch = view.in_precision(FLOAT32).value(V.dispatch_share, twin)
    if math.isfinite(dispatch) and dispatch >= DISPATCH_BOUND_SHARE:
        return DISPATCH_BOUND, f"{DISPATCH_BOUND}: dispatch is {dispatch:.0%} of float32's median"
    return "", ""


def _accuracy_finding(rows: pd.DataFrame | None) -> str:
    """The range of the errors against float64 and their bounds; those beyond it named."""
    if rows is None:
        return ""
    ran = rows[pd.to_numeric(rows["max_rel_err"], errors="coerce").notna()]
    if ran.empty:
        return ""
    errors = pd.to_numeric(ran["max_rel_err"])
    bounds = pd.to_numeric(ran[BOUND], errors="coerce")
    beyond = ran[~ran["passed"]]
    text = (
        f"error against float64 {_percent(errors.min())}–{_percent(errors.max())} of the "
        f"output's largest value (bounds {_percent(bounds.min())}–{_percent(bounds.max())})"
    )
    text += _saturation_finding(ran)
    if beyond.empty:
        return text + ", every one within its bound"
    names = [f"{r.framework} {r.mode} `{r.arch}`" for r in beyond.itertuples()]
    return text + f", **beyond its bound: {named(names, 'the accuracy table')}**"


def _saturation_finding(rows: pd.DataFrame) -> str:
    """Where a static quantization stored activations: the most of them at a limit of their
    range (clipped at the calibrated range, which the bound does not cover), and where."""
    counted = rows[rows["saturated_share"].notna()]
    if counted.empty:
        return ""
    top = counted.loc[counted["saturated_share"].idxmax()]
    share = float(top["saturated_share"])
    where = f" ({top['framework']} {top['mode']} `{top['arch']}`)" if share > 0 else ""
    return (
        f"; stored activations at a limit of their calibrated range: at most "
        f"{_limit_share(share)}{where}"
    )


def _percent(value: float) -> str:
    return f"{100 * value:.2g}%" if math.isfinite(value) else MISSING
