# Hardware characterization: measured peaks, STREAM bandwidth, ridge point (a timing job).


rule hardware:
    input:
        peaks=RESOURCES / "peaks.yaml",
    output:
        "results/hardware/{host}-{device}.json",
    log:
        "results/logs/hardware/{host}-{device}.log",
    priority: AHEAD_OF_BENCH
    conda:
        conda_env("hardware")
    threads: THREADS
    resources:
        timing_slot=1,
    params:
        settings=lookup(within=config, dpath="hardware"),
        frameworks=FRAMEWORKS,
        device=DEVICE,
        threads=THREADS,
    script:
        "../scripts/hardware.py"
