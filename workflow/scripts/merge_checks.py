"""Snakemake `merge_checks` job: the per-framework check CSVs into one of each."""

from fwbench.io.joblog import job_log
from fwbench.measure.checks import merge_csv

sm = snakemake  # noqa: F821 (injected by snakemake)
with job_log(sm.log[0]):
    merge_csv(list(sm.input.equivalence), sm.output.equivalence)
    merge_csv(list(sm.input.flops), sm.output.flops)
