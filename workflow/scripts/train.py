"""Snakemake `train` job: one framework × mode × model × dataset → its train file
(fwbench.training.run).

Threads and the framework's pre-import environment are set before anything imports the
framework (numpy included: its BLAS reads the thread count when it loads; the adapter itself
is imported inside run()); the host-level timing lock is held for the whole training. A failed
run is still a written file with status 'failed'.
"""

import os

from fwbench.host import threads

sm = snakemake  # noqa: F821 (injected by snakemake)
params = sm.params
thread_info = threads.setup_threads(params.system["threads"])

from fwbench import frameworks  # noqa: E402 (after the thread environment)

os.environ.update(frameworks.pre_import_env(params.framework, params.system["device"]))

from fwbench import provenance  # noqa: E402
from fwbench.host.harness import timing_lock  # noqa: E402
from fwbench.io.joblog import job_log  # noqa: E402 (after the framework's environment)
from fwbench.io.train_file import write_run  # noqa: E402
from fwbench.training.run import run  # noqa: E402

with job_log(sm.log[0]):
    with timing_lock(sm.config["timing_lock"]) as waited_s:
        result = run(
            params.framework,
            params.mode,
            params.model,
            params.dataset,
            params.settings,
            seed=params.seed,
            device=params.system["device"],
            threads=thread_info,
        )
    result.attrs["lock_wait_s"] = waited_s
    result.attrs["system"] = sm.wildcards.system
    result.attrs |= provenance.node_identity(params.system["device"])
    write_run(result, sm.output[0])
    print(
        f"{params.framework}/{params.mode}/{params.model}/{params.dataset}: "
        f"status={result.attrs['status']} {result.attrs.get('error_message', '')}",
        flush=True,
    )
