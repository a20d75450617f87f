"""Snakemake `compare_framework` job. All logic lives in fwbench.analysis.compare."""

from fwbench.analysis.compare import compare, draw_ratios, write_csv
from fwbench.analysis.stats import StatsSettings
from fwbench.io.joblog import job_log

sm = snakemake  # noqa: F821 (injected by snakemake)
with job_log(sm.log[0]):
    levels = StatsSettings.from_mapping(sm.params.stats, seed=sm.params.seed).levels()
    table = compare(sm.input.old, sm.input.new, levels)
    write_csv(table, sm.output.table)
    draw_ratios(table, sm.output.figure)
