"""Snakemake `bench` job: one cell. All logic lives in fwbench.bench."""

import contextlib

from fwbench.bench import CellRequest, run_cell

with (
    open(snakemake.log[0], "w") as log,  # noqa: F821 (snakemake is injected)
    contextlib.redirect_stdout(log),
    contextlib.redirect_stderr(log),
):
    # The lock file is where timing jobs meet, not a property of the cell: not in params, so
    # moving it reruns nothing.
    lock = snakemake.config["timing_lock"]  # noqa: F821
    run_cell(CellRequest(**snakemake.params.cell, lock=lock), snakemake.output[0])  # noqa: F821
