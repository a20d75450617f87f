"""Snakemake `hardware_peak` job: one dtype's GEMM peak beside the system's hardware file
(fwbench.hardware.peaks)."""

from fwbench.hardware.peaks import measure_peak
from fwbench.io.joblog import job_log

sm = snakemake  # noqa: F821 (injected by snakemake)
with job_log(sm.log[0]) as log:
    measure_peak(
        output=sm.output[0],
        hardware=sm.input.hardware,
        dtype=sm.wildcards.dtype,
        settings=dict(sm.params.settings),
        frameworks=list(sm.params.frameworks),
        runtimes=tuple(sm.params.runtimes),
        threads=sm.params.system["threads"],
        lock=sm.config["timing_lock"],  # not a param: moving the lock reruns nothing
        log=log,
    )
