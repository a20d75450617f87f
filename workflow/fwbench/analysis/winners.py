"""The winner of each row (every cell coordinate but the variant's: arch and batch), within a
scope (compiled variants only, or all), as variables of the summary over (row dims, scope).

The fastest unflagged variant by pace (the rounds' median where the rounds measured the row,
fwbench.analysis.rounds; else the cell's median) is compared with each other unflagged one
(fwbench.analysis.comparisons: the rival as baseline, the fastest as candidate):

- 'winner': every rival is decided slower (faster verdict for the fastest);
- 'equivalent': every rival is decided slower or equivalent, some equivalent
  (winner_contenders names the fastest and the equivalent ones);
- 'undetermined': some rival is neither (winner_contenders names the fastest and every rival
  not decided slower; the runner-up's ratio CI says what the data allow);
- 'only': a single unflagged variant; 'none': no unflagged variant measured.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from fwbench.analysis.comparisons import Cells, Comparison, Levels, compare
from fwbench.io.comparisons_file import EQUIVALENT, FASTER, ROW_DIMS, WINNER_RIVALRY
from fwbench.io.dims import EAGER_MODE, CellKey

SCOPES = ("compiled", "all")  # winners among compiled variants, and among all variants
WINNER, EQUIVALENT_FIRST, UNDETERMINED_FIRST, ONLY, NONE = (
    "winner",
    "equivalent",
    "undetermined",
    "only",
    "none",
)
NUMBERS = {
    "winner_fastest_median_s": "s",
    "winner_runner_up_median_s": "s",
    "winner_runner_up_ratio": "1",
    "winner_ratio_ci_low": "1",
    "winner_ratio_ci_high": "1",
    "winner_p_value": "1",
    "winner_candidates": "1",
    "winner_decided": "1",
}
TEXT = {
    "winner_verdict": "winner | equivalent | undetermined | only | none (fwbench.analysis.winners)",
    "winner": "the declared winner ('' unless winner or only)",
    "winner_fastest": "the fastest unflagged variant (by the rounds' median where they ran)",
    "winner_runner_up": "the second fastest",
    "winner_contenders": "the fastest and every rival not decided slower than it",
    "winner_excluded": "variants left out of the contest: their cells are flagged",
}
MEANINGS = {
    "winner_runner_up_ratio": "the fastest's speedup over the runner-up (the comparison's)",
    "winner_ratio_ci_low": "lower end of that ratio's CI (at stats.confidence)",
    "winner_ratio_ci_high": "upper end of that ratio's CI",
    "winner_p_value": "two-sided p of the fastest against the runner-up (no difference)",
    "winner_decided": "rivals decided (slower than the fastest, or equivalent to it)",
}


def _label(key: CellKey) -> str:
    return f"{key.framework}/{key.mode}"


def _contest(
    cells: Cells, members: list[CellKey], levels: Levels
) -> tuple[dict[str, Any], list[Comparison]]:
    """One contest's values (NUMBERS and TEXT but the exclusions) and its comparisons."""
    ranked = sorted(members, key=cells.pace)
    values: dict[str, Any] = {name: math.nan for name in NUMBERS} | {n: "" for n in TEXT}
    values["winner_candidates"] = len(ranked)
    if not ranked:
        return values | {"winner_verdict": NONE}, []
    fastest = ranked[0]
    values |= {"winner_fastest": _label(fastest), "winner_fastest_median_s": cells.median(fastest)}
    if len(ranked) == 1:
        name = _label(fastest)
        return values | {"winner_verdict": ONLY, "winner": name, "winner_contenders": name}, []
    found = [compare(cells, WINNER_RIVALRY, rival, fastest, levels) for rival in ranked[1:]]
    verdicts = [c.verdict for c in found]
    contenders = [fastest] + [c.baseline for c in found if c.verdict != FASTER]
    runner_up = found[0]
    values |= {
        "winner_runner_up": _label(runner_up.baseline),
        "winner_runner_up_median_s": cells.median(runner_up.baseline),
        "winner_runner_up_ratio": runner_up.speedup,
        "winner_ratio_ci_low": runner_up.ci_low,
        "winner_ratio_ci_high": runner_up.ci_high,
        "winner_p_value": runner_up.p_difference,
        "winner_decided": sum(v in (FASTER, EQUIVALENT) for v in verdicts),
        "winner_contenders": ", ".join(_label(k) for k in contenders),
    }
    if all(v == FASTER for v in verdicts):
        return values | {"winner_verdict": WINNER, "winner": _label(fastest)}, found
    first = EQUIVALENT_FIRST if all(v in (FASTER, EQUIVALENT) for v in verdicts) else None
    return values | {"winner_verdict": first or UNDETERMINED_FIRST}, found


def _rows(coords: dict[str, Any]) -> list[tuple]:
    return [tuple(row) for row in np.ndindex(*(len(coords[d]) for d in ROW_DIMS))]


def winner_variables(
    cells: Cells, ok: Iterable[CellKey], flagged: set[CellKey], levels: Levels
) -> tuple[dict[str, Any], list[Comparison]]:
    """The winner_* variables over (ROW_DIMS, scope) from the `ok` cells not `flagged`, and
    every rivalry compared; a row's flagged variants are listed in winner_excluded."""
    coords = cells.coords
    shape = tuple(len(coords[d]) for d in ROW_DIMS) + (len(SCOPES),)
    out = {n: np.full(shape, np.nan) for n in NUMBERS} | {
        n: np.full(shape, "", dtype=object) for n in TEXT
    }
    by_row: dict[tuple, list[CellKey]] = {}
    for key in ok:
        by_row.setdefault(key.row, []).append(key)
    found: dict[tuple, Comparison] = {}
    for index in _rows(coords):
        row = tuple(coords[d][i] for d, i in zip(ROW_DIMS, index, strict=True))
        for s, scope in enumerate(SCOPES):
            members = [k for k in by_row.get(row, []) if scope == "all" or k.mode != EAGER_MODE]
            values, compared = _contest(cells, [k for k in members if k not in flagged], levels)
            values["winner_excluded"] = ", ".join(_label(k) for k in members if k in flagged)
            for name, value in values.items():
                out[name][(*index, s)] = value
            found |= {(c.baseline, c.candidate): c for c in compared}  # once per pair
    dims = (*ROW_DIMS, "scope")
    variables = {name: (dims, values, _attrs(name, levels)) for name, values in out.items()}
    return variables, list(found.values())


def _attrs(name: str, levels: Levels) -> dict[str, str]:
    if name in NUMBERS:
        return {"units": NUMBERS[name]} | (
            {"description": MEANINGS[name]} if name in MEANINGS else {}
        )
    if name == "winner_verdict":
        return {"description": _verdict_description(levels)}
    return {"description": TEXT[name]}


def _verdict_description(levels: Levels) -> str:
    return (
        f"'{WINNER}': every rival is slower than the fastest (the CI at {levels.confidence} of "
        f"their ratio excludes 1, and the ratio is at least 1 + {levels.min_effect_pct}%); "
        f"'{EQUIVALENT_FIRST}': every rival slower or equivalent (its ratio's CI within "
        f"±{levels.min_effect_pct}%); '{UNDETERMINED_FIRST}': a rival is neither "
        "(winner_contenders); 'only': one unflagged variant; 'none': no unflagged variant"
    )
