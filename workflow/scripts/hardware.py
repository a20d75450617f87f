"""Snakemake `hardware` job: characterize this host or its GPU. All logic is in fwbench.hardware."""

from fwbench.hardware import KNOWN_DEVICES, characterize

params = snakemake.params  # noqa: F821 (snakemake is injected)
with open(snakemake.log[0], "w") as log:  # noqa: F821
    characterize(
        output=snakemake.output[0],  # noqa: F821
        settings=dict(params.settings),
        frameworks=list(params.frameworks),
        device=params.device,
        threads=params.threads,
        lock=snakemake.config["timing_lock"],  # noqa: F821 (not a param: moving it reruns nothing)
        log=log,
        known_devices_path=snakemake.input.get("peaks", KNOWN_DEVICES),  # noqa: F821
    )
