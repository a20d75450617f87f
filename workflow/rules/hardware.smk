# Hardware characterization per system, on that system's node: measured peaks, the memory
# hierarchy's bandwidths, ridge points (a timing job).


rule hardware:
    input:
        peaks=RESOURCES / "peaks.yaml",
    output:
        paths.HARDWARE,
    log:
        "results/logs/hardware/{system}.log",
    priority: PLAN.ahead_of_bench
    conda:
        HARDWARE_ENV
    threads: SYSTEM_THREADS
    resources:
        **SYSTEM_RESOURCES,
        timing_slot=1,
    params:
        settings=lookup(within=config, dpath="hardware"),
        frameworks=config["frameworks"],
        system=system_params,
    script:
        "../scripts/hardware.py"


# A dtype's GEMM peak in a job of its own (fwbench.hardware.peaks: int8), beside the hardware
# file whose node, clock and triad it takes: measuring it reruns no cell (a timing job).
rule hardware_peak:
    input:
        hardware=ancient(paths.HARDWARE),
    output:
        paths.HARDWARE_PEAK,
    log:
        "results/logs/hardware/{system}-{dtype}.log",
    conda:
        HARDWARE_ENV
    threads: SYSTEM_THREADS
    resources:
        **SYSTEM_RESOURCES,
        timing_slot=1,
    params:
        settings=lookup(within=config, dpath="hardware"),
        frameworks=config["frameworks"],
        runtimes=HARDWARE_RUNTIMES,
        system=system_params,
    script:
        "../scripts/hardware_peak.py"
