"""A system's results: its figures (in the order of FIGURE_TITLES), the winners at the table
batch, and the statistics tables (latency, compile speedup, efficiency, winners)."""

from __future__ import annotations

from fwbench.present import catalog
from fwbench.present.format import MISSING, latency_us, p_value, times
from fwbench.present.report.context import ReportContext, SystemPart
from fwbench.present.report.markdown import embedded_tables, link
from fwbench.present.tables import markdown_table

RESULT_TABLES = tuple(entry.name for entry in catalog.TABLES if entry.in_results)
# The order and titles of the figures the report shows; a figure not listed comes last.
FIGURE_TITLES = catalog.titles(catalog.FIGURES)
WINNERS_HEADER = [
    "arch",
    "among",
    "verdict",
    "winner / tied",
    "fastest",
    "median µs",
    "runner-up",
    "median µs",
    "runner-up ÷ fastest",
    "p (Holm)",
]


def figures_section(context: ReportContext, part: SystemPart) -> str:
    if not part.figures:
        return ""
    order = list(FIGURE_TITLES)
    ranked = sorted(
        part.figures,
        key=lambda p: (order.index(p.stem) if p.stem in order else len(order), p.stem),
    )
    parts = ["## Figures\n"]
    for figure in ranked:
        title = FIGURE_TITLES.get(figure.stem, figure.stem)
        parts.append(f"### {title}\n\n![{title}]({link(figure, context.report_dir)})\n")
    return "\n".join(parts)


def winners_section(context: ReportContext, part: SystemPart) -> str:
    stats, batch = part.stats, part.view.table_batch
    rows = [
        _winner_row(stats.sel(arch=arch, batch=batch, scope=scope), arch, scope)
        for arch in stats["arch"].values
        for scope in stats["scope"].values
    ]
    return (
        f"## Winners at batch {batch}\n\n"
        "Among all variants and among compiled ones only, flagged cells left out. A *winner* "
        "is faster than every other unflagged variant both significantly and by at least "
        f"{stats.attrs.get('stats_min_effect_pct', MISSING)}% in median; a *tie* names the "
        "variants for which either is not so. Every batch, and which cells were left out: "
        "the winners table below.\n\n" + markdown_table(WINNERS_HEADER, rows)
    )


def _winner_row(row, arch: str, scope: str) -> list:
    fastest = row["winner_fastest_median_s"].item()
    runner_up = row["winner_runner_up_median_s"].item()
    verdict = row["winner_verdict"].item()
    named = row["winner"].item() if verdict in ("winner", "only") else row["winner_tied"].item()
    return [
        arch,
        scope,
        verdict,
        named or MISSING,
        row["winner_fastest"].item() or MISSING,
        latency_us(fastest),
        row["winner_runner_up"].item() or MISSING,
        latency_us(runner_up),
        times(row["winner_runner_up_ratio"].item()),
        p_value(row["winner_p_holm"].item()),
    ]


def statistics_tables_section(context: ReportContext, part: SystemPart) -> str:
    return embedded_tables(part.tables, RESULT_TABLES, "## Statistics tables\n")
