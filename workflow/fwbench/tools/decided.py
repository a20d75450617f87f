"""How much of a sweep's comparisons decide, and how narrow their CIs are, per batch and kind.

    python -m fwbench decided RESULTS [--precision float32]

RESULTS is a sweep's results/ directory. For each batch and kind of comparison
(results/summary/comparisons.csv: winner, compile, deployment, precision), and for each batch
over every kind, prints the comparisons, the share decided (faster or slower), the median CI
half-width (exp(half the width in log) − 1) and how many took their ratio from the rounds (the
method column) rather than from cells measured minutes apart. The command decides nothing.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from fwbench.analysis.rounds import METHOD as ROUNDS_METHOD
from fwbench.tools.agreement import comparisons, report


def lines(frame: pd.DataFrame) -> list[str]:
    """One line per (batch, kind) and one per batch over every kind."""
    found = []
    for batch, at_batch in frame.groupby(level="batch"):
        for kind, rows in [("every kind", at_batch), *at_batch.groupby(level="kind")]:
            from_rounds = int((rows["method"] == ROUNDS_METHOD).sum())
            found.append(f"{report(f'b{batch} {kind}', rows)}; from the rounds: {from_rounds}")
    return found


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("results", type=Path, metavar="RESULTS")
    parser.add_argument("--precision", help="one precision's rows only (e.g. float32)")


def run(args: argparse.Namespace) -> int:
    print("\n".join(lines(comparisons(args.results, None, None, args.precision))))
    return 0
