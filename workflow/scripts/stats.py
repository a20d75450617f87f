"""Snakemake `stats` job: bench.nc and each system's hardware JSON into stats.nc, stats.csv and
comparisons.csv (fwbench.analysis.stats, by_system); the tables are the `tables` rule's.

input: bench, hardware (one file per system, in params.systems' order), rounds (every
system's rounds files)
output: nc, csv, comparisons
params: stats (the config's stats section), seed, systems
"""

import logging

from fwbench.analysis.by_system import summarize_systems
from fwbench.analysis.roofline import read_hardware_limits
from fwbench.analysis.stats import StatsSettings, write_outputs
from fwbench.io.bench_file import read_bench
from fwbench.io.joblog import job_log
from fwbench.io.rounds_file import rounds_by_system

sm = snakemake  # noqa: F821 (injected by snakemake)
with job_log(sm.log[0]):
    settings = StatsSettings.from_mapping(sm.params.stats, seed=sm.params.get("seed", 0))
    systems = list(sm.params.systems)
    limits = {}
    for system, path in zip(systems, sm.input.hardware, strict=True):
        limits[system] = read_hardware_limits(path)
        for problem in limits[system].problems:
            logging.warning("roofline of %s: %s", system, problem)
    rounds = rounds_by_system(sm.input.rounds)
    summary = summarize_systems(read_bench(sm.input.bench), limits, settings, rounds)
    write_outputs(summary, sm.output.nc, sm.output.csv, sm.output.comparisons)
    for system in systems:
        logging.info("%s: roofline %s", system, limits[system].describe())
    logging.info("statistics of %d systems", len(systems))
