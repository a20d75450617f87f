"""What changed between two versions of one framework: per cell, old vs new median with CIs,
the ratio new ÷ old with its CI, and a verdict with the words and levels of every comparison
fwbench makes (fwbench.analysis.comparisons: faster / slower / equivalent / undetermined at
stats.confidence and stats.min_effect_pct). Where every cell both versions measured ran in
several processes, the ratio's standard error comes from the spread between processes (each
version's pooled over those cells, fwbench.analysis.process_spread; no term for the machine's
state between the two sweeps); otherwise (a cell in one process: every low-precision cell,
and the batches bench.multi_process_share leaves to process 0) from a bootstrap of the pooled
timings. Each version's median CI is a bootstrap of its pooled timings. The timings are the
cell files' own: the canary's slow samples are not dropped. Cells measured on different kinds
of node (CPU or GPU model) are not compared: the drift between them is not the framework's."""

from __future__ import annotations

import math
import os
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from fwbench.analysis.comparisons import Estimate, Levels, judge
from fwbench.analysis.estimators import log_ratio_se, median_ci
from fwbench.analysis.process_spread import cell_sigma, log_ratio_spread, pooled_sigma
from fwbench.io.atomic import atomic_path, write_text
from fwbench.io.cell_file import read_cell
from fwbench.io.comparisons_file import EQUIVALENT, FASTER, SLOWER
from fwbench.io.dims import CELL_DIMS, STATUS_ABSENT, STATUS_OK, CellKey
from fwbench.rng import seeded_rng

NODE_ATTRS = ("cpu_model", "gpu_model")  # a version is compared only on one kind of node


@dataclass
class Version:
    """One version's cell: its framework version, status and each process's warm timings."""

    version: str
    status: str
    node: str  # the measuring node's kind: CPU and GPU model
    processes: list[np.ndarray] = field(default_factory=list)

    @property
    def pooled(self) -> np.ndarray:
        return np.concatenate(self.processes)

    @property
    def by_process(self) -> np.ndarray:
        """processes × timings, NaN-padded."""
        width = max(len(p) for p in self.processes)
        return np.array(
            [np.pad(p, (0, width - len(p)), constant_values=np.nan) for p in self.processes]
        )


def _load(paths: Iterable[str | os.PathLike]) -> dict[tuple, Version]:
    """{(framework, mode, arch, precision, batch): Version}: a cell measured in several processes
    (bench.processes) is one entry (a failed process fails it, as in
    fwbench.analysis.processes)."""
    cells: dict[tuple, Version] = {}
    seen: set[tuple] = set()
    for path in paths:
        ds = read_cell(path)
        key = CellKey.of(ds.attrs).values()  # in CELL_DIMS order; float32 where unnamed
        position = (*key, int(ds.attrs.get("process", 0)))
        if position in seen:
            raise ValueError(
                f"two cells for {'/'.join(map(str, key))} process {position[-1]}, one of them "
                f"{path}"
            )
        seen.add(position)
        node = " + ".join(m for m in (ds.attrs.get(a, "") for a in NODE_ATTRS) if m)
        cell = cells.setdefault(key, Version(str(ds.attrs["framework_version"]), STATUS_OK, node))
        if ds.attrs["status"] != STATUS_OK:
            cell.status = ds.attrs["status"]
        cell.processes.append(np.asarray(ds["latency_s"].values, dtype=float))
    return cells


def _spreads(cells: dict[tuple, Version]) -> dict[tuple, tuple[float, int, int]] | None:
    """Each cell's (σ, processes, dof) between processes, pooled over `cells` (one version's
    compared cells); None unless every one ran in at least two processes."""
    if not cells or min(len(cell.processes) for cell in cells.values()) < 2:
        return None
    group_sigma, dof = pooled_sigma([cell.by_process for cell in cells.values()])
    return {key: (*cell_sigma(cell.by_process, group_sigma), dof) for key, cell in cells.items()}


def _estimate(old: Version, new: Version, spreads, levels: Levels, key: tuple) -> Estimate:
    """log(old median ÷ new median): above 0, the new version is faster."""
    value = math.log(np.nanmedian(old.pooled) / np.nanmedian(new.pooled))
    if spreads is not None:
        sigma, dof = log_ratio_spread(spreads)
        return Estimate(value, sigma, dof, "between processes (Student's t)")
    rng = seeded_rng(levels.seed, f"ratio/{key}")
    se = log_ratio_se(old.pooled, new.pooled, levels.resamples, rng)
    return Estimate(value, se, math.inf, "bootstrap of the pooled timings (normal)")


def _side(row: dict, side: str, cell: Version | None, levels: Levels, key: tuple) -> None:
    row[f"{side}_version"] = cell.version if cell else ""
    row[f"{side}_status"] = cell.status if cell else STATUS_ABSENT
    low = high = median = math.nan
    if cell and cell.status == STATUS_OK:
        median = float(np.nanmedian(cell.pooled))
        rng = seeded_rng(levels.seed, f"{side}/{key}")
        low, high = median_ci(cell.pooled, levels.confidence, levels.resamples, rng)
    row[f"{side}_median_s"] = median
    row[f"{side}_ci_low_s"], row[f"{side}_ci_high_s"] = low, high


def compare(
    old_paths: Iterable[str | os.PathLike],
    new_paths: Iterable[str | os.PathLike],
    levels: Levels,
) -> pd.DataFrame:
    """One row per cell present in either version; ratio = new median ÷ old median (below 1,
    faster) with its CI at levels.confidence, p_difference, p_equivalence and the verdict of
    the new version (fwbench.analysis.comparisons.judge)."""
    old, new = _load(old_paths), _load(new_paths)
    both = [k for k in set(old) & set(new) if old[k].status == new[k].status == STATUS_OK]
    spreads = [_spreads({k: side[k] for k in both}) for side in (old, new)]
    rows = []
    for key in sorted(set(old) | set(new), key=str):
        row = dict(zip(CELL_DIMS, key, strict=True))
        _side(row, "old", old.get(key), levels, key)
        _side(row, "new", new.get(key), levels, key)
        if key in both and old[key].node != new[key].node:
            row |= _not_compared(
                f"not compared (measured on other nodes: {old[key].node or 'unknown'} and "
                f"{new[key].node or 'unknown'})"
            )
        elif key in both:
            pair = None if None in spreads else [found[key] for found in spreads]
            row |= _verdict(_estimate(old[key], new[key], pair, levels, key), levels)
        else:
            row |= _not_compared(f"not compared (old {_status(old, key)}, new {_status(new, key)})")
        rows.append(row)
    table = pd.DataFrame(rows)
    table["min_effect_pct"] = levels.min_effect_pct
    return table


def _verdict(estimate: Estimate, levels: Levels) -> dict:
    low, high, p_difference, p_equivalence, verdict = judge(estimate, levels)
    return dict(
        ratio=math.exp(-estimate.log_speedup),
        ratio_ci_low=1 / high,
        ratio_ci_high=1 / low,
        p_difference=p_difference,
        p_equivalence=p_equivalence,
        verdict=verdict,
        method=estimate.method,
    )


def _not_compared(reason: str) -> dict:
    nan = math.nan
    return dict(
        ratio=nan,
        ratio_ci_low=nan,
        ratio_ci_high=nan,
        p_difference=nan,
        p_equivalence=nan,
        verdict=reason,
        method="",
    )


def _status(cells: dict[tuple, Version], key: tuple) -> str:
    return cells[key].status if key in cells else STATUS_ABSENT


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
                f"p = {row['p_difference']:.2g})"
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
    colours = {FASTER: "tab:green", SLOWER: "tab:red", EQUIVALENT: "tab:blue"}
    fig, ax = plt.subplots(figsize=(7, 0.3 * max(len(shown), 4) + 1.5), layout="constrained")
    for y, row in enumerate(shown.itertuples()):
        colour = colours.get(row.verdict, "tab:gray")
        err = [[row.ratio - row.ratio_ci_low], [row.ratio_ci_high - row.ratio]]
        ax.errorbar(row.ratio, y, xerr=err, fmt="o", color=colour, capsize=3)
    effect = 1 + float(table["min_effect_pct"].iloc[0]) / 100 if len(table) else 1.05
    ax.axvline(1.0, color="black", linewidth=1)
    ax.axvspan(1 / effect, effect, color="0.9", zorder=0, label="± stats.min_effect_pct")
    ax.set_yticks(range(len(shown)), labels)
    ax.set_xlabel("new median ÷ old median (< 1 is faster)")
    framework = table["framework"].iloc[0] if len(table) else ""
    versions = (
        f"{table['old_version'].iloc[0]} → {table['new_version'].iloc[0]}" if len(table) else ""
    )
    ax.set_title(
        f"{framework} {versions}: new ÷ old per cell (green faster, red slower, blue "
        "equivalent, grey undetermined)"
    )
    ax.legend(loc="lower right")
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=150)
    plt.close(fig)
