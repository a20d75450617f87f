"""Snakemake `report` job: results/report.md and the HTML report's findings page. All logic
lives in fwbench.present.report.

input: stats (stats.nc), tables (the tables directory or the table files), hardware (one per
system; each file names its own), equivalence, flops, figures (list: every system's),
systems_figures, and optional train_stats and compare (lists that may be empty); the report
reads no aggregate: stats.nc carries every number it prints
output: the report (first output); optional findings (the findings page, HTML)
params: settings (the config's bench section: warmup, repeats), systems (name → description)
"""

import logging

from fwbench.io.joblog import job_log
from fwbench.present.report import ReportInputs
from fwbench.present.report.html_page import write_pages

sm = snakemake  # noqa: F821 (injected by snakemake)


def listed(name):
    value = sm.input.get(name, [])
    return [value] if isinstance(value, str) else list(value)


with job_log(sm.log[0]):
    tables = sm.input.tables
    write_pages(
        ReportInputs(
            stats=sm.input.stats,
            tables=tables if isinstance(tables, str) else list(tables),
            hardware=listed("hardware"),
            equivalence=sm.input.get("equivalence"),
            flops=sm.input.get("flops"),
            figures=listed("figures"),
            train_stats=listed("train_stats"),
            compare=listed("compare"),
            settings=dict(sm.params.get("settings", {})),
            systems_figures=listed("systems_figures"),
            systems=dict(sm.params.get("systems", {})),
            artifacts=listed("artifacts"),
        ),
        sm.output[0],
        sm.output.get("findings"),
    )
    logging.info("wrote %s", ", ".join(sm.output))
