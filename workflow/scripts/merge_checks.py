"""Snakemake `merge_checks` job: the per-system, per-framework check CSVs into one of each,
with a `system` column (params.systems: each input's system, in input order)."""

from fwbench.io.checks_file import merge_equivalence
from fwbench.io.joblog import job_log
from fwbench.measure.checks import merge_csv

sm = snakemake  # noqa: F821 (injected by snakemake)
with job_log(sm.log[0]):
    systems = list(sm.params.systems)
    merge_equivalence(list(sm.input.equivalence), sm.output.equivalence, systems)
    merge_csv(list(sm.input.flops), sm.output.flops, systems)
