"""The report in order, findings first: the header, the findings
(fwbench.present.report.findings: every number in a table or figure below), then in brief the
cross-checks' verdict and what each deployment path does not support (one line each), the
systems side by side, then per system its results (figures, winners, statistics tables), its
failed and flagged cells, its deployment paths (support matrix, export costs), its measurement
quality, its hardware and method; then training,
changes since the previous version, the cross-checks in full, and the statistics file. One
context, loaded once, feeds every section."""

from __future__ import annotations

from fwbench.io.atomic import write_text
from fwbench.present.report.attribution import attribution_section
from fwbench.present.report.checks import checks_section, verdict_line
from fwbench.present.report.compare import compare_section
from fwbench.present.report.context import (
    PathLike,
    ReportContext,
    ReportInputs,
    SystemPart,
    load_context,
)
from fwbench.present.report.deployment import deployment_section
from fwbench.present.report.findings import findings_section
from fwbench.present.report.hardware import hardware_section
from fwbench.present.report.header import header_section
from fwbench.present.report.markdown import demote
from fwbench.present.report.method import method_section
from fwbench.present.report.precision import precision_section
from fwbench.present.report.problems import problems_section
from fwbench.present.report.quality import quality_section
from fwbench.present.report.results import (
    figures_section,
    statistics_tables_section,
    winners_section,
)
from fwbench.present.report.startup_costs import startup_section
from fwbench.present.report.support import unsupported_line
from fwbench.present.report.systems import systems_section
from fwbench.present.report.training import training_section

IN_BRIEF = "Checks in brief"


def render(context: ReportContext) -> str:
    """The report's Markdown from its context."""
    sections = opening(context)
    sections.append(systems_section(context))
    sections += [system_part(context, part) for part in context.parts]
    sections += [
        training_section(context),
        compare_section(context),
        checks_section(context),
        footer_section(context),
    ]
    return "\n".join(section for section in sections if section)


def opening(context: ReportContext) -> list[str]:
    """The report's first sections, which the HTML report's findings page shows too
    (`html_page`): the header, each system's findings, then the cross-checks' verdict and what
    the paths do not support, a line each."""
    sections = [header_section(context)]
    sections += [findings_section(context, part) for part in context.parts]
    return sections + [in_brief_section(context)]


def in_brief_section(context: ReportContext) -> str:
    """The cross-checks' verdict and the paths' refusals, under their own heading (so that
    neither reads as one system's finding); '' where there is neither."""
    lines = [line for line in (verdict_line(context), unsupported_line(context)) if line]
    return f"## {IN_BRIEF}\n\n" + "\n".join(lines) if lines else ""


def system_part(context: ReportContext, part: SystemPart) -> str:
    """One system's sections; under a `# System` heading when there are systems."""
    per_system = (
        figures_section,
        winners_section,
        statistics_tables_section,
        attribution_section,
        problems_section,
        deployment_section,
        precision_section,
        startup_section,
        quality_section,
        hardware_section,
        method_section,
    )
    texts = [section(context, part) for section in per_system]
    body = "\n".join(text for text in texts if text)
    if part.name is None:
        return body
    heading = f"# System `{part.name}`" + (f": {part.described}" if part.described else "")
    return demote(heading + "\n" + body, 1)


def footer_section(context: ReportContext) -> str:
    return f"\n---\nStatistics of every cell: `{context.stats_csv_name}` ({context.cells} rows).\n"


def render_report(inputs: ReportInputs, report_path: PathLike) -> str:
    """The report's Markdown; figure links are relative to `report_path`'s directory."""
    return render(load_context(inputs, report_path))


def write_report(inputs: ReportInputs, report_path: PathLike) -> str:
    """Render the report and write it atomically to `report_path`; returns the text."""
    text = render_report(inputs, report_path)
    write_text(text, report_path)
    return text
