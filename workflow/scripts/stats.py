"""Snakemake `stats` job: bench.nc (+ the hardware JSON) into stats.nc, stats.csv and the tables.
Statistics: fwbench.analysis.stats; tables: fwbench.present.tables.

input: bench, hardware (optional: without it the roofline columns are NaN and say why)
output: nc, csv, and one path per table: latency, compile_speedup, efficiency, winners,
failed, flagged
params: stats (the config's stats section), seed
"""

import logging

from fwbench.analysis.roofline import read_hardware_limits
from fwbench.analysis.stats import StatsSettings, summarize, write_outputs
from fwbench.io.common import read_netcdf
from fwbench.io.joblog import job_log
from fwbench.present.tables import TABLES, write_tables

sm = snakemake  # noqa: F821 (injected by snakemake)
with job_log(sm.log[0]):
    settings = StatsSettings.from_mapping(sm.params.stats, seed=sm.params.get("seed", 0))
    limits = read_hardware_limits(sm.input.get("hardware"))
    for problem in limits.problems:
        logging.warning("roofline: %s", problem)
    summary = summarize(read_netcdf(sm.input.bench), limits, settings)
    write_outputs(summary, sm.output.nc, sm.output.csv)
    write_tables(summary, {name: sm.output[name] for name in TABLES})
    logging.info("statistics of %d cells; roofline: %s", summary.attrs["cells"], limits.describe())
