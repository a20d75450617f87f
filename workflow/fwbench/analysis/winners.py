"""The winners of each (arch, batch), as variables of the summary (dims arch, batch, scope):
the contests are built here, decided in fwbench.analysis.significance."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import numpy as np

from fwbench.analysis.process_spread import spread_at
from fwbench.analysis.significance import WINNER, Contest, Verdict, decide
from fwbench.io.dims import EAGER_MODE

SCOPES = ("compiled", "all")  # winners among compiled variants, and among all variants
UNITS = {
    "fastest_median_s": "s",
    "runner_up_median_s": "s",
    "p_value": "1",
    "p_holm": "1",
    "candidates": "1",
}


def _variant(framework: str, mode: str) -> str:
    return f"{framework}/{mode}"


def _contests(
    latency: np.ndarray,
    ok: np.ndarray,
    flagged: np.ndarray,
    coords: tuple[list[str], list[str], list[str], list[int]],
    spreads: dict[str, np.ndarray] | None,
) -> tuple[list[Contest], list[str]]:
    """One contest per (arch, batch, scope), in that order, among the variants whose cells
    are `ok` (eager ones only in scope "all"); a flagged variant does not compete and is
    listed, comma-separated, in the second list."""
    frameworks, modes, archs, batches = coords
    contests, excluded = [], []
    for a, b in np.ndindex(len(archs), len(batches)):
        for scope in SCOPES:
            members = [
                (f, m)
                for f in range(len(frameworks))
                for m, mode in enumerate(modes)
                if ok[f, m, a, b] and (scope == "all" or mode != EAGER_MODE)
            ]
            trusted = [(f, m) for f, m in members if not flagged[f, m, a, b]]
            samples = {_variant(frameworks[f], modes[m]): latency[f, m, a, b] for f, m in trusted}
            between = None
            if spreads is not None:
                between = {
                    _variant(frameworks[f], modes[m]): spread_at(spreads, (f, m, a, b))
                    for f, m in trusted
                }
            contests.append(Contest((a, b), scope, samples, between))
            left_out = [
                _variant(frameworks[f], modes[m]) for f, m in members if flagged[f, m, a, b]
            ]
            excluded.append(", ".join(left_out))
    return contests, excluded


def _verdict_columns(verdicts: list[Verdict]) -> dict[str, list[Any]]:
    """The verdicts as columns, one per Verdict field; `tied` as comma-separated text."""
    columns: dict[str, list[Any]] = {}
    for verdict in verdicts:
        row = asdict(verdict)
        row["tied"] = ", ".join(verdict.tied)
        for key, value in row.items():
            columns.setdefault(key, []).append(value)
    return columns


def _verdict_description(alpha: float, min_effect_pct: float) -> str:
    return (
        f"'{WINNER}': fastest by median, and every other variant is significantly slower "
        "(one-sided in the medians' direction: Mann–Whitney U on the timings, or over "
        "processes Student's t on the log ratio of the medians with the spread between "
        "processes pooled over the system's cells; p doubled for that chosen "
        f"direction, Holm-adjusted p < {alpha} across the table) by at least "
        f"{min_effect_pct}% in median; 'tie': winner_tied names the variants that are not; "
        "'only': a single unflagged variant; 'none': no unflagged variant measured"
    )


def winner_variables(
    latency: np.ndarray,
    ok: np.ndarray,
    flagged: np.ndarray,
    coords: tuple[list[str], list[str], list[str], list[int]],
    alpha: float,
    min_effect_pct: float,
    spreads: dict[str, np.ndarray] | None = None,
) -> dict[str, Any]:
    """The winner_* variables, dims (arch, batch, scope), from the warm iterations of the
    cells that are `ok` and not `flagged` (arrays in CELL_DIMS order, repeats last for
    `latency`), tested against the spread between processes where there is one (`spreads`:
    process_spread.cell_spreads); the flagged variants of each row are listed in
    winner_excluded."""
    contests, excluded = _contests(latency, ok, flagged, coords, spreads)
    verdicts = decide(contests, alpha, min_effect_pct)
    shape = (len(coords[2]), len(coords[3]), len(SCOPES))
    dims = ("arch", "batch", "scope")
    out: dict[str, Any] = {}
    for key, values in _verdict_columns(verdicts).items():
        array = np.array(values, dtype=float if key in UNITS else object).reshape(shape)
        attrs = {"units": UNITS[key]} if key in UNITS else {}
        out[f"winner_{key}" if not key.startswith("winner") else key] = (dims, array, attrs)
    out["winner_excluded"] = (
        dims,
        np.array(excluded, dtype=object).reshape(shape),
        {"description": "variants left out of the contest: their cells are flagged"},
    )
    out["winner_verdict"][2]["description"] = _verdict_description(alpha, min_effect_pct)
    ratio = out["winner_runner_up_median_s"][1] / out["winner_fastest_median_s"][1]
    out["winner_runner_up_ratio"] = (
        dims,
        ratio,
        {"units": "1", "description": "the runner-up's median over the fastest's"},
    )
    return out
