"""What changed between two versions of one framework: per cell, old vs new median with CIs,
the ratio, and a Mann–Whitney verdict that needs both significance and a practical size."""

from __future__ import annotations

import math
import os
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from fwbench.analysis.estimators import median_ci, ratio_of_medians_ci
from fwbench.analysis.significance import holm, mann_whitney_p
from fwbench.io.atomic import atomic_path, write_text
from fwbench.io.cell_file import read_cell
from fwbench.io.dims import CELL_DIMS, STATUS_ABSENT, STATUS_OK
from fwbench.rng import seeded_rng

FASTER, SLOWER, SAME = "faster", "slower", "no significant change"


@dataclass(frozen=True)
class CompareSettings:
    threshold_pct: float = 5.0
    alpha: float = 0.01
    confidence: float = 0.95
    resamples: int = 2000
    seed: int = 0


def _load(paths: Iterable[str | os.PathLike]) -> dict[tuple, tuple[str, str, np.ndarray]]:
    """{(framework, mode, arch, batch): (version, status, warm latencies)}: a cell measured in
    several processes (bench.processes) is one entry, its processes' timings pooled (a failed
    process fails it, as in fwbench.analysis.processes)."""
    cells: dict[tuple, tuple[str, str, np.ndarray]] = {}
    seen: set[tuple] = set()
    for path in paths:
        ds = read_cell(path)
        key = tuple(ds.attrs[name] for name in CELL_DIMS)
        position = (*key, int(ds.attrs.get("process", 0)))
        if position in seen:
            raise ValueError(
                f"two cells for {'/'.join(map(str, key))} process {position[-1]}, one of them "
                f"{path}"
            )
        seen.add(position)
        version, status = str(ds.attrs["framework_version"]), ds.attrs["status"]
        latency = ds["latency_s"].values
        if key in cells:
            _, earlier_status, earlier = cells[key]
            status = earlier_status if earlier_status != STATUS_OK else status
            latency = np.concatenate([earlier, latency])
        cells[key] = (version, status, latency)
    return cells


def verdict(ratio: float, p_adjusted: float, settings: CompareSettings) -> str:
    """faster/slower only when the change is significant AND at least the practical threshold."""
    if math.isnan(ratio) or math.isnan(p_adjusted):
        return SAME
    if p_adjusted < settings.alpha and abs(ratio - 1) * 100 >= settings.threshold_pct:
        return FASTER if ratio < 1 else SLOWER
    return SAME


def compare(
    old_paths: Iterable[str | os.PathLike],
    new_paths: Iterable[str | os.PathLike],
    settings: CompareSettings,
) -> pd.DataFrame:
    """One row per cell present in either version; ratio = new median / old median (< 1 is
    faster). p-values are Holm-corrected across the table."""
    old, new = _load(old_paths), _load(new_paths)
    rows = []
    for key in sorted(set(old) | set(new), key=str):
        row = dict(zip(CELL_DIMS, key, strict=True))
        sides = {"old": old.get(key), "new": new.get(key)}
        for side, cell in sides.items():
            row[f"{side}_version"] = cell[0] if cell else ""
            row[f"{side}_status"] = cell[1] if cell else STATUS_ABSENT
            low = high = median = math.nan
            if cell and cell[1] == STATUS_OK:
                median = float(np.nanmedian(cell[2]))
                rng = seeded_rng(settings.seed, f"{side}/{key}")
                low, high = median_ci(cell[2], settings.confidence, settings.resamples, rng)
            row[f"{side}_median_s"] = median
            row[f"{side}_ci_low_s"], row[f"{side}_ci_high_s"] = low, high
        comparable = all(cell and cell[1] == STATUS_OK for cell in sides.values())
        row["ratio"] = row["new_median_s"] / row["old_median_s"] if comparable else math.nan
        if comparable:
            rng = seeded_rng(settings.seed, f"ratio/{key}")
            row["ratio_ci_low"], row["ratio_ci_high"] = ratio_of_medians_ci(
                sides["new"][2], sides["old"][2], settings.confidence, settings.resamples, rng
            )
            row["p_value"] = mann_whitney_p(sides["new"][2], sides["old"][2])
        else:
            row["ratio_ci_low"] = row["ratio_ci_high"] = row["p_value"] = math.nan
        rows.append(row)
    table = pd.DataFrame(rows)
    if table.empty:
        return table
    table["p_holm"] = np.where(table["p_value"].notna(), holm(table["p_value"].tolist()), np.nan)
    table["threshold_pct"] = settings.threshold_pct
    table["verdict"] = [
        verdict(ratio, p, settings) if not math.isnan(ratio) else _incomparable(row)
        for ratio, p, (_, row) in zip(
            table["ratio"], table["p_holm"], table.iterrows(), strict=True
        )
    ]
    return table


def _incomparable(row: pd.Series) -> str:
    return f"not compared (old {row['old_status']}, new {row['new_status']})"


def summary_markdown(tables: dict[str, pd.DataFrame]) -> str:
    """A short table per framework: how many cells got faster, slower, or did not change."""
    if not tables:
        return (
            "# Changes since the previous version\n\nNo earlier framework version has results "
            "on disk: nothing to compare.\n"
        )
    lines = ["# Changes since the previous version", ""]
    for framework, table in tables.items():
        versions = f"{table['old_version'].iloc[0]} → {table['new_version'].iloc[0]}"
        counts = table["verdict"].value_counts()
        lines += [
            f"## {framework} {versions}",
            "",
            "| verdict | cells |",
            "|---|---|",
            *(f"| {name} | {count} |" for name, count in counts.items()),
            "",
        ]
        changed = table[table["verdict"].isin([FASTER, SLOWER])]
        for _, row in changed.iterrows():
            lines.append(
                f"- {row['mode']}/{row['arch']}/b{row['batch']}: {row['verdict']}, "
                f"×{row['ratio']:.3f} (CI {row['ratio_ci_low']:.3f}–{row['ratio_ci_high']:.3f}, "
                f"Holm p = {row['p_holm']:.2g})"
            )
        lines.append("")
    return "\n".join(lines)


def write_csv(table: pd.DataFrame, path: str | os.PathLike) -> None:
    write_text(table.to_csv(index=False), path)


def draw_ratios(table: pd.DataFrame, path: str | os.PathLike) -> None:
    """Ratio (new ÷ old median) per cell with its CI; significant changes highlighted."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown = table[table["ratio"].notna()]
    labels = [f"{r.mode}/{r.arch}/b{r.batch}" for r in shown.itertuples()]
    colours = {FASTER: "tab:green", SLOWER: "tab:red"}
    fig, ax = plt.subplots(figsize=(7, 0.3 * max(len(shown), 4) + 1.5), layout="constrained")
    for y, row in enumerate(shown.itertuples()):
        colour = colours.get(row.verdict, "tab:gray")
        err = [[row.ratio - row.ratio_ci_low], [row.ratio_ci_high - row.ratio]]
        ax.errorbar(row.ratio, y, xerr=err, fmt="o", color=colour, capsize=3)
    threshold = float(table["threshold_pct"].iloc[0]) / 100 if len(table) else 0.05
    ax.axvline(1.0, color="black", linewidth=1)
    ax.axvspan(1 - threshold, 1 + threshold, color="0.9", zorder=0, label="practical threshold")
    ax.set_yticks(range(len(shown)), labels)
    ax.set_xlabel("new median ÷ old median (< 1 is faster)")
    framework = table["framework"].iloc[0] if len(table) else ""
    versions = (
        f"{table['old_version'].iloc[0]} → {table['new_version'].iloc[0]}" if len(table) else ""
    )
    ax.set_title(f"{framework} {versions}: latency ratio per cell (green faster, red slower)")
    ax.legend(loc="lower right")
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=150)
    plt.close(fig)
