"""Snakemake `bench` job: one cell (fwbench.measure.bench)."""

from fwbench.io.joblog import job_log
from fwbench.measure.bench import CellRequest, run_cell

sm = snakemake  # noqa: F821 (injected by snakemake)
with job_log(sm.log[0]):
    # The lock file is where timing jobs meet, not a property of the cell: not in params, so
    # moving it reruns nothing.
    run_cell(CellRequest(**sm.params.cell, lock=sm.config["timing_lock"]), sm.output[0])
