"""Snakemake `hardware` job: characterize the system's node or its GPU (fwbench.hardware)."""

from fwbench.hardware.characterize import characterize
from fwbench.io.joblog import job_log

sm = snakemake  # noqa: F821 (injected by snakemake)
with job_log(sm.log[0]) as log:
    characterize(
        output=sm.output[0],
        settings=dict(sm.params.settings),
        frameworks=list(sm.params.frameworks),
        device=sm.params.system["device"],
        threads=sm.params.system["threads"],
        lock=sm.config["timing_lock"],  # not a param: moving the lock reruns nothing
        log=log,
        known_devices_path=sm.input.peaks,
        system=sm.wildcards.system,
    )
