"""Snakemake `merge_checks` job: the per-framework check CSVs into one of each."""

from fwbench.checks import merge_csv

merge_csv(list(snakemake.input.equivalence), snakemake.output.equivalence)  # noqa: F821
merge_csv(list(snakemake.input.flops), snakemake.output.flops)  # noqa: F821
