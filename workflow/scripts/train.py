"""Rule `train`: one framework × mode × model × dataset → its train file.

Thread settings and the framework's environment are set before anything imports the
framework (fwbench.training imports it inside run()); the host-level timing lock is held for
the whole training. A failed run is still a written file with status 'failed'.
"""

import os

from fwbench.frameworks import pre_import_env
from fwbench.harness import timing_lock
from fwbench.threads import setup_threads

params = snakemake.params  # noqa: F821 - injected by Snakemake

thread_info = setup_threads(params.threads)
os.environ.update(pre_import_env(params.framework, params.device))

from fwbench import training  # noqa: E402 - after the environment above, by design

with open(snakemake.log[0], "w") as log:  # noqa: F821
    # fd-level redirect: TF and XLA log from C++ straight to file descriptor 2.
    os.dup2(log.fileno(), 1)
    os.dup2(log.fileno(), 2)
    with timing_lock(snakemake.config["timing_lock"]) as waited_s:  # noqa: F821
        result = training.run(
            params.framework,
            params.mode,
            params.model,
            params.dataset,
            params.settings,
            seed=params.seed,
            device=params.device,
            threads=thread_info,
        )
    result.attrs["lock_wait_s"] = waited_s
    training.write_run(result, snakemake.output[0])  # noqa: F821
    print(
        f"{params.framework}/{params.mode}/{params.model}/{params.dataset}: "
        f"status={result.attrs['status']} {result.attrs.get('error_message', '')}",
        flush=True,
    )
