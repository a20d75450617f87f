"""Snakemake `bench` job: one cell. All logic lives in fwbench.bench."""

import sys

from fwbench.bench import CellRequest, run_cell

with open(snakemake.log[0], "w") as log:  # noqa: F821 (snakemake is injected)
    sys.stdout = sys.stderr = log
    run_cell(CellRequest(**snakemake.params.cell), snakemake.output[0])  # noqa: F821
