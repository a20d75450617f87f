# Hardware characterization per system, on that system's node: measured peaks, the memory
# hierarchy's bandwidths, ridge points (a timing job).


rule hardware:
    input:
        peaks=RESOURCES / "peaks.yaml",
    output:
        HARDWARE_PATH,
    log:
        "results/logs/hardware/{system}.log",
    priority: AHEAD_OF_BENCH
    conda:
        HARDWARE_ENV
    threads: SYSTEM_THREADS
    resources:
        **SYSTEM_RESOURCES,
        timing_slot=1,
    params:
        settings=lookup(within=config, dpath="hardware"),
        frameworks=FRAMEWORKS,
        system=system_params,
    script:
        "../scripts/hardware.py"
