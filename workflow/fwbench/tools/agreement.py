"""Do two independent sweeps of one config agree on their comparisons?

    python -m fwbench agreement RESULTS_A RESULTS_B [--kind winner] [--batch 32]
        [--precision float32] [--confidence 0.95]

RESULTS_A and RESULTS_B are the results/ directories of two sweeps (fresh directories, the same
code and config). Over the comparisons both made (results/summary/comparisons.csv: the same
kind, row, baseline and candidate), prints how often their log speedups agree within the joint
uncertainty, |Δ log speedup| ≤ q·√(se_A² + se_B²) with q the two-sided quantile at the level the
verdicts use (Student's t at the smaller dof where both have one); how many verdicts reverse
(faster in one, slower in the other); how many are decided in one and undetermined in the other;
and, per sweep, the share decided and the median CI half-width (exp(half the width in log) − 1).
An honest CI covers the other sweep's point ratio only about 83 % of the time (two independent
estimates of one ratio), so the difference is tested, not the point. The command decides nothing.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats as scipy_stats

from fwbench.io.comparisons_file import DECIDED, FASTER, SLOWER, read_comparisons_table

# A comparison's identity; a comparisons file written before precision was a dimension is
# float32's.
KEY = ["system", "kind", "arch", "precision", "batch", "baseline", "candidate"]


def comparisons(
    results: Path, kind: str | None, batch: int | None, precision: str | None
) -> pd.DataFrame:
    """A sweep's comparisons (results/summary/comparisons.csv), those selected, keyed by KEY."""
    frame = read_comparisons_table(results / "summary" / "comparisons.csv")
    if "precision" not in frame.columns:
        frame = frame.assign(precision="float32")
    if kind:
        frame = frame[frame["kind"] == kind]
    if batch is not None:
        frame = frame[frame["batch"] == batch]
    if precision:
        frame = frame[frame["precision"] == precision]
    return frame.set_index([k for k in KEY if k in frame.columns])


def _half_width_pct(frame: pd.DataFrame) -> float:
    widths = np.log(frame["ci_high"] / frame["ci_low"]).dropna()
    return float(np.expm1(np.median(widths) / 2) * 100) if len(widths) else math.nan


def _quantile(confidence: float, dof_a: float, dof_b: float) -> float:
    dof = min(dof_a, dof_b)
    law = scipy_stats.norm if not math.isfinite(dof) else scipy_stats.t(dof)
    return float(law.ppf((1 + confidence) / 2))


def agreement(a: pd.DataFrame, b: pd.DataFrame, confidence: float) -> dict[str, float]:
    """The figures of the module text over the comparisons both sweeps made."""
    for name, frame in (("A", a), ("B", b)):
        if frame.index.has_duplicates:
            raise ValueError(f"sweep {name} repeats a comparison of the same key: {KEY}")
    a, b = a.align(b, join="inner", axis=0)
    usable = a["se_log"].notna() & b["se_log"].notna()
    a, b = a[usable], b[usable]
    delta = np.abs(np.log(a["speedup"]) - np.log(b["speedup"]))
    joint = np.sqrt(a["se_log"] ** 2 + b["se_log"] ** 2)
    q = np.array([_quantile(confidence, x, y) for x, y in zip(a["dof"], b["dof"], strict=True)])
    va, vb = a["verdict"], b["verdict"]
    one_decided = va.isin(DECIDED) != vb.isin(DECIDED)
    return {
        "shared": len(a),
        "agree": int((delta <= q * joint).sum()),
        "reversed": int(
            (((va == FASTER) & (vb == SLOWER)) | ((va == SLOWER) & (vb == FASTER))).sum()
        ),
        "decided_in_one_only": int(one_decided.sum()),
        "same_verdict": int((va == vb).sum()),
    }


def report(name: str, frame: pd.DataFrame) -> str:
    """One sweep's line: its comparisons, the share decided, the median CI half-width."""
    decided = frame["verdict"].isin(DECIDED).sum()
    counts = frame["verdict"].value_counts().to_dict()
    return (
        f"{name}: {len(frame)} comparisons, {decided} decided ({_pct(decided, len(frame))}), "
        f"median CI half-width {_half_width_pct(frame):.1f}%, verdicts {counts}"
    )


def _pct(part: float, whole: float) -> str:
    return f"{100 * part / whole:.0f}%" if whole else "—"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("a", type=Path, metavar="RESULTS_A")
    parser.add_argument("b", type=Path, metavar="RESULTS_B")
    parser.add_argument("--kind", help="winner, compile or deployment (default: every kind)")
    parser.add_argument("--batch", type=int, help="one batch only (e.g. the table batch)")
    parser.add_argument("--precision", help="one precision's rows only (e.g. float32)")
    parser.add_argument("--confidence", type=float, default=0.95, help="stats.confidence")


def run(args: argparse.Namespace) -> int:
    a, b = (comparisons(path, args.kind, args.batch, args.precision) for path in (args.a, args.b))
    print(report(f"A {args.a}", a))
    print(report(f"B {args.b}", b))
    found = agreement(a, b, args.confidence)
    shared = found["shared"]
    print(
        f"shared comparisons: {shared} (only in A: {len(a) - shared}, only in B: {len(b) - shared})"
    )
    print(
        f"  agree within the joint uncertainty: {found['agree']} ({_pct(found['agree'], shared)})"
    )
    print(f"  same verdict: {found['same_verdict']} ({_pct(found['same_verdict'], shared)})")
    print(f"  reversed (faster in one, slower in the other): {found['reversed']}")
    print(f"  decided in one, undetermined in the other: {found['decided_in_one_only']}")
    return 0
