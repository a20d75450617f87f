"""Snakemake `stats` job: bench.nc and each system's hardware JSON into stats.nc, stats.csv and
comparisons.csv (fwbench.analysis.stats, by_system); the tables are the `tables` rule's.

input: bench, hardware (one file per system, in params.systems' order), rounds (every
system's rounds files)
output: nc, csv, comparisons
params: stats (the config's stats section), seed, systems
"""

import logging

from fwbench.analysis.by_system import summarize_sweep
from fwbench.analysis.stats import StatsSettings, write_outputs
from fwbench.io.joblog import job_log

sm = snakemake  # noqa: F821 (injected by snakemake)
with job_log(sm.log[0]):
    settings = StatsSettings.from_mapping(sm.params.stats, seed=sm.params.get("seed", 0))
    systems = list(sm.params.systems)
    hardware = dict(zip(systems, sm.input.hardware, strict=True))
    summary, limits = summarize_sweep(sm.input.bench, hardware, sm.input.rounds, settings)
    write_outputs(summary, sm.output.nc, sm.output.csv, sm.output.comparisons)
    for system in systems:
        logging.info("%s: roofline %s", system, limits[system].describe())
    logging.info("statistics of %d systems", len(systems))
