"""The offline HTML report (`snakemake --report`): its findings page (the opening of report.md
as HTML, from the same context and sections) and its landing text (workflow/report/workflow.rst,
rendered by Snakemake itself over a config)."""

from __future__ import annotations

import json
import re
import runpy
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import pytest
import xarray as xr
import yaml

from fwbench.io.stats_file import read_stats, write_stats
from fwbench.present.report import ReportInputs, load_context, render
from fwbench.present.report.html_page import findings_page, markdown_html

from conftest import REPO, SMOKE
from synthetic import copy_of, hardware_document

FINDINGS_CATEGORY = "1. Findings"


class _Text(HTMLParser):
    """The text a browser shows: tags, <style> and <title> left out, entities resolved."""

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self.hidden = 0

    def handle_starttag(self, tag, attrs):
        self.hidden += tag in ("style", "title")

    def handle_endtag(self, tag):
        self.hidden -= tag in ("style", "title")

    def handle_data(self, data):
        if not self.hidden:
            self.parts.append(data)


def shown(html: str) -> str:
    parser = _Text()
    parser.feed(html)
    return " ".join("".join(parser.parts).split())


def plain(markdown: str) -> str:
    """A Markdown line as the reader sees it: no ** or backticks, spaces collapsed."""
    return " ".join(markdown.replace("**", "").replace("`", "").split())


def findings_lines(report: str) -> list[str]:
    """Every bullet under a `## Findings` heading of report.md."""
    lines, inside = [], False
    for line in report.splitlines():
        if line.startswith("## "):
            inside = line.startswith("## Findings")
        elif inside and line.startswith("- "):
            lines.append(line[2:])
    return lines


@pytest.fixture(scope="module")
def results(synthetic_sweep, tmp_path_factory):
    return copy_of(synthetic_sweep, tmp_path_factory.mktemp("html_report"))


EQUIVALENCE = """arch,framework,mode,max_abs_err,max_rel_err,tolerance,pass,error
mlp,torch,eager,1.1e-07,2.4e-07,0.0001,True,
lstm,jax,jit,,,0.0001,False,XlaRuntimeError: boom
"""


@pytest.fixture(scope="module")
def pages(results) -> tuple[str, str]:
    """(report.md's Markdown, the findings page) from one context."""
    equivalence = results.root / "equivalence.csv"
    equivalence.write_text(EQUIVALENCE)
    inputs = ReportInputs(
        stats=results.stats,
        tables=results.tables,
        hardware=results.hardware,
        equivalence=equivalence,
    )
    context = load_context(inputs, results.root / "report.md")
    return render(context), findings_page(context)


# ---- the findings page ---------------------------------------------------------------------


def test_the_findings_page_shows_every_finding_of_report_md_word_for_word(pages):
    report, page = pages
    findings = findings_lines(report)
    assert len(findings) >= 4, report[:2000]
    text = shown(page)
    for finding in findings:
        assert plain(finding) in text


def test_the_findings_page_opens_with_report_mds_header_and_leaves_no_markdown(pages):
    report, page = pages
    header = report.split("\n\n")[1]  # the paragraph under the title: device, cells, versions
    text = shown(page)
    assert text.startswith("fwbench report " + plain(header))
    assert "**" not in text and "`" not in text and "## " not in text
    assert "<strong>Test CPU 9000</strong>" in page and "<code>testhost</code>" in page


def test_the_findings_page_carries_report_mds_cross_checks_verdict(pages):
    report, page = pages
    verdict = next(line for line in report.splitlines() if line.startswith("**Cross-checks:**"))
    assert "failing: jax/jit/lstm" in verdict
    assert plain(verdict) in shown(page)
    assert "<strong>Cross-checks:</strong>" in page
    # the findings first, the verdict after them
    assert page.index("<h2>Findings</h2>") < page.index("<strong>Cross-checks:</strong>")


def test_each_system_has_its_findings_on_the_page(results, tmp_path):
    stats = read_stats(results.stats)
    two = xr.concat([stats] * 2, dim=pd.Index(["a", "b"], name="system"))
    write_stats(two, tmp_path / "stats.nc")
    hardware = []
    for system in ("a", "b"):
        hardware.append(tmp_path / f"{system}.json")
        hardware[-1].write_text(json.dumps(hardware_document() | {"system": system}))
    inputs = ReportInputs(stats=tmp_path / "stats.nc", tables=[], hardware=hardware)
    page = findings_page(load_context(inputs, tmp_path / "report.md"))
    for system in ("a", "b"):
        assert f"<h2>Findings: system <code>{system}</code></h2>" in page
    assert shown(page).count("Comparisons at batch 32") == 2


def test_markdown_html_renders_headings_lists_paragraphs_code_and_bold():
    markdown = (
        "# Title\n\nA **bold `x<y`** line\nand its next line & more.\n\n"
        "## Part\n\n- one `a*b` item\n  continued\n- **two**\n\n---\nafter\n"
    )
    assert markdown_html(markdown) == (
        "<h1>Title</h1>\n"
        "<p>A <strong>bold <code>x&lt;y</code></strong> line and its next line &amp; more.</p>\n"
        "<h2>Part</h2>\n"
        "<ul>\n<li>one <code>a*b</code> item continued</li>\n<li><strong>two</strong></li>\n</ul>\n"
        "<hr>\n<p>after</p>"
    )


def test_the_rule_script_writes_report_md_and_the_findings_page_from_one_run(results, tmp_path):
    from snakemake.iocontainers import Namedlist

    fake = type("Snakemake", (), {})()
    fake.input = Namedlist(
        fromdict={
            "stats": str(results.stats),
            "tables": sorted(str(p) for p in results.tables.glob("*.md")),
            "hardware": str(results.hardware),
        }
    )
    out = tmp_path / "results"
    fake.output = Namedlist(
        fromdict={"report": str(out / "report.md"), "findings": str(out / "findings.html")}
    )
    fake.params = Namedlist(fromdict={})
    fake.log = Namedlist([str(tmp_path / "report.log")])
    runpy.run_path(str(REPO / "workflow/scripts/report.py"), init_globals={"snakemake": fake})
    findings = findings_lines((out / "report.md").read_text())
    page = shown((out / "findings.html").read_text())
    assert findings and all(plain(finding) in page for finding in findings)
    assert sorted(p.name for p in out.iterdir()) == ["findings.html", "report.md"]


def test_the_findings_category_is_listed_before_every_other_category():
    # The HTML report lists categories by name (localeCompare); a digit sorts before letters.
    rules = "\n".join(path.read_text() for path in (REPO / "workflow/rules").glob("*.smk"))
    categories = set(re.findall(r'category="([^"{]+)"', rules))
    assert f'FINDINGS_CATEGORY = "{FINDINGS_CATEGORY}"' in rules
    assert categories and min(categories | {FINDINGS_CATEGORY}, key=str.casefold) == (
        FINDINGS_CATEGORY
    )


# ---- the landing text, rendered by Snakemake -----------------------------------------------

# A workflow whose global description is ours and whose one result is a findings page, as
# the report rule writes it; `snakemake --report` renders the landing text as it does for
# the real workflow (its Jinja variables, its links to results, docutils).
SNAKEFILE = """\
from snakemake.utils import validate

validate(config, schema={schema!r})


report: {landing!r}


rule findings:
    output:
        report("results/findings.html", category={category!r}),
    shell:
        "cp {page} {{output}}"
"""

SYSTEMS = {
    "systems": {"local": None, "cluster": {"device": "cuda", "threads": 4, "slurm": {}}},
    "modes": {"torch": ["eager", "compiled_fast", "aoti"]},
}


def snakemake(workdir: Path, *args: str) -> None:
    command = [sys.executable, "-m", "snakemake", "--cores", "1", *args]
    done = subprocess.run(command, cwd=workdir, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.fixture(scope="module")
def landings(pages, tmp_path_factory) -> dict[str, str]:
    """The landing text's HTML in the report Snakemake writes for the smoke config, the default
    config, and the smoke config with two systems and torch variants."""
    workdir = tmp_path_factory.mktemp("landing")
    (workdir / "page.html").write_text(pages[1])
    (workdir / "Snakefile").write_text(
        SNAKEFILE.format(
            schema=str(REPO / "workflow/schemas/config.schema.yaml"),
            landing=str(REPO / "workflow/report/workflow.rst"),
            category=FINDINGS_CATEGORY,
            page="page.html",
        )
    )
    (workdir / "override.yaml").write_text(yaml.safe_dump(SYSTEMS))
    configs = {
        "smoke": [SMOKE],
        "default": [str(REPO / "config/config.yaml")],
        "systems": [SMOKE, str(workdir / "override.yaml")],
    }
    snakemake(workdir, "--configfile", SMOKE)
    found = {}
    for name, files in configs.items():
        snakemake(workdir, "--report", f"{name}.html", "--configfile", *files)
        html = (workdir / f"{name}.html").read_text()
        found[name] = json.loads(re.search(r"var workflow_desc = (.*);\n", html).group(1))
    return found


@pytest.mark.e2e  # snakemake --report renders the landing text
def test_the_landing_text_prints_no_python_list_or_dict(landings):
    for name, text in landings.items():
        shown_text = shown(text)
        assert not re.search(r"[\[{]\s*['\"]|[\[{][\]}]|None", shown_text), (name, shown_text)


@pytest.mark.e2e  # snakemake --report renders the landing text
def test_the_landing_text_names_every_configured_mode_of_every_framework(landings):
    smoke = yaml.safe_load(Path(SMOKE).read_text())
    with_variants = smoke["modes"] | SYSTEMS["modes"]
    for name, modes in (("smoke", smoke["modes"]), ("systems", with_variants)):
        text = shown(landings[name])
        for framework in smoke["frameworks"]:
            assert f"{framework}: {', '.join(modes[framework])}" in text, (name, text)
    assert "torch: eager, compiled_fast, aoti" in shown(landings["systems"])


@pytest.mark.e2e  # snakemake --report renders the landing text
def test_the_landing_text_describes_each_system_and_the_configured_lists(landings):
    text = shown(landings["systems"])
    assert "system local: device cpu, threads 1" in text
    assert "system cluster: device cuda, threads 4, on SLURM" in text
    assert "architectures: mlp, lstm" in text and "batch sizes: 1, 8" in text
    assert "batch sizes: 1, 8, 32, 128" in shown(landings["default"])
    assert "threads auto" in shown(landings["default"])


@pytest.mark.e2e  # snakemake --report renders the landing text
def test_the_landing_text_links_the_findings_page_instead_of_sending_the_reader_away(landings):
    text = landings["smoke"]
    link = '<a class="reference external" href="javascript:app.showResultInfo('
    assert link + "'results/findings.html')\">findings.html</a>" in text
    assert "1. Findings" in shown(text) and "is not in this report" not in text
    assert "full story with every number is in results/report.md" not in shown(text)


@pytest.mark.e2e  # snakemake --report renders the landing text
def test_the_landing_text_fits_a_window(landings):
    # Snakemake centres the landing text in a box one window high: a taller text loses its
    # top, out of reach of the scroll bar. 1,400 characters fill about 700 px of its column.
    for name, text in landings.items():
        assert len(shown(text)) < 1400, (name, len(shown(text)))
