"""Snakemake `compare_framework` job. All logic lives in fwbench.compare."""

import contextlib

from fwbench.compare import CompareSettings, compare, draw_ratios, write_csv

with open(snakemake.log[0], "w") as log, contextlib.redirect_stderr(log):  # noqa: F821
    table = compare(
        snakemake.input.old,  # noqa: F821
        snakemake.input.new,  # noqa: F821
        CompareSettings(**snakemake.params.settings),  # noqa: F821
    )
    write_csv(table, snakemake.output.table)  # noqa: F821
    draw_ratios(table, snakemake.output.figure)  # noqa: F821
