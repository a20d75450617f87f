"""The findings a report opens with, generated from stats.nc: per architecture the winner at the
table batch and its margin (or the tie), where compiling pays and where it does not, each
framework's largest part of the time (the attribution), the range of roofline efficiency, and
what failed or was flagged. Every number is copied, as the table below prints it, from the
table or figure the finding names."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import xarray as xr

from fwbench.analysis.flags import untrusted
from fwbench.analysis.significance import ONLY, TIE, WINNER
from fwbench.io.dims import CELL_DIMS, STATUS_FAILED, STATUS_OK
from fwbench.io.variables import V
from fwbench.present.attribution import attributed_cells
from fwbench.present.figure_data import FigureInputs, cell_value, variants
from fwbench.present.format import fixed, latency_us, ratio
from fwbench.present.report.context import ReportContext, SystemPart


def _winner(stats: xr.Dataset, arch: str, batch: int) -> str:
    row = stats.sel(arch=arch, batch=batch, scope="all")
    verdict = row["winner_verdict"].item()
    fastest, runner_up = (row[f"winner_{k}_median_s"].item() for k in ("fastest", "runner_up"))
    if verdict in (WINNER, ONLY):
        margin = (
            f", {ratio(runner_up, fastest)} faster than "
            f"{row['winner_runner_up'].item()} ({fixed(runner_up, 1e6)} µs)"
            if verdict == WINNER
            else " (the only trusted variant)"
        )
        return f"`{arch}`: **{row['winner'].item()}** wins in {fixed(fastest, 1e6)} µs{margin}"
    if verdict == TIE:
        return (
            f"`{arch}`: a tie among {row['winner_tied'].item()} (fastest {fixed(fastest, 1e6)} µs)"
        )
    return f"`{arch}`: no trusted variant to compare"


def winner_findings(stats: xr.Dataset, batch: int) -> list[str]:
    lines = [_winner(stats, str(arch), batch) for arch in stats["arch"].values]
    return [f"Winners at batch {batch} (winners table): " + "; ".join(lines) + "."]


def _speedups(stats: xr.Dataset, framework: str, mode: str) -> dict[str, list[tuple]]:
    """A compiled mode's cells as faster, slower or tied against eager (CI of the speedup)."""
    found: dict[str, list[tuple]] = {"faster": [], "slower": [], "tied": []}
    for arch in stats["arch"].values:
        for batch in stats["batch"].values:
            cell = (framework, mode, str(arch), int(batch))
            value = float(cell_value(stats, V.speedup_vs_eager, cell))
            if not math.isfinite(value):
                continue
            low, high = (float(cell_value(stats, f"speedup_ci_{e}", cell)) for e in ("low", "high"))
            kind = "faster" if low > 1 else "slower" if high < 1 else "tied"
            found[kind].append((value, float(cell_value(stats, "break_even_iterations", cell))))
    return found


def _span(values: list[float], digits: int, unit: str = "") -> str:
    low, high = min(values), max(values)
    if low == high:
        return f"{fixed(low, digits=digits)}{unit}"
    return f"{fixed(low, digits=digits)}–{fixed(high, digits=digits)}{unit}"


def compile_findings(stats: xr.Dataset) -> list[str]:
    lines = []
    for framework, mode in variants(stats, compiled_only=True):
        found = _speedups(stats, framework, mode)
        if not any(found.values()):
            continue
        parts = []
        if found["faster"]:
            evens = [b for _, b in found["faster"] if math.isfinite(b)]
            calls = "call" if evens and max(evens) == 1 else "calls"
            paid = f", paid back after {_span(evens, 0)} {calls}" if evens else ""
            parts.append(
                f"faster than eager in {len(found['faster'])} cells "
                f"({_span([s for s, _ in found['faster']], 2, '×')}{paid})"
            )
        if found["slower"]:
            slower = _span([s for s, _ in found["slower"]], 2, "×")
            parts.append(f"slower in {len(found['slower'])} ({slower})")
        if found["tied"]:
            parts.append(f"no significant difference in {len(found['tied'])}")
        lines.append(f"`{framework}/{mode}`: " + ", ".join(parts))
    if not lines:
        return []
    return ["Compiling (compile speedup table): " + "; ".join(lines) + "."]


def attribution_findings(stats: xr.Dataset, batch: int) -> list[str]:
    cells = attributed_cells(stats, batch)
    if not cells:
        return []
    lines = []
    for framework in dict.fromkeys(cell[0] for cell in cells):
        own = [c for c in cells if c[0] == framework]
        largest = Counter(str(cell_value(stats, "dominant_part", c)) for c in own)
        part, count = largest.most_common(1)[0]
        lines.append(f"`{framework}`: {part} in {count} of {len(own)} cells{_rest_of(stats, own)}")
    return [
        f"Largest part of the time at batch {batch} (Where the time goes): "
        + "; ".join(lines)
        + "."
    ]


def _rest_of(stats: xr.Dataset, cells: list[tuple]) -> str:
    """Where the rest is largest among `cells`, how much of it lies outside the framework
    (both numbers in the Where the time goes table); '' where it is not known."""
    value = lambda name, cell: float(cell_value(stats, name, cell))  # noqa: E731
    known = [
        c for c in cells if "rest_outside_s" in stats and np.isfinite(value("rest_outside_s", c))
    ]
    if not known:
        return ""
    cell = max(known, key=lambda c: value("residual_s", c))
    rest, outside = (latency_us(value(name, cell)) for name in ("residual_s", "rest_outside_s"))
    return (
        f" (the largest rest, `{cell[0]}/{cell[1]}` {cell[2]}: {rest} µs, of which {outside} µs "
        "outside the framework)"
    )


def efficiency_findings(stats: xr.Dataset) -> list[str]:
    efficiency = stats[V.efficiency].transpose(*CELL_DIMS).values
    ok = stats["status"].transpose(*CELL_DIMS).values == STATUS_OK
    found = np.isfinite(efficiency) & ok & ~untrusted(stats["flags"].transpose(*CELL_DIMS).values)
    if not found.any():
        return []
    coords = [stats[d].values for d in CELL_DIMS]
    values = np.where(found, efficiency, np.nan)
    named = {}
    for end, flat in (("low", np.nanargmin(values)), ("high", np.nanargmax(values))):
        index = np.unravel_index(flat, efficiency.shape)
        cell = "/".join(str(c[i]) for c, i in zip(coords, index, strict=True))
        named[end] = f"{fixed(efficiency[index], digits=3)} (`{cell}`)"
    return [
        f"Roofline efficiency (efficiency table) ranges from {named['low']} to {named['high']} "
        "of the cache-aware roof (flagged cells left out)."
    ]


def problem_findings(stats: xr.Dataset) -> list[str]:
    status = stats["status"].values
    failed = int((status == STATUS_FAILED).sum())
    flags = Counter(
        flag for text in stats["flags"].values.ravel() for flag in str(text).split(",") if flag
    )
    flagged = ", ".join(f"{count} {flag}" for flag, count in sorted(flags.items()))
    return [
        f"Failed and flagged (Failed and flagged cells): {failed} "
        f"{'cell' if failed == 1 else 'cells'} failed; "
        + (f"flags: {flagged}." if flagged else "no cell flagged.")
    ]


def findings_section(context: ReportContext, part: SystemPart) -> str:
    stats = part.stats
    batch = FigureInputs(stats).batch
    findings = [
        *winner_findings(stats, batch),
        *compile_findings(stats),
        *attribution_findings(stats, batch),
        *efficiency_findings(stats),
        *problem_findings(stats),
    ]
    heading = "## Findings" + (f": system `{part.name}`" if part.name else "")
    return heading + "\n\n" + "\n".join(f"- {line}" for line in findings) + "\n"
