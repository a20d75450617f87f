"""A system's results: its figures (in the order of FIGURE_TITLES; under each that draws
whiskers, one sentence on what they are, fwbench.present.intervals), the winners at the table
batch, and the statistics tables (latency, compile speedup, efficiency, winners)."""

from __future__ import annotations

from fwbench.io.variables import SCOPE
from fwbench.present import catalog
from fwbench.present.intervals import whiskers_caption
from fwbench.present.report.context import ReportContext, SystemPart
from fwbench.present.report.findings import decided
from fwbench.present.report.markdown import embedded_tables, link
from fwbench.present.tables import WINNER_HEADER, decision_rule, markdown_table, winner_cells

RESULT_TABLES = tuple(entry.name for entry in catalog.TABLES if entry.in_results)
# The order and titles of the figures the report shows; a figure not listed comes last.
FIGURE_TITLES = catalog.titles(catalog.FIGURES)


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
        if of := catalog.whiskers_of(figure.stem):
            parts.append(whiskers_caption(part.view.attrs, of) + "\n")
    return "\n".join(parts)


def winners_section(context: ReportContext, part: SystemPart) -> str:
    stats, batch = part.stats, part.view.table_batch
    rows = [
        [arch, scope, *winner_cells(stats.sel(arch=arch, batch=batch, **{SCOPE: scope}))]
        for arch in stats["arch"].values
        for scope in stats[SCOPE].values
    ]
    return (
        f"## Winners at batch {batch}\n\n"
        "Among all variants and among compiled ones only, flagged cells left out. "
        + decision_rule(stats.attrs)
        + f" At batch {batch}: {decided(part.view)} (every pair: results/summary/"
        "comparisons.csv). Every batch, and which cells were left out: the winners table "
        "below.\n\n" + markdown_table(["arch", "among", *WINNER_HEADER], rows)
    )


def statistics_tables_section(context: ReportContext, part: SystemPart) -> str:
    return embedded_tables(part.tables, RESULT_TABLES, "## Statistics tables\n")
