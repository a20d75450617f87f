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

The variables, their dimensions, units and meanings, the scopes and the verdicts' words are
declared in fwbench.io.variables (WINNERS, WINNER_DIMS, SCOPES, WINNER_VERDICTS).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from fwbench.analysis.comparisons import Cells, Comparison, Levels, compare
from fwbench.io.comparisons_file import EQUIVALENT, FASTER, ROW_DIMS, WINNER_RIVALRY
from fwbench.io.dims import EAGER_MODE, CellKey
from fwbench.io.variables import (
    EQUIVALENT_FIRST,
    NONE,
    ONLY,
    SCOPE_ALL,
    SCOPES,
    UNDETERMINED_FIRST,
    WINNER,
    WINNER_DIMS,
    WINNERS,
    V,
    Variable,
)

# The winner_* variables (declared in fwbench.io.variables.WINNERS), numbers and text.
NUMBERS = tuple(v.name for v in WINNERS if not v.text)
TEXT = tuple(v.name for v in WINNERS if v.text)


def _label(key: CellKey) -> str:
    return f"{key.framework}/{key.mode}"


def contest(
    cells: Cells, members: list[CellKey], levels: Levels
) -> tuple[dict[str, Any], list[Comparison]]:
    """One contest's values (NUMBERS and TEXT but the exclusions) and its comparisons."""
    ranked = sorted(members, key=cells.pace)
    values: dict[str, Any] = {name: math.nan for name in NUMBERS} | {n: "" for n in TEXT}
    values[V.winner_candidates] = len(ranked)
    if not ranked:
        return values | {V.winner_verdict: NONE}, []
    fastest = ranked[0]
    values |= {V.winner_fastest: _label(fastest), V.winner_fastest_median_s: cells.pace(fastest)}
    if len(ranked) == 1:
        name = _label(fastest)
        return values | {V.winner_verdict: ONLY, V.winner: name, V.winner_contenders: name}, []
    found = [compare(cells, WINNER_RIVALRY, rival, fastest, levels) for rival in ranked[1:]]
    verdicts = [c.verdict for c in found]
    contenders = [fastest] + [c.baseline for c in found if c.verdict != FASTER]
    runner_up = found[0]
    values |= {
        V.winner_runner_up: _label(runner_up.baseline),
        V.winner_runner_up_median_s: cells.pace(runner_up.baseline),
        V.winner_runner_up_ratio: runner_up.speedup,
        V.winner_ratio_ci_low: runner_up.ci_low,
        V.winner_ratio_ci_high: runner_up.ci_high,
        V.winner_p_value: runner_up.p_difference,
        V.winner_decided: sum(v in (FASTER, EQUIVALENT) for v in verdicts),
        V.winner_contenders: ", ".join(_label(k) for k in contenders),
    }
    if all(v == FASTER for v in verdicts):
        return values | {V.winner_verdict: WINNER, V.winner: _label(fastest)}, found
    first = EQUIVALENT_FIRST if all(v in (FASTER, EQUIVALENT) for v in verdicts) else None
    return values | {V.winner_verdict: first or UNDETERMINED_FIRST}, found


def _rows(coords: dict[str, Any]) -> list[tuple]:
    return [tuple(row) for row in np.ndindex(*(len(coords[d]) for d in ROW_DIMS))]


def winner_variables(
    cells: Cells, ok: Iterable[CellKey], flagged: set[CellKey], levels: Levels
) -> tuple[dict[str, Any], list[Comparison]]:
    """The winner_* variables over WINNER_DIMS (ROW_DIMS, scope) from the `ok` cells not
    `flagged`, and every rivalry compared; a row's flagged variants are listed in
    winner_excluded."""
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
            members = [k for k in by_row.get(row, []) if scope == SCOPE_ALL or k.mode != EAGER_MODE]
            values, compared = contest(cells, [k for k in members if k not in flagged], levels)
            values[V.winner_excluded] = ", ".join(_label(k) for k in members if k in flagged)
            for name, value in values.items():
                out[name][(*index, s)] = value
            found |= {(c.baseline, c.candidate): c for c in compared}  # once per pair
    attrs = {v.name: _attrs(v, levels) for v in WINNERS}
    variables = {name: (WINNER_DIMS, values, attrs[name]) for name, values in out.items()}
    return variables, list(found.values())


def _attrs(variable: Variable, levels: Levels) -> dict[str, str]:
    """A winner variable's declared unit and meaning; the verdict's with this run's levels."""
    meaning = variable.meaning
    if variable.name == V.winner_verdict:
        meaning += (
            f"; here stats.confidence {levels.confidence}, stats.min_effect_pct "
            f"{levels.min_effect_pct}%"
        )
    return ({} if variable.text else {"units": variable.unit}) | {"description": meaning}
