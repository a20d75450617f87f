"""Snakemake `aggregate_bench` job: the given cells into results/aggregate/bench.nc.
All logic lives in fwbench.analysis.aggregate."""

import logging

from fwbench.analysis.aggregate import write_aggregate
from fwbench.io.joblog import job_log

sm = snakemake  # noqa: F821 (injected by snakemake)
with job_log(sm.log[0]):
    cells = list(sm.input.cells)
    ds = write_aggregate(cells, sm.output[0], list(sm.params.systems))
    logging.info("aggregated %d cells: %s", len(cells), dict(ds.sizes))
    logging.info("framework versions: %s", ds.attrs["framework_versions"])
