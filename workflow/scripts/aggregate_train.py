"""Snakemake `aggregate_train` job: every train file into one dataset and a per-run CSV."""

import logging

from fwbench.atomic import write_text
from fwbench.dataset import write_atomic
from fwbench.training import aggregate_runs, summary_frame

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, force=True)  # noqa: F821
stacked = aggregate_runs(snakemake.input.runs)  # noqa: F821
write_atomic(stacked, snakemake.output.nc)  # noqa: F821
write_text(summary_frame(stacked).to_csv(index=False), snakemake.output.csv)  # noqa: F821
logging.info("aggregated %d training runs: %s", len(snakemake.input.runs), dict(stacked.sizes))  # noqa: F821
