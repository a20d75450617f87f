"""The findings a report opens with, generated from stats.nc: per architecture the winner at the
table batch and its margin (or the contenders, equivalent or undetermined), where compiling pays
and where it does not, each framework's largest part of the time (the attribution), the range
of roofline efficiency, per low precision whether it pays and at what accuracy cost, and what
failed or was flagged. Each finding is one short sentence, its answer first, naming at most
`markdown.NAMED_AT_MOST` cells (more are counted: the table it names lists them). Every number
is copied, as the table below prints it, from the table or figure the finding names."""

from __future__ import annotations

import math

from fwbench.io.stats_file import StatsView
from fwbench.io.variables import EQUIVALENT_FIRST, NONE, ONLY, SCOPE, SCOPE_ALL, WINNER, V
from fwbench.present.format import fixed, latency_us, speedup_with_ci
from fwbench.present.report.context import ReportContext, SystemPart
from fwbench.present.report.markdown import named
from fwbench.present.report.precision import precision_findings
from fwbench.present.report.support import refused_keys
from fwbench.present.report.training import training_findings
from fwbench.present.tables import RATIO_WITH_CI


def _winner(view: StatsView, arch: str, batch: int) -> str:
    """The architecture's winner at `batch`, first: who wins and by how much, or the
    contenders (counted where there are more than a finding names)."""
    row = view.ds.sel(arch=arch, batch=batch, **{SCOPE: SCOPE_ALL})
    verdict, name, contenders = (
        row[n].item() for n in (V.winner_verdict, V.winner, V.winner_contenders)
    )
    median = f"{fixed(row[V.winner_fastest_median_s].item(), 1e6)} µs"
    if verdict == NONE:
        return f"`{arch}`: no trusted variant to compare"
    if verdict == ONLY:
        return f"`{arch}`: **{name}** in {median}, the only trusted variant"
    ratio = speedup_with_ci(*(row[n].item() for n in RATIO_WITH_CI))
    runner_up = f"{row[V.winner_runner_up].item()} at {ratio}× its median"
    if verdict == WINNER:
        return f"`{arch}`: **{name}** wins in {median}, {runner_up}"
    fastest = f"{row[V.winner_fastest].item()} ({median})"
    among = named(str(contenders).split(", "), "the winners table")
    if verdict == EQUIVALENT_FIRST:
        return f"`{arch}`: equivalent within ±{_min_effect(view)}: {among}, fastest {fastest}"
    return f"`{arch}`: undetermined among {among}: fastest {fastest}, {runner_up}"


def _min_effect(view: StatsView) -> str:
    return f"{view.attrs['stats_min_effect_pct']:g}%"


def decided(view: StatsView) -> str:
    """How many comparisons at the table batch the data decided, and how wide the winner
    rivalries' CIs are: the findings' line and the winners section's."""

    def count(name: str) -> int:
        return int(view.of_system(name))

    total, rivals = count(V.comparisons_total), count(V.rivalries_total)
    if not total:
        return "no comparisons"
    half_width = view.of_system(V.rivalry_half_width_pct)
    rivalries = (
        f"; of the {rivals} rivals against their row's fastest, {count(V.rivalries_decided)} "
        f"decided, their ratio CIs ±{fixed(half_width)}% (median half-width)"
        if rivals
        else ""
    )
    return (
        f"{total - count(V.comparisons_undetermined)} of {total} comparisons decided "
        f"({count(V.comparisons_different)} faster or slower, "
        f"{count(V.comparisons_equivalent)} equivalent), "
        f"{count(V.comparisons_undetermined)} undetermined{rivalries}"
    )


def winner_findings(view: StatsView, batch: int) -> list[str]:
    """One finding per architecture: its winner at the table batch."""
    where = f"(Winners at batch {batch})"
    return [f"{_winner(view, arch, batch)} {where}." for arch in view.archs()]


def _span(low: float, high: float, digits: int, unit: str = "") -> str:
    if low == high:
        return f"{fixed(low, digits=digits)}{unit}"
    return f"{fixed(low, digits=digits)}–{fixed(high, digits=digits)}{unit}"


def _compile_line(view: StatsView, framework: str, mode: str) -> str:
    """A compiled mode against eager over its cells: how many faster, slower, equivalent,
    undetermined."""

    def value(name: str) -> float:
        return view.of_variant(name, framework, mode)

    parts = []
    if faster := int(value(V.compile_faster_cells)):
        low, high = value(V.break_even_min), value(V.break_even_max)
        calls = "call" if high == 1 else "calls"
        paid = f", paid back after {_span(low, high, 0)} {calls}" if math.isfinite(low) else ""
        span = _span(value(V.compile_faster_min), value(V.compile_faster_max), 2, "×")
        parts.append(f"faster than eager in {faster} cells ({span}{paid})")
    if slower := int(value(V.compile_slower_cells)):
        span = _span(value(V.compile_slower_min), value(V.compile_slower_max), 2, "×")
        parts.append(f"slower in {slower} ({span})")
    if equivalent := int(value(V.compile_equivalent_cells)):
        parts.append(f"equivalent in {equivalent} (CI within ±{_min_effect(view)})")
    if undetermined := int(value(V.compile_undetermined_cells)):
        parts.append(f"undetermined in {undetermined} (the data cannot tell)")
    if not parts:
        return ""
    return f"`{framework}/{mode}` is " + ", ".join(parts) + " (Compile speedup table)."


def compile_findings(view: StatsView) -> list[str]:
    """One finding per compiled mode: against eager, over its cells."""
    lines = [_compile_line(view, f, m) for f, m in view.variants(compiled_only=True)]
    return [line for line in lines if line]


def attribution_findings(view: StatsView, batch: int) -> list[str]:
    """One finding per framework: the largest part of its time at the table batch."""
    lines = []
    for framework in view.ds["framework"].values.tolist():

        def value(name: str, framework=framework):
            return view.of_framework(name, framework)

        cells = int(value(V.framework_attributed_cells))
        if not cells:
            continue
        top, count = value(V.framework_top_part), int(value(V.framework_top_part_cells))
        rest = ""
        if value(V.framework_largest_rest_cell):
            rest = (
                f"; the largest rest, `{value(V.framework_largest_rest_cell)}`: "
                f"{latency_us(value(V.framework_largest_rest_s))} µs, of which "
                f"{latency_us(value(V.framework_largest_rest_outside_s))} µs outside the "
                "framework"
            )
        lines.append(
            f"`{framework}`: {top} is the largest part of the time in {count} of {cells} cells "
            f"at batch {batch}{rest} (Where the time goes)."
        )
    return lines


def efficiency_findings(view: StatsView) -> list[str]:
    if not math.isfinite(view.of_system(V.efficiency_low)):
        return []
    low, high = (
        f"{fixed(view.of_system(name), digits=3)} (`{view.of_system(cell)}`)"
        for name, cell in (
            (V.efficiency_low, V.efficiency_low_cell),
            (V.efficiency_high, V.efficiency_high_cell),
        )
    )
    return [
        f"Roofline efficiency ranges from {low} to {high} of the cache-aware roof (Roofline "
        "efficiency table; flagged cells left out)."
    ]


def problem_findings(view: StatsView) -> list[str]:
    """How many cells failed (those their path does not support counted apart: the opening's
    line names them) and which flags were raised."""
    failed = view.failed()
    refused = len(refused_keys(view))
    real = len(failed) - refused
    apart = f", {refused} more not supported by their path" if refused else ""
    flagged = view.of_system(V.flag_counts)
    return [
        f"{real} {'cell' if real == 1 else 'cells'} failed{apart}; "
        + (f"flags: {flagged}" if flagged else "no cell flagged")
        + " (Failed and flagged cells)."
    ]


def findings_section(context: ReportContext, part: SystemPart) -> str:
    view = part.view
    batch = view.table_batch
    findings = [
        *winner_findings(view, batch),
        f"Comparisons at batch {batch} (Winners at batch {batch}): {decided(view)}.",
        *compile_findings(view),
        *attribution_findings(view, batch),
        *efficiency_findings(view),
        *precision_findings(view, context.equivalence, part.name),
        *training_findings(context, part.name),
        *problem_findings(view),
    ]
    heading = "## Findings" + (f": system `{part.name}`" if part.name else "")
    return heading + "\n\n" + "\n".join(f"- {line}" for line in findings) + "\n"
