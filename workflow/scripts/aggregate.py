"""Snakemake `aggregate_bench` job: the given cells into results/aggregate/bench.nc.
All logic lives in fwbench.aggregate."""

import logging

from fwbench.aggregate import write_aggregate

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, force=True)  # noqa: F821
cells = list(snakemake.input.cells)  # noqa: F821
ds = write_aggregate(cells, snakemake.output[0])  # noqa: F821
logging.info("aggregated %d cells: %s", len(cells), dict(ds.sizes))
logging.info("framework versions: %s", ds.attrs["framework_versions"])
