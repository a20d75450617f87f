"""Snakemake `tables` job: one system's Markdown tables from stats.nc (fwbench.present.tables).

input: stats (stats.nc)
output: one path per table of fwbench.present.catalog.TABLES, by its name
wildcards: system
"""

from fwbench.io.joblog import job_log
from fwbench.io.stats_file import StatsView
from fwbench.present.tables import write_tables

sm = snakemake  # noqa: F821 (injected by snakemake)
with job_log(sm.log[0]):
    write_tables(StatsView.read(sm.input.stats, sm.wildcards.system), dict(sm.output.items()))
