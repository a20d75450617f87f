"""Snakemake `checks` job for one framework (fwbench.measure.checks).

Threads and the framework's pre-import environment are set before anything imports it
(numpy included: its BLAS reads the thread count when it loads).
"""

import os

from fwbench.host import threads

sm = snakemake  # noqa: F821 (injected by snakemake)
threads.setup_threads(sm.params.system["threads"])

from fwbench import frameworks  # noqa: E402 (after the thread environment)
from fwbench.io.checks_file import write_equivalence  # noqa: E402
from fwbench.io.joblog import job_log  # noqa: E402
from fwbench.measure import checks  # noqa: E402

os.environ.update(frameworks.pre_import_env(sm.params.framework, "cpu"))

with job_log(sm.log[0]):
    common = dict(
        framework=sm.params.framework,
        archs=list(sm.params.archs),
        dims=dict(sm.params.dims),
        seed=sm.params.seed,
        batch=sm.params.batch,
        modes=list(sm.params.modes),
    )
    artifacts = checks.artifacts_by_cell(sm.input.artifacts)
    equivalence = checks.equivalence_rows(
        **common,
        tolerance=sm.params.tolerance,
        artifacts=artifacts,
        precisions=dict(sm.params.precisions),
    )
    write_equivalence(equivalence, sm.output.equivalence)
    flops = checks.flops_rows(**common)
    checks.write_csv(flops, sm.output.flops, checks.FLOPS_COLUMNS)
    for row in equivalence:
        print(f"{row['arch']}/{row['mode']}/{row['precision']}: pass={row['pass']} {row['error']}")
