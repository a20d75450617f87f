"""Snakemake `aggregate_train` job: every train file into one dataset and a per-run CSV.
All logic lives in fwbench.training.summary."""

import logging

from fwbench.io.atomic import write_netcdf, write_text
from fwbench.io.joblog import job_log
from fwbench.training.summary import aggregate_runs, summary_frame

sm = snakemake  # noqa: F821 (injected by snakemake)
with job_log(sm.log[0]):
    stacked = aggregate_runs(sm.input.runs, list(sm.params.systems))
    write_netcdf(stacked, sm.output.nc)
    write_text(summary_frame(stacked).to_csv(index=False), sm.output.csv)
    logging.info("aggregated %d training runs: %s", len(sm.input.runs), dict(stacked.sizes))
