"""Snakemake `stats` job: bench.nc (+ the hardware JSON) into stats.nc, stats.csv and the tables.
All logic lives in fwbench.stats.

input: bench, hardware (optional: without it the roofline columns are NaN and say why)
output: nc, csv, and one path per table: latency, compile_speedup, efficiency, winners,
failed, flagged
params: stats (the config's stats section), seed
"""

import logging

import xarray as xr

from fwbench.roofline import read_hardware_limits
from fwbench.stats import TABLES, StatsSettings, summarize, write_outputs

sm = snakemake  # noqa: F821 (injected by snakemake)
logging.basicConfig(filename=sm.log[0], level=logging.INFO, force=True)
settings = StatsSettings.from_mapping(sm.params.stats, seed=sm.params.get("seed", 0))
limits = read_hardware_limits(sm.input.get("hardware"))
for problem in limits.problems:
    logging.warning("roofline: %s", problem)
with xr.open_dataset(sm.input.bench, engine="h5netcdf") as bench:
    summary = summarize(bench.load(), limits, settings)
write_outputs(summary, sm.output.nc, sm.output.csv, {name: sm.output[name] for name in TABLES})
logging.info("statistics of %d cells; roofline: %s", summary.attrs["cells"], limits.describe())
