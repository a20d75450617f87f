# Hardware characterization: measured peaks, STREAM bandwidth, ridge point (a timing job).


rule hardware:
    input:
        peaks=RESOURCES / "peaks.yaml",
    output:
        "results/hardware/{host}-{device}.json",
    log:
        "results/logs/hardware/{host}-{device}.log",
    params:
        settings=lookup(within=config, dpath="hardware"),
        frameworks=FRAMEWORKS,
        device=DEVICE,
        threads=THREADS,
        lock=config["timing_lock"],
    threads: THREADS
    resources:
        timing_slot=1,
    conda:
        "../../envs/analysis.yaml"
    script:
        "../scripts/hardware.py"
