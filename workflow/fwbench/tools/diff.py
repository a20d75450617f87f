"""Two runs of the stages after the cells (aggregate → stats → tables → report) over the same
results/cells, by two versions of the code: do they write the same numbers?

    python -m fwbench diff OLD_RESULTS NEW_RESULTS

OLD_RESULTS and NEW_RESULTS are results/ directories. Prints, for stats.csv, every column both
have and how many cells differ in it beyond floating-point noise (relative 1e-9), the columns
one has and the other lacks; and, for report.md, the numbers (every decimal token, in order of
appearance) that one report prints and the other does not, with the line they stand in. A
difference is a finding to explain, not a failure: the command decides nothing.
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

KEYS = ["system", "framework", "mode", "arch", "batch"]
NUMBER = re.compile(r"(?<![\w.])[-+]?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?")


def _stats(results: Path) -> pd.DataFrame:
    frame = pd.read_csv(results / "summary" / "stats.csv")
    return frame.set_index([k for k in KEYS if k in frame.columns]).sort_index()


def differing_cells(a: pd.DataFrame, b: pd.DataFrame) -> dict[str, int]:
    """Per column both frames have, how many of their shared rows differ in it (numbers beyond
    a relative 1e-9); only the columns that differ."""
    a, b = a.align(b, join="inner", axis=0)
    differ = {}
    for column in (c for c in a.columns if c in b.columns):
        x, y = a[column], b[column]
        if pd.api.types.is_numeric_dtype(x) and pd.api.types.is_numeric_dtype(y):
            same = np.isclose(x, y, rtol=1e-9, atol=0, equal_nan=True)
        else:
            same = x.fillna("").astype(str).to_numpy() == y.fillna("").astype(str).to_numpy()
        if (~same).any():
            differ[column] = int((~same).sum())
    return differ


def compare_stats(old: Path, new: Path) -> None:
    a, b = _stats(old), _stats(new)
    print(f"stats.csv: {len(a)} cells (old), {len(b)} (new)")
    shared = [c for c in a.columns if c in b.columns]
    print(f"  columns only in old: {sorted(set(a.columns) - set(b.columns)) or 'none'}")
    print(f"  columns only in new: {sorted(set(b.columns) - set(a.columns)) or 'none'}")
    differ = differing_cells(a, b)
    print(f"  {len(shared)} shared columns; differing (cells): {differ or 'none'}")


def _numbers(text: str) -> Counter:
    found: Counter = Counter()
    for line in text.splitlines():
        for token in NUMBER.findall(line):
            found[token.replace(",", "")] += 1
    return found


def _where(text: str, token: str) -> str:
    for line in text.splitlines():
        if token in line.replace(",", ""):
            return line.strip()[:140]
    return ""


def compare_reports(old: Path, new: Path, shown: int = 40) -> None:
    a, b = (path.joinpath("report.md").read_text() for path in (old, new))
    na, nb = _numbers(a), _numbers(b)
    only_old, only_new = na - nb, nb - na
    print(
        f"report.md: {sum(na.values())} numbers (old), {sum(nb.values())} (new); "
        f"{sum(only_old.values())} printed only by old, {sum(only_new.values())} only by new"
    )
    for label, only, text in (("old", only_old, a), ("new", only_new, b)):
        for token, count in list(only.items())[:shown]:
            print(f"  only {label}: {token} ×{count}  | {_where(text, token)}")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("old", type=Path, metavar="OLD_RESULTS")
    parser.add_argument("new", type=Path, metavar="NEW_RESULTS")


def run(args: argparse.Namespace) -> int:
    compare_stats(args.old, args.new)
    compare_reports(args.old, args.new)
    return 0
