"""The findings page of the offline HTML report (`snakemake --report`): the opening of
report.md (its header, the cross-checks' verdict, each system's findings) as one HTML document,
made from the same context by the same sections (`document.opening`), so the two reports tell
one story. The report lists it first (category "1. Findings") and its landing text
(workflow/report/workflow.rst) links it. `markdown_html` renders the few Markdown constructs
those sections write; nothing here computes a number.
"""

from __future__ import annotations

import re
from html import escape

from fwbench.io.atomic import write_text
from fwbench.present.report.context import PathLike, ReportContext, ReportInputs, load_context
from fwbench.present.report.document import opening, render

HEADING = re.compile(r"(#{1,6}) +(.*)")
CODE = re.compile(r"`([^`]+)`")
BOLD = re.compile(r"\*\*(.+?)\*\*")
RULE = re.compile(r"(-{3,}|\*{3,})")
ITEM = re.compile(r"[-*] +(.*)")
# A code span's text while the rest of its line is formatted (no Markdown holds this character).
HOLE = "\x00"

STYLE = """\
body { font-family: system-ui, sans-serif; line-height: 1.5; color: #1e293b;
  max-width: 56rem; margin: 1.5rem auto; padding: 0 1rem; }
h1 { font-size: 1.5em; margin: 0 0 0.4em; }
h2 { font-size: 1.2em; margin: 1.2em 0 0.4em; }
li { margin: 0.45em 0; }
code { font-family: ui-monospace, monospace; font-size: 0.9em; background: #f1f5f9;
  padding: 0 0.2em; border-radius: 3px; }
.source { color: #64748b; font-size: 0.9em; }
"""

SOURCE_NOTE = (
    "Every number above is copied from the table of `results/report.md` that its finding names; "
    "report.md is in this HTML report beside this page (1. Findings), the figures and "
    "`stats.csv` under the other categories."
)


def inline_html(text: str) -> str:
    """One line of Markdown as HTML: `code` spans and **bold**, everything else escaped."""
    spans: list[str] = []

    def hole(match: re.Match) -> str:
        spans.append(f"<code>{escape(match.group(1))}</code>")
        return f"{HOLE}{len(spans) - 1}{HOLE}"

    text = BOLD.sub(r"<strong>\1</strong>", escape(CODE.sub(hole, text)))
    return re.sub(f"{HOLE}(\\d+){HOLE}", lambda m: spans[int(m.group(1))], text)


def markdown_html(markdown: str) -> str:
    """HTML of the Markdown the report's opening writes: `#` headings, paragraphs, `-` lists
    (a line indented under an item continues it), `---` rules, `code` and **bold**."""
    blocks: list[str] = []
    lines: list[str] = []  # the open paragraph's lines
    items: list[str] = []  # the open list's items

    def close() -> None:
        if lines:
            blocks.append(f"<p>{inline_html(' '.join(lines))}</p>")
        if items:
            listed = "".join(f"<li>{inline_html(item)}</li>\n" for item in items)
            blocks.append(f"<ul>\n{listed}</ul>")
        lines.clear()
        items.clear()

    for line in markdown.splitlines():
        text = line.strip()
        heading, item = HEADING.fullmatch(text), ITEM.fullmatch(text)
        if items and text and line[:1].isspace() and not item:
            items[-1] += " " + text
        elif not text or heading or RULE.fullmatch(text):
            close()
            if heading:
                level = len(heading.group(1))
                blocks.append(f"<h{level}>{inline_html(heading.group(2))}</h{level}>")
            elif text:
                blocks.append("<hr>")
        elif item:
            if lines:
                close()
            items.append(item.group(1))
        else:
            if items:
                close()
            lines.append(text)
    close()
    return "\n".join(blocks)


def findings_page(context: ReportContext) -> str:
    """The findings page: report.md's opening sections as one HTML file."""
    body = markdown_html("\n".join(section for section in opening(context) if section))
    return (
        '<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>fwbench findings</title>\n<style>\n{STYLE}</style>\n</head>\n<body>\n"
        f'{body}\n<p class="source">{inline_html(SOURCE_NOTE)}</p>\n</body>\n</html>\n'
    )


def write_pages(
    inputs: ReportInputs, report_path: PathLike, findings_path: PathLike | None = None
) -> str:
    """report.md at `report_path` and, when `findings_path` is given, the findings page there,
    both from one context; each written atomically. Returns the report's Markdown."""
    context = load_context(inputs, report_path)
    text = render(context)
    write_text(text, report_path)
    if findings_path is not None:
        write_text(findings_page(context), findings_path)
    return text
