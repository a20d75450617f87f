"""The plan of a sweep: from the validated config, everything the workflow will run.

`make_plan(config, ...)` derives the systems, the framework versions that name their results,
the cells and their processes, every output path, the seeded order of the timing jobs, the
training runs, the compare baselines on disk and one typed request per bench job. The rules are
wiring over a Plan; tests reach every fact of it without Snakemake.
"""

from fwbench.plan.checks import check_config, refuse_moved_keys
from fwbench.plan.request import CellRequest
from fwbench.plan.sweep import Plan, make_plan

__all__ = ["CellRequest", "Plan", "check_config", "make_plan", "refuse_moved_keys"]
