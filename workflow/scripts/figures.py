"""Snakemake `figures` job: every figure named in the outputs. All logic lives in fwbench.present.

input: stats (stats.nc), hardware (JSON; optional), train_stats (optional: the training runs),
equivalence (optional: the merged equivalence checks, for the precision figure)
wildcards: system (optional: whose cells and runs to draw; the systems figure draws all)
output: <name> (PNG, registered in the report) and <name>_svg for each figure drawn, where name
is one of fwbench.present.catalog.FIGURES
params: dpi (≥ 150)
"""

import logging

from fwbench.io.joblog import job_log
from fwbench.present.figures import draw_requested

sm = snakemake  # noqa: F821 (injected by snakemake)
with job_log(sm.log[0]):
    drawn = draw_requested(
        outputs=dict(sm.output.items()),
        stats=sm.input.get("stats"),
        hardware=sm.input.get("hardware"),
        train_stats=sm.input.get("train_stats"),
        equivalence=sm.input.get("equivalence"),
        dpi=sm.params.get("dpi", 150),
        system=getattr(sm, "wildcards", {}).get("system"),
    )
    logging.info("drew %s", ", ".join(drawn))
