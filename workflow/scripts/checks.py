"""Snakemake `checks` job for one framework. All logic lives in fwbench.checks.

Threads and the framework's pre-import environment are set before anything imports it
(numpy included: its BLAS reads the thread count when it loads).
"""

import contextlib
import os

from fwbench import threads

params = snakemake.params  # noqa: F821 (snakemake is injected)
output = snakemake.output  # noqa: F821
threads.setup_threads(params.threads)

from fwbench import checks, frameworks  # noqa: E402 (after the thread environment)

os.environ.update(frameworks.pre_import_env(params.framework, "cpu"))

with (
    open(snakemake.log[0], "w") as log,  # noqa: F821
    contextlib.redirect_stdout(log),
    contextlib.redirect_stderr(log),
):
    common = dict(
        framework=params.framework,
        archs=list(params.archs),
        dims=dict(params.dims),
        seed=params.seed,
        batch=params.batch,
        modes=list(params.modes),
    )
    equivalence = checks.equivalence_rows(**common, tolerance=params.tolerance)
    checks.write_csv(equivalence, output.equivalence, checks.EQUIVALENCE_COLUMNS)
    flops = checks.flops_rows(**common)
    checks.write_csv(flops, output.flops, checks.FLOPS_COLUMNS)
    for row in equivalence:
        print(f"{row['arch']}/{row['mode']}: pass={row['pass']} {row['error']}")
